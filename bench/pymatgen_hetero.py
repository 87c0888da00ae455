"""pymatgen in-process doing the work of the heterostructure routes (bench/heterostructure.ts).

Reads {"inputs": {...}, "runs": N} on stdin; prints {case: [seconds per run]} (imports not timed).
Each case does what a pymatgen user writes for the same answer: the ZSL matches with their areas
and von Mises strains (sorted), CoherentInterfaceBuilder with its terminations, one interface."""

import json
import sys
import time

from pymatgen.analysis.elasticity.strain import Deformation
from pymatgen.analysis.interfaces.coherent_interfaces import CoherentInterfaceBuilder
from pymatgen.analysis.interfaces.zsl import ZSLGenerator
from pymatgen.core import Structure

args = json.load(sys.stdin)
S = {k: Structure.from_dict(v) for k, v in args["inputs"].items() if "sites" in v and "@class" in v}


def zsl(film, sub, area, limit=200):
    out = []
    for m in ZSLGenerator(0.09, area, 0.03, 0.01)(film.lattice.matrix[:2], sub.lattice.matrix[:2]):
        if len(out) == limit:
            break
        gl = Deformation(m.match_transformation).green_lagrange_strain
        out.append((m.match_area, gl.von_mises_strain, gl))
    return sorted(out, key=lambda x: (x[0], x[1]))


def bulk_search():
    cib = CoherentInterfaceBuilder(S["cu"], S["graphite"], film_miller=(0, 0, 1), substrate_miller=(1, 1, 1),
                                   zslgen=ZSLGenerator(0.09, 100, 0.03, 0.01))
    return [(m.match_area, Deformation(m.match_transformation).green_lagrange_strain.von_mises_strain)
            for m in cib.zsl_matches], cib.terminations


def bulk_build():
    cib = CoherentInterfaceBuilder(S["cu"], S["graphite"], film_miller=(0, 0, 1), substrate_miller=(1, 1, 1),
                                   zslgen=ZSLGenerator(0.09, 100, 0.03, 0.01))
    return next(cib.get_interfaces(cib.terminations[0], gap=2.0, vacuum_over_film=20.0, film_thickness=3,
                                   substrate_thickness=3)).as_dict()


CASES = {
    "search slab graphene/Cu(111)": lambda: zsl(S["graphene"], S["cu111"], 100),
    "search slab MoS2/WS2": lambda: zsl(S["mos2"], S["ws2"], 30),
    "search bulk graphite/Cu(111)": bulk_search,
    "build bulk graphite/Cu(111)": bulk_build,
}
out = {}
for name, fn in CASES.items():
    fn()  # warm (the service's worker is warm too)
    times = []
    for _ in range(args["runs"]):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    out[name] = times
print(json.dumps(out))
