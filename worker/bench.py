"""Worker overhead benchmark: the protocol path vs the same work done in-process.

    python worker/bench.py [--atoms 500] [--steps 30] [--repeats 5] [--skip-chgnet]

Measures
  1. EMT + BFGS on a ~500-atom Cu cluster: seconds per optimizer step through the worker
     (step events with full structures on stdout, parsed by this process) vs the same ASE loop here;
  2. CHGNet single point on a 64-atom cell: warm round-trip latency through the worker vs a direct
     CHGNetCalculator call (model already loaded in both);
The direct side runs in a fresh child interpreter (see run_direct), so both sides start alike.
  3. cold start: spawn -> `hello` reply, spawn -> first EMT energy, spawn -> first CHGNet energy.
Prints medians and the ratios worker/direct, in wall time and in CPU time (the CPU time of the
worker process from /proc, and this process's own): on a shared, busy machine wall times are
mostly scheduling noise, CPU times much less so. The load average is printed with the figures, and
both sides run the same number of repeats back to back. Thread counts follow the environment (e.g.
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1), which the worker subprocess inherits.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

print = __import__("functools").partial(print, flush=True)  # progress shows up even when piped

CMD = [sys.executable, "-m", "atomstudio_worker"]


def proc_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of another process (Linux /proc), summed over its threads."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Client:
    def __init__(self, env=None):
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL,
                                     env={**os.environ, "ATOMSTUDIO_WORKER_LOG_LEVEL": "WARNING", **(env or {})})
        self.n = 0

    def send(self, method, params=None):
        self.n += 1
        rid = self.n
        self.proc.stdin.write(json.dumps({"id": rid, "method": method, "params": params or {}}).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def collect(self, rid):
        """(events with their arrival times, final reply) -- every line is parsed, as a client must."""
        events = []
        while True:
            raw = self.proc.stdout.readline()
            if not raw:
                raise RuntimeError("worker exited")
            msg = json.loads(raw)
            if msg.get("id") != rid:
                continue
            if "event" in msg:
                events.append((time.perf_counter(), msg))
            else:
                return events, msg

    def call(self, method, params=None):
        return self.collect(self.send(method, params))[1]

    def close(self):
        try:
            self.call("shutdown")
        except Exception:
            pass
        self.proc.wait(timeout=30)


def to_dict(atoms):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
    from atomstudio_worker.structures import StructureMeta, to_dict as worker_to_dict

    n = len(atoms)
    syms = atoms.get_chemical_symbols()
    meta = StructureMeta(
        is_molecule=not atoms.pbc.any(),
        species=[[{"element": s, "occu": 1}] for s in syms],
        labels=list(syms),
        site_properties=[{} for _ in range(n)],
        pbc=tuple(bool(p) for p in atoms.pbc),
    )
    return worker_to_dict(atoms, meta)


def cluster(n_target):
    from ase.cluster import Octahedron

    # truncated octahedra: pick the size closest to the target
    best = None
    for length in range(4, 16):
        for cutoff in range(0, length // 2):
            a = Octahedron("Cu", length, cutoff=cutoff)
            if best is None or abs(len(a) - n_target) < abs(len(best) - n_target):
                best = a
    best.rattle(0.05, seed=11)
    return best


def run_direct(kind, n_atoms, steps, repeats):
    """The in-process side, in a fresh interpreter like the worker's: measuring it inside this
    process (which by then has parsed megabytes of JSON and, for CHGNet, run big EMT steps) made
    the direct side up to 1.4x slower in CPU time than the same call in a fresh process."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--direct", kind, "--atoms", str(n_atoms),
                          "--steps", str(steps), "--repeats", str(repeats)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def direct_emt(n_atoms, steps, repeats):
    from ase.calculators.emt import EMT
    from ase.optimize import BFGS

    atoms0 = cluster(n_atoms)
    results = []
    for _ in range(repeats):
        atoms = atoms0.copy()
        atoms.calc = EMT()
        c0 = time.process_time()
        atoms.get_forces()
        t_init = time.perf_counter()
        opt = BFGS(atoms, logfile=None)
        opt.run(fmax=1e-9, steps=steps)
        t1 = time.perf_counter()
        results.append({"wall": (t1 - t_init) / steps, "cpu": (time.process_time() - c0) / steps,
                        "energy": atoms.get_potential_energy()})
    return results


def chgnet_cell():
    from ase.build import bulk

    atoms = bulk("Cu", "fcc", a=3.62, cubic=True) * (2, 2, 4)
    atoms.rattle(0.03, seed=4)
    return atoms


def direct_chgnet(repeats):
    from chgnet.model import CHGNet
    from chgnet.model.dynamics import CHGNetCalculator

    atoms = chgnet_cell()
    model = CHGNet.load(verbose=False)
    CHGNetCalculator(model=model, use_device="cpu").calculate(atoms.copy())  # warm, as the worker is
    results = []
    for _ in range(repeats):
        a = atoms.copy()
        a.calc = CHGNetCalculator(model=model, use_device="cpu")
        c0 = time.process_time()
        t0 = time.perf_counter()
        e = a.get_potential_energy()
        a.get_forces()
        a.get_stress()
        results.append({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "energy": float(e)})
    return results


def bench_emt(n_atoms, steps, repeats):
    atoms0 = cluster(n_atoms)
    d = to_dict(atoms0)
    worker = Client()
    worker.call("hello")
    worker_step, worker_total, direct_step = [], [], []
    worker_cpu, direct_cpu = [], []
    params = {"structure": d, "calculator": "emt", "fmax": 1e-9, "max_steps": steps}
    for _ in range(repeats):
        t0 = time.perf_counter()
        c0 = proc_cpu_s(worker.proc.pid)
        events, reply = worker.collect(worker.send("optimize", params))
        t1 = time.perf_counter()
        c1 = proc_cpu_s(worker.proc.pid)
        if c0 is not None and c1 is not None:
            worker_cpu.append((c1 - c0) / steps)  # whole request incl. the initial point
        assert reply["ok"] and reply["result"]["steps"] == steps, reply
        # from the initial-point event to the last step event: `steps` optimizer steps
        worker_step.append((events[-1][0] - events[0][0]) / steps)
        worker_total.append(t1 - t0)

    worker.close()
    direct = run_direct("emt", n_atoms, steps, repeats)
    direct_step = [r["wall"] for r in direct]
    direct_cpu = [r["cpu"] for r in direct]
    # the same numbers, or the comparison is meaningless
    assert all(abs(r["energy"] - reply["result"]["energy"]) < 1e-6 for r in direct)
    line_bytes = len(json.dumps(events[-1][1]))
    return {
        "atoms": len(atoms0),
        "steps": steps,
        "worker_s_per_step": statistics.median(worker_step),
        "direct_s_per_step": statistics.median(direct_step),
        "worker_request_s": statistics.median(worker_total),
        "worker_cpu_s_per_step": statistics.median(worker_cpu) if worker_cpu else None,
        "direct_cpu_s_per_step": statistics.median(direct_cpu),
        "step_event_bytes": line_bytes,
    }


def bench_serialization(n_atoms, repeats=20):
    """What the protocol adds per step: structure dict + JSON line (this side parses it too)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
    from atomstudio_worker.server import dumps

    atoms = cluster(n_atoms)
    forces = np.zeros((len(atoms), 3))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        d = to_dict(atoms)
        for s, f in zip(d["sites"], forces.tolist()):
            s["properties"]["forces"] = f
        line = dumps({"id": 1, "event": "step", "data": {"structure": d}})
        json.loads(line)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_chgnet(repeats):
    import torch

    d = to_dict(chgnet_cell())
    worker = Client()
    t0 = time.perf_counter()
    first = worker.call("energy", {"structure": d, "calculator": "chgnet"})
    first_s = time.perf_counter() - t0
    assert first["ok"], first
    w, w_cpu = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c0 = proc_cpu_s(worker.proc.pid)
        r = worker.call("energy", {"structure": d, "calculator": "chgnet"})
        w.append(time.perf_counter() - t0)
        c1 = proc_cpu_s(worker.proc.pid)
        if c0 is not None and c1 is not None:
            w_cpu.append(c1 - c0)
    worker.close()
    direct = run_direct("chgnet", 0, 0, repeats)
    assert all(abs(x["energy"] - r["result"]["energy"]) < 1e-3 for x in direct)
    return {"atoms": len(d["sites"]), "worker_first_call_s": first_s, "worker_warm_s": statistics.median(w),
            "direct_warm_s": statistics.median(x["wall"] for x in direct), "torch_threads": torch.get_num_threads(),
            "worker_cpu_s": statistics.median(w_cpu) if w_cpu else None,
            "direct_cpu_s": statistics.median(x["cpu"] for x in direct)}


def bench_cold(repeats, with_chgnet):
    from ase.build import bulk

    d = to_dict(bulk("Cu", "fcc", a=3.6, cubic=True))
    hello, emt, chg = [], [], []
    for _ in range(repeats):
        c = Client()
        c.call("hello")
        hello.append(time.perf_counter() - c.t_spawn)
        assert c.call("energy", {"structure": d, "calculator": "emt"})["ok"]
        emt.append(time.perf_counter() - c.t_spawn)
        c.close()
    if with_chgnet:
        for _ in range(max(1, repeats // 2)):
            c = Client()
            assert c.call("energy", {"structure": d, "calculator": "chgnet"})["ok"]
            chg.append(time.perf_counter() - c.t_spawn)
            c.close()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - t0
    return {"python_bare_s": bare, "hello_s": statistics.median(hello), "first_emt_energy_s": statistics.median(emt),
            "first_chgnet_energy_s": statistics.median(chg) if chg else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--atoms", type=int, default=500)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-chgnet", action="store_true")
    ap.add_argument("--direct", choices=["emt", "chgnet"], help=argparse.SUPPRESS)  # child mode
    args = ap.parse_args()
    if args.direct == "emt":
        __builtins__.print(json.dumps(direct_emt(args.atoms, args.steps, args.repeats)))
        return
    if args.direct == "chgnet":
        __builtins__.print(json.dumps(direct_chgnet(args.repeats)))
        return
    import importlib.util

    with_chgnet = not args.skip_chgnet and importlib.util.find_spec("chgnet") is not None
    threads = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS") if os.environ.get(k)}
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}, thread settings: {threads or 'default'}")

    emt = bench_emt(args.atoms, args.steps, args.repeats)
    ser = bench_serialization(emt["atoms"])
    print(f"\nEMT + BFGS, {emt['atoms']} atoms, {emt['steps']} steps, median of {args.repeats}:")
    print(f"  worker  {emt['worker_s_per_step'] * 1e3:8.2f} ms/step   (request total {emt['worker_request_s']:.2f} s)")
    print(f"  direct  {emt['direct_s_per_step'] * 1e3:8.2f} ms/step")
    print(f"  ratio worker/direct: {emt['worker_s_per_step'] / emt['direct_s_per_step']:.3f}  (wall)")
    if emt["worker_cpu_s_per_step"] is not None:
        print(f"  CPU time per step: worker {emt['worker_cpu_s_per_step'] * 1e3:.2f} ms, direct "
              f"{emt['direct_cpu_s_per_step'] * 1e3:.2f} ms, ratio "
              f"{emt['worker_cpu_s_per_step'] / emt['direct_cpu_s_per_step']:.3f}  (robust on a busy machine)")
    print(f"  step event: {emt['step_event_bytes'] / 1024:.0f} KiB; structure dict + JSON encode + decode "
          f"{ser * 1e3:.2f} ms")

    if with_chgnet:
        ch = bench_chgnet(args.repeats)
        print(f"\nCHGNet single point, {ch['atoms']} atoms (energy, forces, stress), torch threads "
              f"{ch['torch_threads']}, median of {args.repeats}:")
        print(f"  worker warm  {ch['worker_warm_s'] * 1e3:8.1f} ms   (first call incl. model load "
              f"{ch['worker_first_call_s']:.2f} s)")
        print(f"  direct warm  {ch['direct_warm_s'] * 1e3:8.1f} ms")
        print(f"  ratio worker/direct: {ch['worker_warm_s'] / ch['direct_warm_s']:.3f}  (wall)")
        if ch["worker_cpu_s"] is not None:
            print(f"  CPU time: worker {ch['worker_cpu_s'] * 1e3:.1f} ms, direct {ch['direct_cpu_s'] * 1e3:.1f} ms, "
                  f"ratio {ch['worker_cpu_s'] / ch['direct_cpu_s']:.3f}")

    cold = bench_cold(args.repeats, with_chgnet)
    print("\nCold start (spawn to reply), median:")
    print(f"  bare python -c pass      {cold['python_bare_s'] * 1e3:8.0f} ms")
    print(f"  hello                    {cold['hello_s'] * 1e3:8.0f} ms")
    print(f"  first EMT energy         {cold['first_emt_energy_s'] * 1e3:8.0f} ms")
    if cold["first_chgnet_energy_s"] is not None:
        print(f"  first CHGNet energy      {cold['first_chgnet_energy_s'] * 1e3:8.0f} ms")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
