"""Timing side of bench/slab.ts: pymatgen's SlabGenerator(...).get_slabs() on the bench cases.

stdin: {"testdata": dir, "repeats": int, "cases": [{name, bulk, miller, thickness, vacuum, primitive,
symmetrize}]} -> {"bulks": {name: dict}, "results": [{name, seconds and cpu_seconds (best of repeats),
n_terminations, n_sites}]}. Same thickness/vacuum semantics as slab_oracle.py.
"""

import json
import os
import sys
import time

from pymatgen.core.surface import SlabGenerator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bulk_set import bulk_structures  # noqa: E402

args = json.load(sys.stdin)
bulks = bulk_structures(args["testdata"])
results = []
for case in args["cases"]:
    bulk = bulks[case["bulk"]]
    miller = tuple(case["miller"])
    thickness = float(case["thickness"])
    in_planes = thickness.is_integer()
    vacuum = float(case["vacuum"])
    vac = vacuum / bulk.lattice.d_hkl(miller) if in_planes else vacuum
    best = float("inf")
    best_cpu = float("inf")
    slabs = []
    for _ in range(args.get("repeats", 1)):
        t0 = time.perf_counter()
        c0 = time.process_time()
        gen = SlabGenerator(
            bulk.copy(),
            miller,
            thickness,
            vac,
            center_slab=True,
            in_unit_planes=in_planes,
            primitive=case["primitive"],
            max_normal_search=1,
        )
        slabs = gen.get_slabs(symmetrize=case["symmetrize"])
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    results.append(
        {"name": case["name"], "seconds": best, "cpu_seconds": best_cpu, "n_terminations": len(slabs), "n_sites": len(slabs[0]) if slabs else 0}
    )
json.dump({"bulks": {k: v.as_dict() for k, v in bulks.items()}, "results": results}, sys.stdout)
