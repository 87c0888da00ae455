"""Oracle of the `/api/build` worker routes: pymatgen-analysis-defects and ASE run directly.

stdin {"mode": "hosts"} -> {name: Structure.as_dict()}
stdin {"mode": "defects", "cases": [{host, kind, element, ours: [dict]}]}
      -> per case the generator's multiplicities and whether ours match its defect structures one to one
stdin {"mode": "cluster", "cases": [params]} -> per case ASE's n_atoms, lattice and sorted positions
"""

import json
import sys

import numpy as np
from ase.cluster import Decahedron, Icosahedron, Octahedron, wulff_construction
from pymatgen.analysis.defects.generators import SubstitutionGenerator, VacancyGenerator, VoronoiInterstitialGenerator
from pymatgen.analysis.structure_matcher import StructureMatcher
from pymatgen.core import Lattice, Structure
from pymatgen.io.ase import AseAtomsAdaptor

args = json.load(sys.stdin)
mode = args["mode"]


def hosts():
    rutile = Structure.from_spacegroup(
        "P4_2/mnm", Lattice.tetragonal(4.594, 2.959), ["Ti", "O"], [[0, 0, 0], [0.3048, 0.3048, 0]]
    )
    return {
        "rutile": rutile,
        "LiFePO4": Structure.from_file(args["lfp"]),
        "Fe_bcc": Structure.from_spacegroup("Im-3m", Lattice.cubic(2.866), ["Fe"], [[0, 0, 0]]),
        "Pt_fcc": Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.924), ["Pt"], [[0, 0, 0]]),
        "graphite": Structure.from_spacegroup(
            "P6_3/mmc", Lattice.hexagonal(2.464, 6.711), ["C", "C"], [[0, 0, 0.25], [1 / 3, 2 / 3, 0.25]]
        ),
    }


def plain(s):
    s = s.copy()
    s.remove_oxidation_states()
    return s


if mode == "hosts":
    json.dump({k: v.as_dict() for k, v in hosts().items()}, sys.stdout)
elif mode == "defects":
    matcher = StructureMatcher()
    out = []
    for c in args["cases"]:
        host = Structure.from_dict(c["host"])
        if c["kind"] == "vacancy":
            found = list(VacancyGenerator().generate(host))
        elif c["kind"] == "substitution":
            mapping = {el.symbol: c["element"] for el in host.composition.elements if el.symbol != c["element"]}
            found = list(SubstitutionGenerator().generate(host, mapping))
        else:
            found = list(VoronoiInterstitialGenerator().generate(host, insert_species=[c["element"]]))
        refs = [plain(d.defect_structure) for d in found]
        ours = [Structure.from_dict(d) for d in c["ours"]]
        hits = [[k for k, r in enumerate(refs) if matcher.fit(o, r)] for o in ours]
        one_each = len(ours) == len(refs) and all(len(h) >= 1 for h in hits) and \
            all(any(matcher.fit(o, r) for o in ours) for r in refs)
        out.append({"multiplicities": [int(d.multiplicity) for d in found], "one_each": one_each})
    json.dump(out, sys.stdout)
elif mode == "cluster":
    out = []
    for p in args["cases"]:
        el, a = p["element"], p.get("lattice_constant") or None
        if p["shape"] == "wulff":
            atoms = wulff_construction(el, [tuple(x) for x in p["surfaces"]], p["energies"], p["size"], p["structure"],
                                       rounding=p["rounding"], latticeconstant=a)
        elif p["shape"] == "octahedron":
            atoms = Octahedron(el, p["length"], cutoff=p["cutoff"], latticeconstant=a)
        elif p["shape"] == "icosahedron":
            atoms = Icosahedron(el, p["shells"], latticeconstant=a)
        else:
            atoms = Decahedron(el, p["p"], p["q"], p["r"], latticeconstant=a)
        atoms.center(vacuum=p["vacuum"])
        s = AseAtomsAdaptor.get_structure(atoms)
        out.append({"n_atoms": len(s), "matrix": s.lattice.matrix.tolist(),
                    "cart": sorted(np.round(s.cart_coords, 6).tolist())})
    json.dump(out, sys.stdout)
