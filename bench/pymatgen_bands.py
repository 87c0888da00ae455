"""pymatgen in-process doing what one /api/bands request does: parse the vasprun (with projected
eigenvalues), build the band structure along the KPOINTS path with the smart E_F, the band gap
and band edges, one element/orbital projection summed, everything turned into lists.
stdin: [{"key", "vasprun", "kpoints", "repeat"}]; stdout: {key: median seconds}. The import of
pymatgen is not timed (the service's worker imports it once at start)."""
import json
import statistics
import sys
import time
import warnings

from pymatgen.electronic_structure.core import Spin
from pymatgen.io.vasp.outputs import BSVasprun

warnings.simplefilter("ignore")


def run(vasprun: str, kpoints: str) -> dict:
    vr = BSVasprun(vasprun, parse_projected_eigen=True, parse_potcar_file=False)
    bs = vr.get_band_structure(kpoints, efermi="smart", line_mode=True)
    out = {"gap": bs.get_band_gap(), "vbm": bs.get_vbm()["energy"], "cbm": bs.get_cbm()["energy"],
           "distances": list(bs.distance), "bands": {}, "projection": {}}
    for spin in bs.bands:
        out["bands"][str(spin)] = (bs.bands[spin] - bs.efermi).tolist()
        out["projection"][str(spin)] = bs.projections[spin][:, :, 1:4, :].sum(axis=(2, 3)).tolist()
    out["structure"] = vr.final_structure.as_dict()
    return out


result = {}
for case in json.load(sys.stdin):
    times = []
    for _ in range(case["repeat"]):
        t = time.perf_counter()
        run(case["vasprun"], case["kpoints"])
        times.append(time.perf_counter() - t)
    result[case["key"]] = statistics.median(times)
print(json.dumps(result))
