"""Build oracle: pymatgen on the same inputs as the core's builders (strain, doping, substitution,
random substitution).

stdin {"mode": "hosts", "testdata": dir} -> {name: Structure.as_dict()}
stdin {"mode": "strain", "cases": [{host, options, values, ours: [matrix, frac]...}]}
      -> per case the largest lattice and fractional-coordinate difference to pymatgen
stdin {"mode": "groups", "cases": [{host, configurations: [[[site, el], ...], ...], ours: [dict]}]}
      -> per case pymatgen's StructureMatcher groups of every configuration (sizes) and whether
         our representatives are one per group
stdin {"mode": "distinct", "cases": [{ours: [dict]}]} -> how many StructureMatcher groups ours form
"""

import json
import os
import sys

import numpy as np
from pymatgen.analysis.elasticity.strain import Deformation, Strain
from pymatgen.analysis.structure_matcher import StructureMatcher
from pymatgen.core import Lattice, Structure

args = json.load(sys.stdin)
mode = args["mode"]


def hosts(testdata):
    rutile = Structure.from_spacegroup(
        "P4_2/mnm", Lattice.tetragonal(4.594, 2.959), ["Ti", "O"], [[0, 0, 0], [0.3048, 0.3048, 0]]
    )
    lfp = Structure.from_file(os.path.join(testdata, "structures", "POSCAR_LiFePO4"))
    pt = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.924), ["Pt"], [[0, 0, 0]])
    mg = Structure.from_spacegroup("P6_3/mmc", Lattice.hexagonal(3.209, 5.211), ["Mg"], [[1 / 3, 2 / 3, 0.25]])
    tric = Structure(Lattice.from_parameters(4.1, 5.3, 6.2, 81, 97, 112), ["Si", "O", "O"],
                     [[0, 0, 0], [0.2, 0.3, 0.1], [0.7, 0.6, 0.4]])
    return {
        "rutile": rutile,
        "rutile_2x1x1": rutile * (2, 1, 1),
        "LiFePO4": lfp,
        "Pt_2x1x1": pt * (2, 1, 1),
        "Pt_2x2x1": pt * (2, 2, 1),
        "Mg_hcp": mg,
        "triclinic": tric,
        "Cod_2100513": Structure.from_file(os.path.join(testdata, "structures", "Cod_2100513.cif")),
    }


AXIS = {"a": 0, "b": 1, "c": 2, "x": 0, "y": 1, "z": 2}
VOIGT_SHEAR = {"yz": 3, "xz": 4, "xy": 5}


def pymatgen_strain(host, o, m):
    s = host.copy()
    if o["type"] == "shear":
        voigt = [0.0] * 6
        voigt[VOIGT_SHEAR[o["plane"]]] = m
        return Deformation(np.eye(3) + Strain.from_voigt(voigt)).apply_to_structure(s)
    if o["type"] == "uniaxial":
        v = [0.0, 0.0, 0.0]
        v[AXIS[o["axis"]]] = m
    elif o["type"] == "biaxial":
        v = [m, m, 0.0]
    else:
        v = [m, m, m]
    if o["frame"] == "lattice":
        s.apply_strain(v)
        return s
    return Deformation(np.diag(1 + np.array(v))).apply_to_structure(s)


if mode == "hosts":
    json.dump({k: v.as_dict() for k, v in hosts(args["testdata"]).items()}, sys.stdout)
elif mode == "strain":
    out = []
    for c in args["cases"]:
        host = Structure.from_dict(c["host"])
        worst_lat = worst_frac = 0.0
        for m, ours in zip(c["values"], c["ours"]):
            ref = pymatgen_strain(host, c["options"], m)
            got = Structure.from_dict(ours)
            worst_lat = max(worst_lat, float(np.abs(ref.lattice.matrix - got.lattice.matrix).max()))
            worst_lat = max(worst_lat, float(np.abs(np.array(ref.lattice.abc) - np.array(got.lattice.abc)).max()))
            worst_frac = max(worst_frac, float(np.abs(ref.frac_coords - got.frac_coords).max()))
        out.append({"lattice": worst_lat, "frac": worst_frac})
    json.dump(out, sys.stdout)
elif mode == "groups":
    matcher = StructureMatcher()
    out = []
    for c in args["cases"]:
        host = Structure.from_dict(c["host"])
        structures = []
        for conf in c["configurations"]:
            s = host.copy()
            for i, el in conf:
                s.replace(i, el)
            structures.append(s)
        groups = matcher.group_structures(structures)
        ours = [Structure.from_dict(d) for d in c["ours"]]
        # each of ours matches exactly one group, and every group is matched once
        hits = [[k for k, g in enumerate(groups) if matcher.fit(o, g[0])] for o in ours]
        one_each = all(len(h) == 1 for h in hits) and sorted(h[0] for h in hits) == list(range(len(groups)))
        out.append({"sizes": sorted(len(g) for g in groups), "one_per_group": one_each})
    json.dump(out, sys.stdout)
elif mode == "distinct":
    matcher = StructureMatcher()
    json.dump([len(matcher.group_structures([Structure.from_dict(d) for d in c["ours"]])) for c in args["cases"]],
              sys.stdout)
