"""Symmetry oracle: SpacegroupAnalyzer (symprec 0.01, angle tolerance 5) on the shared test files,
the bulk set and randomly perturbed copies (displacements far below symprec).

stdin: {"testdata": dir, "seed": int, "n_perturbed": int, "amplitude": float}
stdout: [{"name", "structure", "symbol", "number", "crystal_system", "point_group",
"conventional" and "primitive": {n_sites, volume, formula} of the standard structures}]
"""

import glob
import json
import os
import sys

import numpy as np
from pymatgen.core import Lattice, Structure
from pymatgen.io.ase import AseAtomsAdaptor
from pymatgen.symmetry.analyzer import SpacegroupAnalyzer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bulk_set import bulk_structures  # noqa: E402

args = json.load(sys.stdin)
testdata = args["testdata"]
rng = np.random.default_rng(args.get("seed", 0))

structures = {}
for path in sorted(glob.glob(os.path.join(testdata, "structures", "*"))):
    name = os.path.basename(path)
    if os.path.isdir(path) or name.endswith((".xyz", ".gz")):
        continue  # molecules and calculator outputs have no lattice
    if name.endswith(".pdb"):
        import ase.io

        atoms = ase.io.read(path)
        if not atoms.pbc.any():
            continue
        atoms.pbc = True
        structures[name] = AseAtomsAdaptor.get_structure(atoms)
    else:
        structures[name] = Structure.from_file(path)
structures.update(bulk_structures(testdata))
# Disordered: pymatgen gives each distinct species-and-occupancy its own site type.
structures["CuAu_disordered"] = Structure.from_spacegroup(
    "Fm-3m", Lattice.cubic(3.8), [{"Cu": 0.5, "Au": 0.5}], [[0, 0, 0]]
)
structures["CuAu_partly_ordered"] = Structure(
    Lattice.cubic(3.8),
    ["Cu", {"Cu": 0.5, "Au": 0.5}, {"Cu": 0.5, "Au": 0.5}, "Au"],
    [[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]],
)

cases = []


def add(name, st):
    sga = SpacegroupAnalyzer(st, symprec=0.01, angle_tolerance=5)
    conv = sga.get_conventional_standard_structure()
    prim = sga.get_primitive_standard_structure()
    cases.append(
        {
            "conventional": {"n_sites": len(conv), "volume": conv.volume, "formula": conv.composition.formula},
            "primitive": {"n_sites": len(prim), "volume": prim.volume, "formula": prim.composition.formula},
            "name": name,
            "structure": st.as_dict(),
            "symbol": sga.get_space_group_symbol(),
            "number": sga.get_space_group_number(),
            "crystal_system": sga.get_crystal_system(),
            "point_group": sga.get_point_group_symbol(),
        }
    )


for name, st in structures.items():
    add(name, st)
    for k in range(args.get("n_perturbed", 0)):
        p = st.copy()
        # Random displacements of at most `amplitude` Angstrom per coordinate: well inside symprec.
        disp = rng.uniform(-1, 1, size=(len(p), 3)) * args.get("amplitude", 0.001)
        for i in range(len(p)):
            p.translate_sites([i], disp[i], frac_coords=False, to_unit_cell=False)
        add(f"{name}~perturbed{k}", p)

json.dump(cases, sys.stdout)
