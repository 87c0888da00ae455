"""The JSON-lines protocol, exercised through a real worker subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import WORKER_CMD, cu_cluster, module_available, to_pmg

STEP_FIELDS = {"step", "energy", "fmax", "structure", "converged"}


def big_cluster():
    """A Cu cluster with cheap steps (so cancel is answered fast even on a busy machine)."""
    from ase.cluster import Octahedron

    atoms = Octahedron("Cu", 5, cutoff=1)
    atoms.rattle(0.1, seed=7)
    return atoms


def long_run(**extra):
    # an fmax no optimizer reaches: the run goes on until it is cancelled or killed
    params = {"structure": to_pmg(big_cluster()), "calculator": "emt", "fmax": 1e-30, "max_steps": 10**9}
    params.update(extra)
    return params


def test_hello(worker):
    reply = worker.call("hello")
    assert reply["ok"] is True
    res = reply["result"]
    assert res["pid"] == worker.proc.pid and res["protocol"] == 1
    assert res["version"] and res["ase"] and res["python"]


def test_calculators_listing(worker):
    res = worker.call("calculators")["result"]
    ids = [c["id"] for c in res["calculators"]]
    assert ids == ["emt", "gfn2", "gfn1", "gfn0", "gfnff", "mace", "chgnet", "m3gnet", "uff"]
    for c in res["calculators"]:
        assert set(c) >= {"id", "name", "kind", "available", "status_message", "supports_pbc", "elements"}
        assert isinstance(c["available"], bool)
        if c["available"]:
            assert c["status_message"] is None
        else:
            assert isinstance(c["status_message"], str) and c["status_message"]
    emt = res["calculators"][0]
    assert emt["available"] and "Cu" in emt["elements"] and "Fe" not in emt["elements"]
    uff = next(c for c in res["calculators"] if c["id"] == "uff")
    assert uff["available"] is True and uff["runs_in"] == "browser" and uff["supports_pbc"] is False
    assert {c["runs_in"] for c in res["calculators"] if c["id"] != "uff"} == {"server"}
    opts = {o["id"]: o for o in res["optimizers"]}
    assert set(opts) == {"bfgs", "tr_min", "tr_ts", "irc"}
    assert opts["bfgs"]["available"] is True
    for o in ("tr_min", "tr_ts", "irc"):
        assert opts[o]["available"] is module_available("sella")


def test_step_events_order_and_fields(worker):
    from pymatgen.core import Molecule

    rid = worker.send("optimize", {"structure": to_pmg(cu_cluster()), "calculator": "emt", "fmax": 0.05,
                                   "return_trajectory": True})
    events, reply = worker.collect(rid)
    assert events, "no step events"
    for i, ev in enumerate(events):
        assert ev["id"] == rid and ev["event"] == "step"
        assert set(ev["data"]) == STEP_FIELDS
        assert ev["data"]["step"] == i
        assert ev["data"]["converged"] is (i == len(events) - 1)
        Molecule.from_dict(ev["data"]["structure"])  # every step carries a loadable structure
    assert reply == {"id": rid, "ok": True, "result": reply["result"]}
    res = reply["result"]
    assert set(res) >= {"structure", "converged", "steps", "initial_energy", "energy", "fmax", "message",
                        "trajectory"}
    assert res["steps"] == events[-1]["data"]["step"]
    assert res["energy"] == events[-1]["data"]["energy"]
    assert res["initial_energy"] == events[0]["data"]["energy"]
    assert len(res["trajectory"]) == len(events)
    assert all("forces" in s["properties"] for s in res["structure"]["sites"])


def test_output_structure_is_what_pymatgen_writes(worker):
    from ase.build import bulk
    from pymatgen.core import Structure

    atoms = bulk("Cu", "fcc", a=3.7, cubic=True) * (2, 1, 1)
    atoms.rattle(0.02, seed=8)
    d = to_pmg(atoms)
    reply = worker.call("optimize", {"structure": d, "calculator": "emt", "max_steps": 2})
    out = reply["result"]["structure"]
    s = Structure.from_dict(out)
    again = s.as_dict()
    assert set(out) == set(again)
    assert set(out["lattice"]) == set(again["lattice"])
    for key in ("a", "b", "c", "alpha", "beta", "gamma", "volume"):
        assert abs(out["lattice"][key] - again["lattice"][key]) < 1e-9
    for mine, theirs in zip(out["sites"], again["sites"]):
        assert set(mine) == set(theirs)
        assert max(abs(x - y) for x, y in zip(mine["abc"], theirs["abc"])) < 1e-12
        assert mine["species"] == theirs["species"]


def test_reduced_viewer_form_is_accepted(worker):
    d = {"lattice": {"matrix": [[3.6, 0, 0], [0, 3.6, 0], [0, 0, 3.6]]},
         "sites": [{"species": [{"element": "Cu", "occu": 1}], "abc": [0, 0, 0]},
                   {"species": [{"element": "Cu", "occu": 1}], "abc": [0.5, 0.5, 0]},
                   {"species": [{"element": "Cu", "occu": 1}], "xyz": [1.8, 0, 1.8]},
                   {"species": [{"element": "Cu", "occu": 1}], "abc": [0, 0.5, 0.5]}]}
    reply = worker.call("energy", {"structure": d, "calculator": "emt"})
    assert reply["ok"], reply
    assert reply["result"]["fmax"] < 1e-10 and len(reply["result"]["stress"]) == 6


def test_busy_worker_answers_hello_and_cancel_interrupts(worker):
    rid = worker.send("optimize", long_run())
    seen = 0
    while seen < 3:
        msg = worker.next_message(timeout=60)
        if msg.get("id") == rid and msg.get("event") == "step":
            seen += 1
    hid = worker.send("hello")
    cid = worker.send("cancel", {"id": rid})
    hello = cancel = final = None
    after_final = []
    t0 = time.monotonic()
    while final is None or hello is None or cancel is None:
        msg = worker.next_message(timeout=60)
        if msg["id"] == hid:
            hello = msg
        elif msg["id"] == cid:
            cancel = msg
        elif msg["id"] == rid and "event" not in msg:
            final = msg
        elif final is not None:
            after_final.append(msg)
    assert time.monotonic() - t0 < 10  # interrupted between steps, not at the end of the run
    assert hello["result"]["busy"] == rid
    assert cancel["ok"] and cancel["result"]["cancelled"] is True
    assert final["ok"] is False and final["error"]["code"] == "CANCELLED"
    assert final["error"]["details"]["steps"] >= 2 and final["error"]["details"]["structure"]
    assert not any(m.get("id") == rid for m in after_final)  # nothing of it after its reply
    # the worker goes on serving
    assert worker.call("energy", {"structure": to_pmg(cu_cluster()), "calculator": "emt"})["ok"]


def test_cancel_queued_and_unknown(worker):
    a = worker.send("optimize", long_run())
    b = worker.send("optimize", {"structure": to_pmg(cu_cluster()), "calculator": "emt"})
    cb = worker.send("cancel", {"id": b})
    cu = worker.send("cancel", {"id": "no-such-request"})
    ca = worker.send("cancel", {"id": a})
    replies = {}
    while len(replies) < 5:
        msg = worker.next_message(timeout=60)
        if "event" not in msg:
            replies[msg["id"]] = msg
    assert replies[cb]["result"]["cancelled"] is True and replies[cb]["result"]["running"] is False
    assert replies[cu]["result"]["cancelled"] is False
    assert replies[a]["error"]["code"] == "CANCELLED"
    assert replies[b]["error"]["code"] == "CANCELLED"


def test_duplicate_id_is_refused(worker):
    a = worker.send("optimize", long_run(), rid="dup")
    worker.send("optimize", long_run(), rid="dup")
    first_error = None
    while first_error is None:
        msg = worker.next_message(timeout=60)
        if msg["id"] == "dup" and "event" not in msg:
            first_error = msg
    assert first_error["error"]["code"] == "MALFORMED_REQUEST" and "already in use" in first_error["error"]["message"]
    worker.send("cancel", {"id": a})
    _, final = worker.collect(a)
    assert final["error"]["code"] == "CANCELLED"


def test_malformed_lines_and_unknown_method(worker):
    cases = [
        (b"this is not json", None),
        (b"[1, 2, 3]", None),
        (b'{"method": "hello"}', None),
        (b'{"id": {"x": 1}, "method": "hello"}', None),
        (b'{"id": "m1"}', "m1"),
        (b'{"id": "m2", "method": "energy", "params": [1]}', "m2"),
    ]
    for line, rid in cases:
        worker.send_raw(line)
        msg = worker.next_message(timeout=30)
        assert msg["id"] == rid and msg["ok"] is False
        assert msg["error"]["code"] == "MALFORMED_REQUEST", (line, msg)
    worker.send_raw(b"   ")  # blank lines are ignored
    reply = worker.call("frobnicate", {})
    assert reply["ok"] is False and reply["error"]["code"] == "UNKNOWN_METHOD"
    assert worker.call("hello")["ok"]  # still alive


@pytest.mark.parametrize("params,code", [
    ({"calculator": "lj"}, "UNKNOWN_CALCULATOR"),
    ({"calculator": "uff"}, "CALCULATOR_UNAVAILABLE"),
    ({"calculator": "emt", "structure": "fe"}, "UNSUPPORTED_ELEMENTS"),
    ({"calculator": "emt", "structure": "li"}, "UNSUPPORTED_ELEMENTS"),
    ({"calculator": "emt", "structure": {"sites": []}}, "INVALID_STRUCTURE"),
    ({"calculator": "emt", "structure": {"sites": [{"species": [{"element": "Xx", "occu": 1}],
                                                    "xyz": [0, 0, 0]}]}}, "INVALID_STRUCTURE"),
    ({"calculator": "emt", "frozen_atoms": [99]}, "INVALID_INDEX"),
    ({"calculator": "emt", "optimizer": "newton"}, "UNKNOWN_OPTIMIZER"),
    ({"calculator": "emt", "fmax": 0}, "INVALID_FMAX"),
    ({"calculator": "emt", "fmax": -0.1}, "INVALID_FMAX"),
    ({"calculator": "emt", "max_steps": 0}, "INVALID_MAX_STEPS"),
    ({"calculator": "emt", "fmax": "small"}, "MALFORMED_REQUEST"),
    ({"calculator": "emt", "optimize_cell": True}, "MISSING_LATTICE"),
])
def test_errors_before_any_work(worker, params, code):
    from ase.build import bulk

    structure = params.get("structure", to_pmg(cu_cluster()))
    if structure == "fe":
        structure = to_pmg(bulk("Fe", "bcc", a=2.87))
    elif structure == "li":
        structure = to_pmg(bulk("Li", "bcc", a=3.5) * (2, 1, 1))
    events, reply = worker.collect(worker.send("optimize", {**params, "structure": structure}))
    assert events == []  # refused before a single step
    assert reply["ok"] is False and reply["error"]["code"] == code, reply
    assert reply["error"]["message"]
    if code == "UNSUPPORTED_ELEMENTS":
        assert reply["error"]["details"]["unsupported"] in (["Fe"], ["Li"])
    if params["calculator"] == "uff":
        assert "runs in the studio" in reply["error"]["message"]


def test_periodic_structure_refused_by_molecule_only_engine(worker):
    from ase.build import bulk

    if subprocess.run(["which", "xtb"], capture_output=True).returncode != 0:
        pytest.skip("xtb program not installed")
    reply = worker.call("energy", {"structure": to_pmg(bulk("Si")), "calculator": "gfn2",
                                   "calculator_params": {"engine": "xtb"}})
    assert reply["error"]["code"] == "UNSUPPORTED_ELEMENTS" and "periodic" in reply["error"]["message"]


def test_missing_sella_is_reported_with_install_command(fresh_worker):
    w = fresh_worker({"ATOMSTUDIO_WORKER_HIDE_MODULES": "sella"})
    opts = {o["id"]: o for o in w.call("calculators")["result"]["optimizers"]}
    assert opts["bfgs"]["available"] is True
    for o in ("tr_min", "tr_ts", "irc"):
        assert opts[o]["available"] is False and "pip install sella" in opts[o]["status_message"]
    for o in ("tr_ts", "irc", "tr_min"):
        events, reply = w.collect(w.send("optimize", {"structure": to_pmg(cu_cluster()), "calculator": "emt",
                                                      "optimizer": o}))
        assert events == []
        assert reply["error"]["code"] == "OPTIMIZER_UNAVAILABLE"
        assert "pip install sella" in reply["error"]["message"]
    assert w.call("optimize", {"structure": to_pmg(cu_cluster()), "calculator": "emt", "max_steps": 2})["ok"]


def test_missing_tblite_falls_back_or_explains(fresh_worker):
    w = fresh_worker({"ATOMSTUDIO_WORKER_HIDE_MODULES": "tblite,gfnff", "PATH": "/nonexistent"})
    calcs = {c["id"]: c for c in w.call("calculators")["result"]["calculators"]}
    for cid, pkg in (("gfn2", "tblite"), ("gfn1", "tblite"), ("gfnff", "gfnff")):
        assert calcs[cid]["available"] is False
        assert f"pip install {pkg}" in calcs[cid]["status_message"]


def test_stdout_carries_protocol_lines_only(fresh_worker):
    # CHGNet prints its banner on stdout when it loads; that must end up on stderr
    w = fresh_worker({"ATOMSTUDIO_WORKER_LOG_LEVEL": "INFO"})
    from ase.build import bulk

    calc = "chgnet" if module_available("chgnet") else "emt"
    assert w.call("energy", {"structure": to_pmg(bulk("Cu", "fcc", a=3.6)), "calculator": calc})["ok"]
    w.close()
    for raw in w.raw_lines:
        json.loads(raw)
    if calc == "chgnet":
        assert "CHGNet" in w.stderr


def _raw_worker():
    return subprocess.Popen(WORKER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "ATOMSTUDIO_WORKER_LOG_LEVEL": "WARNING"})


def _start_long_run(proc, n_steps=3) -> list[bytes]:
    proc.stdin.write(json.dumps({"id": "x", "method": "optimize", "params": long_run()}).encode() + b"\n")
    proc.stdin.flush()
    lines = []
    while len(lines) < n_steps:
        lines.append(proc.stdout.readline())
    return lines


def test_killed_worker_leaves_only_whole_lines():
    proc = _raw_worker()
    lines = _start_long_run(proc)
    os.kill(proc.pid, signal.SIGKILL)
    rest = proc.stdout.read()
    assert proc.wait(timeout=10) == -signal.SIGKILL
    # every newline-terminated line is a complete protocol message; a client drops an unterminated tail
    complete = lines + rest.split(b"\n")[:-1]
    for raw in complete:
        msg = json.loads(raw)
        assert msg["id"] == "x" and msg["event"] == "step"


def test_sigterm_stops_a_running_worker_promptly():
    proc = _raw_worker()
    _start_long_run(proc)
    t0 = time.monotonic()
    proc.terminate()
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert time.monotonic() - t0 < 5


def test_worker_exits_when_the_service_goes_away():
    # the service died: its ends of both pipes are closed; the next step event cannot be
    # delivered, and the worker must not keep computing for nobody
    proc = _raw_worker()
    _start_long_run(proc)
    proc.stdin.close()
    proc.stdout.close()
    assert proc.wait(timeout=15) == 0


def test_shutdown_cancels_running_work_and_exits(fresh_worker):
    w = fresh_worker()
    rid = w.send("optimize", long_run())
    while w.next_message(timeout=60).get("event") != "step":
        pass
    sid = w.send("shutdown")
    replies = {}
    while len(replies) < 2:
        msg = w.next_message(timeout=60)
        if msg is None:
            break
        if "event" not in msg:
            replies[msg["id"]] = msg
    assert replies[rid]["error"]["code"] == "CANCELLED"
    assert replies[sid] == {"id": sid, "ok": True, "result": {"shutting_down": True}}
    assert w.proc.wait(timeout=10) == 0


def test_end_of_input_finishes_queued_work():
    req = {"id": 1, "method": "energy", "params": {"structure": to_pmg(cu_cluster()), "calculator": "emt"}}
    out = subprocess.run(WORKER_CMD, input=json.dumps(req).encode() + b"\n", capture_output=True, timeout=60)
    assert out.returncode == 0
    msg = json.loads(out.stdout)
    assert msg["id"] == 1 and msg["ok"] is True


def test_module_entry_point_runs_without_pymatgen_import():
    # cold start: the worker itself must not pull in pymatgen (about a second of imports)
    code = ("import sys, json; sys.argv=['w']; import atomstudio_worker.server as s, atomstudio_worker.runner, "
            "atomstudio_worker.calculators; print(json.dumps('pymatgen' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "false"
