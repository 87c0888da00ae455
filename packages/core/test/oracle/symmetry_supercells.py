"""Supercells (plain, perturbed, with one substitution) of common bulks and what pymatgen's
SpacegroupAnalyzer says of them. stdout: [{"name", "structure", "number", "symbol"}]."""
import json
import sys
import warnings

import numpy as np
from pymatgen.core import Lattice, Structure
from pymatgen.symmetry.analyzer import SpacegroupAnalyzer

warnings.simplefilter("ignore")
poscar = json.load(sys.stdin)
bulks = {
    "Cu fcc": Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.61), ["Cu"], [[0, 0, 0]]),
    "NaCl": Structure.from_spacegroup("Fm-3m", Lattice.cubic(5.64), ["Na", "Cl"], [[0, 0, 0], [0.5, 0.5, 0.5]]),
    "TiO2 rutile": Structure.from_spacegroup("P4_2/mnm", Lattice.tetragonal(4.594, 2.959), ["Ti", "O"], [[0, 0, 0], [0.3048, 0.3048, 0]]),
    "ZnO wurtzite": Structure.from_spacegroup("P6_3mc", Lattice.hexagonal(3.25, 5.2), ["Zn", "O"], [[1 / 3, 2 / 3, 0], [1 / 3, 2 / 3, 0.382]]),
    "LiFePO4": Structure.from_file(poscar),
}
rng = np.random.default_rng(7)
out = []
for name, bulk in bulks.items():
    for scaling in ([2, 2, 2], [3, 1, 2], [4, 4, 4] if len(bulk) <= 8 else [2, 1, 1]):
        s = bulk * scaling
        variants = {"": s}
        p = s.copy()
        p.perturb(0.002)
        variants[" perturbed"] = p
        d = s.copy()
        d.replace(int(rng.integers(len(d))), "Mg")
        variants[" Mg defect"] = d
        for label, v in variants.items():
            sga = SpacegroupAnalyzer(v, symprec=0.01)
            out.append({
                "name": f"{name} {'x'.join(map(str, scaling))}{label}",
                "structure": v.as_dict(),
                "number": sga.get_space_group_number(),
                "symbol": sga.get_space_group_symbol(),
                "n": len(v),
            })
json.dump(out, sys.stdout)
