"""The `energy` and `optimize` methods: validate everything first, then compute.

Validation order (nothing expensive happens before it passes): request shape, structure,
calculator known, calculator available, optimizer available, elements and periodicity, indices.
Loading a model whose element list decides what is supported happens before the last checks, but
still before any energy is computed.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

import numpy as np

from . import calculators as C
from .errors import Cancelled, WorkerError
from .structures import from_dict, to_dict

log = logging.getLogger("atomstudio_worker")

Emit = Callable[[dict[str, Any]], None]


def _malformed(msg: str, *fields: str) -> WorkerError:
    return WorkerError("MALFORMED_REQUEST", msg, {"fields": list(fields)} if fields else None)


def _get(params: dict[str, Any], key: str, kind, default):
    value = params.get(key)
    if value is None:  # absent or null: the envelope's default
        return default
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or (kind in (int, float) and isinstance(value, bool)):
        raise _malformed(f"{key} must be {getattr(kind, '__name__', kind)}", key)
    return value


def _fmax(forces: np.ndarray) -> float:
    return float(np.sqrt((forces**2).sum(axis=1)).max()) if len(forces) else 0.0


def _prepare(params: dict[str, Any]):
    if not isinstance(params, dict):
        raise _malformed("params must be an object", "params")
    if "structure" not in params:
        raise _malformed("structure is required", "structure")
    calc_id = params.get("calculator")
    if not isinstance(calc_id, str):
        raise _malformed("calculator is required (a calculator id)", "calculator")
    cparams = params.get("calculator_params") or {}
    if not isinstance(cparams, dict):
        raise _malformed("calculator_params must be an object", "calculator_params")
    atoms, meta = from_dict(params["structure"])
    spec, engine, model = C.check_calculator(calc_id, cparams)
    return atoms, meta, spec, engine, (cparams, model)


def _attach(atoms, meta, spec, engine, calc_choice):
    # static checks first (element table of the calculator), then the model's own list
    cparams, model = calc_choice
    C.check_system(spec, engine, atoms, None)
    prepared = C.build(spec.id, engine, cparams, meta, model)
    if prepared.elements is not None:
        C.check_system(spec, engine, atoms, prepared.elements)
    if spec.needs_cell and meta.is_molecule:
        C.box_molecule(atoms)
    atoms.calc = prepared.calc
    return prepared


def energy(params: dict[str, Any], cancel: threading.Event | None = None) -> dict[str, Any]:
    atoms, meta, spec, engine, cparams = _prepare(params)
    _attach(atoms, meta, spec, engine, cparams)
    # loading a model can take seconds: a request cancelled meanwhile stops before computing
    # (the computation itself cannot be interrupted; the service kills a worker that overstays)
    if cancel is not None and cancel.is_set():
        raise WorkerError("CANCELLED", "energy calculation cancelled before it started")
    try:
        e = float(atoms.get_potential_energy())
        forces = atoms.get_forces()
    except Exception as exc:
        # an engine that fails on this input (SCF not converged, unsupported setup) is not a bug
        log.exception("energy failed")
        raise WorkerError("CALCULATION_FAILED", f"{spec.id}: {type(exc).__name__}: {exc}") from exc
    out: dict[str, Any] = {
        "energy": e,
        "energy_per_atom": e / len(atoms),
        "forces": forces.tolist(),
        "fmax": _fmax(forces),
        "calculator": spec.id,
    }
    if not meta.is_molecule and meta.pbc == (True, True, True):
        try:
            out["stress"] = atoms.get_stress(voigt=True).tolist()
        except Exception as exc:  # some engines have no stress; the field is optional
            log.info("no stress from %s: %s", spec.id, exc)
    return out


def _make_optimizer(opt_id: str, target, oparams: dict[str, Any], is_molecule: bool):
    if opt_id == "bfgs":
        from ase.optimize import BFGS

        kw = {}
        if oparams.get("maxstep") is not None:
            kw["maxstep"] = float(oparams["maxstep"])
        return BFGS(target, logfile=None, **kw)
    from sella import IRC, Sella

    if opt_id in ("tr_min", "tr_ts"):
        kw = {"order": 0 if opt_id == "tr_min" else 1, "logfile": None}
        if oparams.get("delta0") is not None:
            kw["delta0"] = float(oparams["delta0"])
        if oparams.get("internal") is not None:
            kw["internal"] = bool(oparams["internal"])
        return Sella(target, **kw)
    kw = {"logfile": None}
    if oparams.get("dx") is not None:
        kw["dx"] = float(oparams["dx"])
    return IRC(target, **kw)


def optimize(params: dict[str, Any], emit: Emit, cancel: threading.Event) -> dict[str, Any]:
    atoms, meta, spec, engine, cparams = _prepare(params)
    opt_id = params.get("optimizer", "bfgs")
    if opt_id is None:
        opt_id = "bfgs"
    if not isinstance(opt_id, str):
        raise _malformed("optimizer must be a string", "optimizer")
    if opt_id not in C.OPTIMIZERS:
        raise WorkerError("UNKNOWN_OPTIMIZER", f"unknown optimizer {opt_id!r}; one of {', '.join(C.OPTIMIZERS)}",
                          {"available": list(C.OPTIMIZERS)})
    ok, why = C.optimizer_status(opt_id)
    if not ok:
        raise WorkerError("OPTIMIZER_UNAVAILABLE", why)
    oparams = params.get("optimizer_params") or {}
    if not isinstance(oparams, dict):
        raise _malformed("optimizer_params must be an object", "optimizer_params")
    for key in ("delta0", "dx", "maxstep"):
        if oparams.get(key) is not None:
            v = oparams[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise _malformed(f"optimizer_params.{key} must be a positive number", f"optimizer_params.{key}")
    direction = oparams.get("direction", "both")
    if direction not in ("forward", "reverse", "both"):
        raise _malformed("optimizer_params.direction must be forward, reverse or both", "optimizer_params.direction")
    fmax = _get(params, "fmax", float, 0.05)
    if not fmax > 0:
        raise WorkerError("INVALID_FMAX", f"fmax must be positive (eV/Angstrom), got {fmax}", {"fields": ["fmax"]})
    max_steps = _get(params, "max_steps", int, 200)
    if max_steps < 1:
        raise WorkerError("INVALID_MAX_STEPS", f"max_steps must be 1 or more, got {max_steps}",
                          {"fields": ["max_steps"]})
    optimize_cell = _get(params, "optimize_cell", bool, False)
    frozen = params.get("frozen_atoms") or []
    if not isinstance(frozen, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in frozen):
        raise _malformed("frozen_atoms must be an array of integers", "frozen_atoms")
    bad = [i for i in frozen if i < 0 or i >= len(atoms)]
    if bad:
        raise WorkerError("INVALID_INDEX", f"frozen_atoms index out of range: {bad} (structure has {len(atoms)} sites)",
                          {"indices": bad})
    want_traj = _get(params, "return_trajectory", bool, False)
    if optimize_cell:
        if meta.is_molecule:
            raise WorkerError("MISSING_LATTICE", "optimize_cell needs a periodic structure (this is a molecule)")
        if opt_id != "bfgs":
            raise WorkerError("UNSUPPORTED_OPTION", f"optimize_cell is supported with bfgs only, not {opt_id}")

    prepared = _attach(atoms, meta, spec, engine, cparams)
    if frozen:
        from ase.constraints import FixAtoms

        atoms.set_constraint(FixAtoms(indices=sorted(set(frozen))))

    target = atoms
    if optimize_cell:
        try:
            from ase.filters import FrechetCellFilter
        except ImportError:  # older ASE
            from ase.constraints import ExpCellFilter as FrechetCellFilter
        target = FrechetCellFilter(atoms)

    trajectory: list[dict[str, Any]] = []
    state: dict[str, Any] = {}
    step_offset = 0
    t0 = time.perf_counter()

    def snapshot(step: int, converged: bool, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        forces = atoms.get_forces()
        opt_forces = target.get_forces() if target is not atoms else forces
        data = {
            "step": step,
            "energy": float(atoms.get_potential_energy()),
            "fmax": _fmax(np.asarray(opt_forces).reshape(-1, 3)),
            "structure": to_dict(atoms, meta, forces),
            "converged": bool(converged),
        }
        if extra:
            data.update(extra)
        return data

    def run_one(opt, extra=None, **run_kw) -> bool:
        nonlocal step_offset
        converged = False
        for converged in opt.irun(**run_kw):
            if cancel.is_set():
                raise Cancelled()
            data = snapshot(step_offset + opt.nsteps, converged, extra)
            state.update(data)
            if "initial_energy" not in state:
                state["initial_energy"] = data["energy"]
            emit(data)
            if want_traj:
                trajectory.append({k: data[k] for k in ("step", "energy", "fmax", "structure")})
            if cancel.is_set():
                raise Cancelled()
        step_offset += opt.nsteps
        return bool(converged)

    irc_ends: dict[str, Any] = {}
    try:
        if opt_id == "irc":
            dirs = ["forward", "reverse"] if direction == "both" else [direction]
            opt = _make_optimizer(opt_id, target, oparams, meta.is_molecule)
            ts_positions = atoms.get_positions()
            converged = True
            for i, d in enumerate(dirs):
                if i:
                    step_offset += 1  # the other branch starts again from the transition state
                    atoms.set_positions(ts_positions)
                opt.nsteps = 0
                c = run_one(opt, {"direction": d}, fmax=fmax, steps=max_steps, direction=d)
                converged = converged and c
                irc_ends[d] = {"structure": state["structure"], "energy": state["energy"],
                               "converged": c, "steps": opt.nsteps}
        else:
            opt = _make_optimizer(opt_id, target, oparams, meta.is_molecule)
            converged = run_one(opt, fmax=fmax, steps=max_steps)
    except Cancelled:
        raise WorkerError("CANCELLED", "optimization cancelled", {
            "steps": state.get("step", 0), "energy": state.get("energy"), "fmax": state.get("fmax"),
            "structure": state.get("structure")})
    except WorkerError:
        raise
    except Exception as exc:
        # calculator failures (SCF not converged, model errors) are reported, not crashes
        log.exception("optimization failed")
        raise WorkerError("CALCULATION_FAILED", f"{type(exc).__name__}: {exc}", {
            "steps": state.get("step", 0), "structure": state.get("structure")}) from exc

    steps = step_offset if opt_id == "irc" else state.get("step", 0)
    elapsed = time.perf_counter() - t0
    if converged:
        message = f"converged in {steps} steps (fmax {state['fmax']:.4g} < {fmax} eV/A)"
    else:
        message = f"not converged after {steps} steps (max_steps {max_steps}); fmax {state['fmax']:.4g} eV/A"
    result: dict[str, Any] = {
        "structure": state["structure"],
        "converged": bool(converged),
        "steps": steps,
        "initial_energy": state["initial_energy"],
        "energy": state["energy"],
        "fmax": state["fmax"],
        "message": message,
        "calculator": spec.id,
        "engine": prepared.engine,
        "optimizer": opt_id,
        "elapsed_s": elapsed,
    }
    if irc_ends:
        result["irc"] = irc_ends
    if want_traj:
        result["trajectory"] = trajectory
    return result
