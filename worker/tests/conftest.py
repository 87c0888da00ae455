"""Shared test helpers: a client that drives a real worker subprocess, and structure builders."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

WORKER_CMD = [sys.executable, "-m", "atomstudio_worker"]


def module_available(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class WorkerClient:
    """Talks to `python -m atomstudio_worker` over pipes, like the TypeScript service does."""

    def __init__(self, env: dict[str, str] | None = None):
        full_env = dict(os.environ)
        full_env.setdefault("ATOMSTUDIO_WORKER_LOG_LEVEL", "WARNING")
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            WORKER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env,
        )
        self.lines: queue.Queue = queue.Queue()
        self.raw_lines: list[bytes] = []
        self.stderr_chunks: list[bytes] = []
        self._n = 0
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self):
        for raw in self.proc.stdout:
            self.raw_lines.append(raw)
            self.lines.put(raw)
        self.lines.put(None)

    def _read_err(self):
        for raw in self.proc.stderr:
            self.stderr_chunks.append(raw)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode(errors="replace")

    def send_raw(self, line: bytes | str) -> None:
        if isinstance(line, str):
            line = line.encode()
        self.proc.stdin.write(line.rstrip(b"\n") + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict[str, Any] | None = None, rid: Any = None) -> Any:
        if rid is None:
            self._n += 1
            rid = f"r{self._n}"
        msg = {"id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg))
        return rid

    def next_message(self, timeout: float = 120.0) -> dict[str, Any] | None:
        raw = self.lines.get(timeout=timeout)
        if raw is None:
            return None
        return json.loads(raw)

    def collect(self, rid: Any, timeout: float = 300.0) -> tuple[list[dict], dict]:
        """All step events of `rid` and its final reply (other ids' messages are ignored)."""
        events, deadline = [], time.monotonic() + timeout
        while True:
            msg = self.next_message(timeout=max(0.1, deadline - time.monotonic()))
            if msg is None:
                raise AssertionError(f"worker closed stdout; stderr:\n{self.stderr}")
            if msg.get("id") != rid:
                continue
            if "event" in msg:
                events.append(msg)
            else:
                return events, msg

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 300.0) -> dict:
        rid = self.send(method, params)
        return self.collect(rid, timeout)[1]

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("shutdown")
                self.proc.wait(timeout=20)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except Exception:
                pass


@pytest.fixture(scope="module")
def worker():
    client = WorkerClient()
    yield client
    client.close()


@pytest.fixture
def fresh_worker():
    clients: list[WorkerClient] = []

    def make(env=None):
        c = WorkerClient(env)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def to_pmg(atoms) -> dict[str, Any]:
    """The pymatgen dictionary of ASE atoms, made by pymatgen itself (the oracle)."""
    from pymatgen.io.ase import AseAtomsAdaptor

    if atoms.pbc.any():
        obj = AseAtomsAdaptor.get_structure(atoms)
    else:
        atoms = atoms.copy()
        if sum(atoms.numbers) % 2:  # odd electron count (e.g. Cu13): a doublet, or pymatgen refuses it
            atoms.spin_multiplicity = 2
        obj = AseAtomsAdaptor.get_molecule(atoms)
    return json.loads(obj.to_json())  # plain JSON, as the service sends it (no numpy arrays)


def from_pmg(d: dict[str, Any]):
    """ASE atoms from a pymatgen dictionary, the way a scientist would do it in-process."""
    from pymatgen.core import Molecule, Structure
    from pymatgen.io.ase import AseAtomsAdaptor

    if d["@class"] == "Molecule":
        # AseAtomsAdaptor writes multiplicity 1 even for odd-electron clusters such as Cu13, which
        # Molecule.from_dict then rejects; the default multiplicity is irrelevant to EMT
        obj = Molecule.from_dict({k: v for k, v in d.items() if k != "spin_multiplicity"})
    else:
        obj = Structure.from_dict(d)
    atoms = AseAtomsAdaptor.get_atoms(obj)
    atoms.set_constraint()
    return atoms


def positions_of(d: dict[str, Any]):
    import numpy as np

    return np.array([s["xyz"] for s in d["sites"]])


def cu_cluster():
    from ase.cluster import Octahedron

    atoms = Octahedron("Cu", 4, cutoff=1)  # 38... a small truncated octahedron
    atoms.rattle(0.05, seed=1)
    atoms.center(vacuum=6.0)
    atoms.pbc = False
    atoms.cell = [0, 0, 0]
    return atoms


def pt_slab():
    from ase.build import fcc111

    slab = fcc111("Pt", size=(2, 2, 4), vacuum=8.0)
    slab.rattle(0.05, seed=2)
    return slab
