"""pymatgen in-process doing what /api/adsorption/sites and /place do (bench/adsorption.ts).

One JSON line in, one out, for as long as stdin is open (a long-lived process, as the service's
worker is): {"slabs": {name: Structure dict}, "runs": n} -> for each slab, the median milliseconds
of `AdsorbateSiteFinder(slab).find_adsorption_sites(distance=1.5)` (from the dictionary, as a
request starts) and of `add_adsorbate(CO, first site)`. The import is not timed."""

import json
import statistics
import sys
import time
import warnings

warnings.simplefilter("ignore")

from pymatgen.analysis.adsorption import AdsorbateSiteFinder  # noqa: E402
from pymatgen.core import Molecule, Structure  # noqa: E402

CO = Molecule(["C", "O"], [[0, 0, 0], [0, 0, 1.128]])


def measure(req):
    out = {}
    for name, d in req["slabs"].items():
        sites_ms, place_ms = [], []
        for _ in range(req["runs"]):
            t = time.perf_counter()
            slab = Structure.from_dict(d)
            found = AdsorbateSiteFinder(slab).find_adsorption_sites(distance=1.5)
            sites_ms.append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            AdsorbateSiteFinder(Structure.from_dict(d)).add_adsorbate(CO, found["all"][0])
            place_ms.append((time.perf_counter() - t) * 1e3)
        out[name] = {"sites_ms": statistics.median(sites_ms), "place_ms": statistics.median(place_ms),
                     "n_sites": len(found["all"])}
    return out


for line in sys.stdin:
    if line.strip():
        print(json.dumps(measure(json.loads(line))), flush=True)
