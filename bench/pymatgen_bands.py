"""pymatgen in-process doing what one /api/bands request does (bench/analysis.ts): parse the
vasprun (`BSVasprun(path, parse_projected_eigen=True, parse_potcar_file=False)`: eigenvalues and
projected eigenvalues, no DOS, no POTCAR lookup — the worker's options for a request with
`projections`), build the band structure along the line-mode KPOINTS path with the smart E_F
(`get_band_structure(kpoints, efermi="smart", line_mode=True)`), the band gap, metal test and band
edges, every band minus E_F and one element/orbital projection (Si p) summed, the path distances
and the final structure's dictionary, everything turned into lists.

One JSON line in, one out, for as long as stdin is open (a long-lived process, as the service's
worker is): {"vasprun": path, "kpoints": path} -> {"seconds": s}. The import is not timed."""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")

from pymatgen.io.vasp.outputs import BSVasprun  # noqa: E402


def run(vasprun: str, kpoints: str) -> dict:
    vr = BSVasprun(vasprun, parse_projected_eigen=True, parse_potcar_file=False)
    bs = vr.get_band_structure(kpoints, efermi="smart", line_mode=True)
    out = {"gap": bs.get_band_gap(), "metal": bs.is_metal(), "vbm": bs.get_vbm()["energy"],
           "cbm": bs.get_cbm()["energy"], "distances": list(bs.distance), "bands": {}, "projection": {}}
    for spin in bs.bands:
        out["bands"][str(spin)] = (bs.bands[spin] - bs.efermi).tolist()
        out["projection"][str(spin)] = bs.projections[spin][:, :, 1:4, :].sum(axis=(2, 3)).tolist()
    out["structure"] = vr.final_structure.as_dict()
    return out


for line in sys.stdin:
    if line.strip():
        case = json.loads(line)
        t = time.perf_counter()
        run(case["vasprun"], case["kpoints"])
        print(json.dumps({"seconds": time.perf_counter() - t}), flush=True)
