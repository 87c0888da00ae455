"""Sella transition-state search and IRC through the worker, and GFN energies vs the engines."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import numpy as np
import pytest
from ase import Atoms
from ase.units import Hartree
from conftest import module_available, positions_of, to_pmg

needs_sella = pytest.mark.skipif(not module_available("sella"), reason="sella not installed")
needs_tblite = pytest.mark.skipif(not module_available("tblite"), reason="tblite not installed")


def n_out_of_plane(pos: np.ndarray) -> float:
    """Signed distance of N (site 0) from the plane of the three H atoms."""
    n = np.cross(pos[2] - pos[1], pos[3] - pos[1])
    n /= np.linalg.norm(n)
    return float((pos[0] - pos[1]) @ n)


def flattened_nh3() -> Atoms:
    # NH3 pushed most of the way to its planar inversion transition state (N 0.1 A off the H plane)
    return Atoms("NH3", positions=[[0, 0, 0.10], [1.0, 0, 0], [-0.5, 0.866, 0], [-0.5, -0.866, 0]])


@needs_sella
@needs_tblite
def test_nh3_inversion_transition_state_and_irc(worker):
    from ase.optimize import BFGS
    from ase.vibrations import Vibrations
    from tblite.ase import TBLite

    reply = worker.call("optimize", {
        "structure": to_pmg(flattened_nh3()), "calculator": "gfn2", "optimizer": "tr_ts",
        "optimizer_params": {"internal": True}, "fmax": 0.001, "max_steps": 100})
    assert reply["ok"], reply
    ts = reply["result"]
    assert ts["converged"]
    pos = positions_of(ts["structure"])
    # the known transition state of ammonia inversion is planar (D3h)...
    assert abs(n_out_of_plane(pos)) < 1e-3
    nh = np.linalg.norm(pos[1:] - pos[0], axis=1)
    assert np.ptp(nh) < 1e-3
    # ...and a first-order saddle point: exactly one large imaginary mode
    atoms = Atoms("NH3", positions=pos)
    atoms.calc = TBLite(method="GFN2-xTB", verbosity=0)
    with tempfile.TemporaryDirectory() as tmp:
        vib = Vibrations(atoms, name=os.path.join(tmp, "vib"))
        vib.run()
        freqs = vib.get_frequencies()
    imaginary = [abs(f) for f in freqs if np.iscomplex(f) and abs(f) > 100]
    assert len(imaginary) == 1 and imaginary[0] > 500

    # IRC from the transition state down both sides to the two mirror-image pyramidal minima
    events, reply = worker.collect(worker.send("optimize", {
        "structure": ts["structure"], "calculator": "gfn2", "optimizer": "irc",
        "optimizer_params": {"dx": 0.1}, "fmax": 0.01, "max_steps": 200}))
    assert reply["ok"], reply
    irc = reply["result"]["irc"]
    assert set(irc) == {"forward", "reverse"}
    dirs = [e["data"]["direction"] for e in events]
    assert dirs[0] == "forward" and dirs[-1] == "reverse"
    heights = [n_out_of_plane(positions_of(irc[d]["structure"])) for d in ("forward", "reverse")]
    assert heights[0] * heights[1] < 0 and abs(abs(heights[0]) - abs(heights[1])) < 1e-2
    assert min(abs(h) for h in heights) > 0.3
    # both ends are the minimum a plain minimization finds, 0.26 eV below the TS (GFN2)
    minimum = Atoms("NH3", positions=positions_of(irc["forward"]["structure"]))
    minimum.calc = TBLite(method="GFN2-xTB", verbosity=0)
    BFGS(minimum, logfile=None).run(fmax=0.001)
    e_min = minimum.get_potential_energy()
    for d in ("forward", "reverse"):
        assert abs(irc[d]["energy"] - e_min) < 2e-3
    barrier = ts["energy"] - e_min
    assert 0.2 < barrier < 0.33, barrier
    # energies fall monotonically along each branch, away from the TS
    for d in ("forward", "reverse"):
        es = [e["data"]["energy"] for e in events if e["data"]["direction"] == d]
        assert es[-1] < es[0] - 0.2


# --------------------------------------------------------------------------------------------
# GFN energies: the worker gives what the engines give when called directly


def water() -> Atoms:
    return Atoms("OH2", positions=[[0, 0, 0.1173], [0, 0.7572, -0.4692], [0, -0.7572, -0.4692]])


@needs_tblite
@pytest.mark.parametrize("calc_id,method", [("gfn2", "GFN2-xTB"), ("gfn1", "GFN1-xTB")])
def test_gfn_energy_equals_tblite(worker, calc_id, method):
    from tblite.ase import TBLite

    atoms = water()
    reply = worker.call("energy", {"structure": to_pmg(atoms), "calculator": calc_id})
    assert reply["ok"], reply
    atoms.calc = TBLite(method=method, verbosity=0)
    assert abs(reply["result"]["energy"] - atoms.get_potential_energy()) < 1e-6
    assert np.abs(np.array(reply["result"]["forces"]) - atoms.get_forces()).max() < 1e-6


@needs_tblite
def test_gfn2_periodic_energy_and_stress_equal_tblite(worker):
    from ase.build import bulk
    from tblite.ase import TBLite

    atoms = bulk("Si", "diamond", a=5.43)
    reply = worker.call("energy", {"structure": to_pmg(atoms), "calculator": "gfn2"})
    assert reply["ok"], reply
    atoms.calc = TBLite(method="GFN2-xTB", verbosity=0)
    assert abs(reply["result"]["energy"] - atoms.get_potential_energy()) < 1e-6
    assert np.abs(np.array(reply["result"]["stress"]) - atoms.get_stress()).max() < 1e-7


@pytest.mark.skipif(not module_available("gfnff"), reason="gfnff not installed")
def test_gfnff_energy_equals_gfnff_library(worker):
    from gfnff import GFNFF

    atoms = water()
    reply = worker.call("energy", {"structure": to_pmg(atoms), "calculator": "gfnff"})
    assert reply["ok"], reply
    atoms.calc = GFNFF()
    assert abs(reply["result"]["energy"] - atoms.get_potential_energy()) < 1e-6


def xtb_direct(atoms: Atoms, flags: list[str]) -> float:
    """Total energy in eV from running the xtb program by hand."""
    with tempfile.TemporaryDirectory() as tmp:
        atoms.write(os.path.join(tmp, "mol.xyz"))
        out = subprocess.run(["xtb", "mol.xyz", *flags, "--sp"], cwd=tmp, capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout
    return float(re.findall(r"TOTAL ENERGY\s+(-?\d+\.\d+)\s+Eh", out)[-1]) * Hartree


@pytest.mark.skipif(subprocess.run(["which", "xtb"], capture_output=True).returncode != 0,
                    reason="xtb program not installed")
@pytest.mark.parametrize("calc_id,flags", [("gfn2", ["--gfn", "2"]), ("gfn1", ["--gfn", "1"]),
                                           ("gfnff", ["--gfnff"])])
def test_xtb_engine_energy_equals_xtb_program(worker, calc_id, flags):
    atoms = water()
    reply = worker.call("energy", {"structure": to_pmg(atoms), "calculator": calc_id,
                                   "calculator_params": {"engine": "xtb"}})
    assert reply["ok"], reply
    # xtb prints 12 decimals of Hartree; the gradient file the worker reads has 11
    assert abs(reply["result"]["energy"] - xtb_direct(atoms, flags)) < 1e-6
    # forces: finite differences of the same engine agree with its analytic gradient
    assert len(reply["result"]["forces"]) == 3


def gfn0_ready() -> bool:
    from atomstudio_worker.gfn0 import param_dir

    return module_available("xtb") and param_dir() is not None


@pytest.mark.skipif(not gfn0_ready(), reason="xtb Python API or param_gfn0-xtb.txt missing")
def test_gfn0_energy_equals_xtb_api(worker):
    from atomstudio_worker.gfn0 import param_dir
    from ase.units import Bohr
    from xtb.interface import Calculator, Param
    from xtb.libxtb import VERBOSITY_MUTED

    atoms = water()
    reply = worker.call("energy", {"structure": to_pmg(atoms), "calculator": "gfn0"})
    assert reply["ok"], reply
    os.environ.setdefault("XTBPATH", param_dir())
    calc = Calculator(Param.GFN0xTB, atoms.numbers, atoms.positions / Bohr)
    calc.set_verbosity(VERBOSITY_MUTED)
    res = calc.singlepoint()
    assert abs(reply["result"]["energy"] - res.get_energy() * Hartree) < 1e-6
    forces = -res.get_gradient() * Hartree / Bohr
    assert np.abs(np.array(reply["result"]["forces"]) - forces).max() < 1e-6
    # and the forces are the energy's derivative: central differences through the worker
    h = 1e-4
    es = []
    for sign in (1, -1):
        moved = atoms.copy()
        moved.positions[1, 1] += sign * h
        es.append(worker.call("energy", {"structure": to_pmg(moved), "calculator": "gfn0"})["result"]["energy"])
    assert abs(-(es[0] - es[1]) / (2 * h) - reply["result"]["forces"][1][1]) < 1e-4
    # GFN0 optimizes a molecule (no SCF, so it is the cheapest tight-binding pre-optimizer)
    opt = worker.call("optimize", {"structure": to_pmg(atoms), "calculator": "gfn0", "fmax": 0.01})
    assert opt["ok"] and opt["result"]["converged"] and opt["result"]["energy"] <= opt["result"]["initial_energy"]


def test_gfn0_periodic_is_refused(worker):
    from ase.build import bulk

    reply = worker.call("energy", {"structure": to_pmg(bulk("Si")), "calculator": "gfn0"})
    assert reply["ok"] is False
    assert reply["error"]["code"] in ("UNSUPPORTED_ELEMENTS", "CALCULATOR_UNAVAILABLE")


def test_gfn0_without_xtb_api_is_unavailable_with_reason(fresh_worker):
    w = fresh_worker({"ATOMSTUDIO_WORKER_HIDE_MODULES": "xtb"})
    gfn0 = next(c for c in w.call("calculators")["result"]["calculators"] if c["id"] == "gfn0")
    assert gfn0["available"] is False
    assert "pip install xtb" in gfn0["status_message"] and "generate_wsc" in gfn0["status_message"]
    reply = w.call("energy", {"structure": to_pmg(water()), "calculator": "gfn0"})
    assert reply["error"]["code"] == "CALCULATOR_UNAVAILABLE"
