"""Symmetry-distinct sites oracle: pymatgen's SpacegroupAnalyzer (symprec 0.01) ->
get_symmetrized_structure() on the shared test files, the bulk set, rutile and LiFePO4
supercells and a disordered alloy.

stdin: {"testdata": dir}
stdout: [{"name", "structure", "equivalent_indices", "wyckoff_symbols"}]
"""

import glob
import json
import os
import sys

from pymatgen.core import Lattice, Structure
from pymatgen.symmetry.analyzer import SpacegroupAnalyzer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bulk_set import bulk_structures  # noqa: E402

args = json.load(sys.stdin)
structures = {}
for path in sorted(glob.glob(os.path.join(args["testdata"], "structures", "*"))):
    name = os.path.basename(path)
    if os.path.isdir(path) or name.endswith((".xyz", ".gz", ".pdb")):
        continue
    structures[name] = Structure.from_file(path)
structures.update(bulk_structures(args["testdata"]))
structures["TiO2_rutile_2x1x2"] = structures["TiO2_rutile"] * (2, 1, 2)
structures["LiFePO4_1x2x1"] = structures["LiFePO4_olivine"] * (1, 2, 1)
structures["CuAu_partly_ordered"] = Structure(
    Lattice.cubic(3.8),
    ["Cu", {"Cu": 0.5, "Au": 0.5}, {"Cu": 0.5, "Au": 0.5}, "Au"],
    [[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]],
)

out = []
for name, st in structures.items():
    sym = SpacegroupAnalyzer(st, symprec=0.01).get_symmetrized_structure()
    out.append(
        {
            "name": name,
            "structure": st.as_dict(),
            "equivalent_indices": [sorted(g) for g in sym.equivalent_indices],
            "wyckoff_symbols": sym.wyckoff_symbols,
        }
    )
json.dump(out, sys.stdout)
