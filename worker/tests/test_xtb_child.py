"""The `xtb` program the worker starts: a minimal environment, and a time limit.

The worker may run with more in its environment than xtb needs (by hand, or an older service);
the program gets only paths, language and thread settings. A run that exceeds
ATOMSTUDIO_XTB_TIMEOUT_S is stopped and reported, and leaves no process behind.
"""

from __future__ import annotations

import os
import shutil
import stat
import time

import pytest
from conftest import WorkerClient, to_pmg

pytestmark = pytest.mark.skipif(shutil.which("xtb") is None, reason="xtb program not installed (apt-get install xtb)")

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef",
    "OPENAI_API_KEY": "sk-test-0123456789abcdef",
    "ATOMSTUDIO_TOKEN": "token-0123456789abcdef",
}


def water():
    from ase.build import molecule

    return to_pmg(molecule("H2O"))


def children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def test_xtb_gets_a_minimal_environment(tmp_path):
    dump = tmp_path / "xtb-env.txt"
    wrapper = tmp_path / "xtb-wrapper"
    # records what the program was started with, then runs the real xtb
    wrapper.write_text(f"#!/bin/sh\nenv > '{dump}'\nexec '{shutil.which('xtb')}' \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    client = WorkerClient({**SECRETS, "ATOMSTUDIO_XTB": str(wrapper)})
    try:
        reply = client.call("energy", {"structure": water(), "calculator": "gfn2",
                                       "calculator_params": {"engine": "xtb"}})
    finally:
        client.close()
    assert reply["ok"], reply
    env = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    for name, value in SECRETS.items():
        assert name not in env
        assert value not in dump.read_text()
    assert not [k for k in env if k.startswith("ATOMSTUDIO_")]
    assert env["PATH"] and env["OMP_NUM_THREADS"]


def test_xtb_run_past_its_time_limit_is_stopped():
    from ase.build import bulk

    # a 64-atom silicon cluster cut from the crystal: seconds of SCF, far beyond the limit
    atoms = bulk("Si", "diamond", a=5.43, cubic=True) * (2, 2, 2)
    atoms.pbc = False
    atoms.cell = [0, 0, 0]
    client = WorkerClient({"ATOMSTUDIO_XTB_TIMEOUT_S": "0.3"})
    try:
        t0 = time.monotonic()
        reply = client.call("energy", {"structure": to_pmg(atoms), "calculator": "gfn2",
                                       "calculator_params": {"engine": "xtb"}})
        elapsed = time.monotonic() - t0
        assert reply["ok"] is False and reply["error"]["code"] == "CALCULATION_FAILED", reply
        assert "ATOMSTUDIO_XTB_TIMEOUT_S" in reply["error"]["message"]
        assert elapsed < 20
        assert children_of(client.proc.pid) == []  # xtb was killed and reaped
        assert client.call("hello")["ok"]  # the worker goes on serving
    finally:
        client.close()
