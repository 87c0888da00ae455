"""Reference for bench/workflow.ts: N EMT single points of 4 Cu atoms computed in one Python
process by the worker's own runner (what a queue worker does per job, without the queue)."""

import sys
import time

from atomstudio_worker import runner


def cu4(a: float) -> dict:
    sites = [[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]]
    return {"@class": "Structure", "lattice": {"matrix": [[a, 0, 0], [0, a, 0], [0, 0, a]]},
            "sites": [{"species": [{"element": "Cu", "occu": 1}], "abc": abc} for abc in sites]}


n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
runner.energy({"structure": cu4(3.6), "calculator": "emt", "frozen_atoms": []})  # imports and first call not timed
t = time.perf_counter()
for i in range(n):
    runner.energy({"structure": cu4(3.5 + (i % 50) * 0.004), "calculator": "emt", "frozen_atoms": []})
print(f"seconds={time.perf_counter() - t}")
