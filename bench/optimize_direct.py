"""In-process reference timings for bench/optimize.ts (same inputs, same machine, same run).
stdin: {"cluster": pymatgen Molecule dict, "steps": n, "cell64": pymatgen Structure dict, "repeat": k}
stdout: {"emt_step_s", "emt_steps", "chgnet_energy_s", "chgnet_load_s"}"""
import json
import sys
import time
import warnings

warnings.simplefilter("ignore")
from ase import Atoms  # noqa: E402
from ase.calculators.emt import EMT  # noqa: E402
from ase.optimize import BFGS  # noqa: E402

req = json.load(sys.stdin)
out_stream = sys.stdout
# Libraries print banners (CHGNet does); only the JSON result may go to stdout.
sys.stdout = sys.stderr
d = req["cluster"]
atoms = Atoms([s["species"][0]["element"] for s in d["sites"]], positions=[s["xyz"] for s in d["sites"]])
atoms.calc = EMT()
stamps = []
opt = BFGS(atoms, logfile=None)
opt.attach(lambda: stamps.append(time.perf_counter()), interval=1)
opt.run(fmax=1e-9, steps=req["steps"])
out = {"emt_step_s": (stamps[-1] - stamps[0]) / (len(stamps) - 1), "emt_steps": len(stamps)}

try:
    from chgnet.model import CHGNet
    from pymatgen.core import Structure

    t = time.perf_counter()
    model = CHGNet.load(verbose=False)
    out["chgnet_load_s"] = time.perf_counter() - t
    s = Structure.from_dict(req["cell64"])
    model.predict_structure(s)
    times = []
    for _ in range(req["repeat"]):
        t = time.perf_counter()
        model.predict_structure(s)
        times.append(time.perf_counter() - t)
    times.sort()
    out["chgnet_energy_s"] = times[len(times) // 2]
except Exception as e:  # reported, not hidden
    out["chgnet_error"] = str(e)
json.dump(out, out_stream)
