"""pymatgen round trip for the benchmark: from_dict + the same operation + as_dict, timed.
stdin: [{"key", "op", "body", "repeat"}]; stdout: {key: median seconds}."""
import json
import statistics
import sys
import time
import warnings

from pymatgen.core import Structure

warnings.simplefilter("ignore")


def run(op, body):
    s = Structure.from_dict(body["structure"])
    if op == "add-atom":
        s.append(body["element"], body["position"], coords_are_cartesian=True)
    elif op == "delete-atoms":
        s.remove_sites(body["indices"])
    elif op == "move-atoms":
        s.translate_sites(body["indices"], body["displacement"], frac_coords=False, to_unit_cell=False)
    elif op == "supercell":
        s = s * body["scaling"]
    return s.as_dict()


out = {}
for case in json.load(sys.stdin):
    times = []
    for _ in range(case["repeat"]):
        t = time.perf_counter()
        run(case["op"], case["body"])
        times.append(time.perf_counter() - t)
    out[case["key"]] = statistics.median(times)
json.dump(out, sys.stdout)
