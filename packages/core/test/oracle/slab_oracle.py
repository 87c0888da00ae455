"""Slab oracle: pymatgen's SlabGenerator.get_slabs() on the bulk set.

Mode "generate": stdin {"mode": "generate", "testdata": dir, "cases": [{id, bulk, miller, thickness,
vacuum, primitive, symmetrize, center_slab, max_normal_search}]} -> {"bulks": {name: dict},
"results": [{id, n_terminations, slabs: [{n_sites, formula, surface_area, thickness, structure}],
seconds}]}.
Mode "compare": stdin {"mode": "compare", "cases": [{id, ours: [dict], theirs: [dict]}]} ->
[{id, fits}] where fits[i][j] says StructureMatcher (the tolerances get_slabs uses to tell
terminations apart) fits our termination i onto pymatgen's termination j.

Thickness semantics of the service: no fractional part -> number of hkl planes (in_unit_planes),
otherwise Angstrom; vacuum always Angstrom. In plane units pymatgen reads the vacuum in planes
too, so it is converted to planes of d_hkl here.
"""

import json
import os
import sys
import time

import numpy as np
from pymatgen.analysis.structure_matcher import StructureMatcher
from pymatgen.core import Structure
from pymatgen.core.surface import SlabGenerator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bulk_set import bulk_structures  # noqa: E402


def thickness_of(slab):
    normal = np.cross(slab.lattice.matrix[0], slab.lattice.matrix[1])
    normal /= np.linalg.norm(normal)
    h = slab.cart_coords @ normal
    return float(h.max() - h.min())


def generate(args):
    bulks = bulk_structures(args["testdata"])
    results = []
    for case in args["cases"]:
        bulk = bulks[case["bulk"]]
        thickness = float(case["thickness"])
        in_planes = thickness.is_integer()
        vacuum = float(case.get("vacuum", 15.0))
        miller = tuple(case["miller"])
        t0 = time.perf_counter()
        if in_planes:
            d = bulk.lattice.d_hkl(miller)
            vac = vacuum / d
        else:
            vac = vacuum
        gen = SlabGenerator(
            bulk.copy(),
            miller,
            thickness,
            vac,
            center_slab=case.get("center_slab", True),
            in_unit_planes=in_planes,
            primitive=case.get("primitive", True),
            max_normal_search=case.get("max_normal_search", 1),
        )
        slabs = gen.get_slabs(symmetrize=case.get("symmetrize", False))
        seconds = time.perf_counter() - t0
        results.append(
            {
                "id": case["id"],
                "n_terminations": len(slabs),
                "seconds": seconds,
                "slabs": [
                    {
                        "n_sites": len(s),
                        "formula": s.composition.formula,
                        "surface_area": float(s.surface_area),
                        "thickness": thickness_of(s),
                        "structure": Structure.from_sites(s).as_dict(),
                    }
                    for s in slabs
                ],
            }
        )
    return {"bulks": {k: v.as_dict() for k, v in bulks.items()}, "results": results}


def compare(args):
    """For each case, the matrix of StructureMatcher fits ours[i] ~ theirs[j]."""
    matcher = StructureMatcher(ltol=0.1, stol=0.1, primitive_cell=False, scale=False)
    out = []
    for case in args["cases"]:
        ours = [Structure.from_dict(d) for d in case["ours"]]
        theirs = [Structure.from_dict(d) for d in case["theirs"]]
        out.append(
            {
                "id": case["id"],
                "fits": [
                    [len(o) == len(t) and bool(matcher.fit(o, t)) for t in theirs] for o in ours
                ],
            }
        )
    return out


args = json.load(sys.stdin)
json.dump(generate(args) if args["mode"] == "generate" else compare(args), sys.stdout)
