"""pymatgen in-process doing the work of the heterostructure routes (bench/heterostructure.ts).

A long-lived process, as the service's worker is (bench/reference.ts): one JSON line in, one out.
{"inputs": {...}} first (structure dictionaries; answers {}), then {"case": name} -> {"seconds": t}
for one run of that case (imports not timed). Each case starts from the same dictionaries as the
request (Structure.from_dict timed, as the worker's is) and does what a pymatgen user writes for the
same answer: the ZSL matches with their areas and von Mises strains (sorted), CoherentInterfaceBuilder
with its terminations, one interface."""

import json
import sys
import time

from pymatgen.analysis.elasticity.strain import Deformation
from pymatgen.analysis.interfaces.coherent_interfaces import CoherentInterfaceBuilder
from pymatgen.analysis.interfaces.zsl import ZSLGenerator
from pymatgen.core import Structure

INPUTS: dict = {}


class _Structures:
    """`S["cu"]`: the input's Structure, read from its dictionary on each access (timed)."""

    def __getitem__(self, key):
        return Structure.from_dict(INPUTS[key])


S = _Structures()


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
for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    if "inputs" in req:
        INPUTS.update(req["inputs"])
        print("{}", flush=True)
        continue
    t = time.perf_counter()
    CASES[req["case"]]()
    print(json.dumps({"seconds": time.perf_counter() - t}), flush=True)
