"""Calculator and optimizer registry: what exists, what is available here and why not, and how to
build an ASE calculator for a request.

Availability is decided without importing the heavy libraries (importlib's find_spec only), so
`calculators` answers fast on a cold worker. Models are loaded once per worker process and cached
(decisions §8); ML models are never downloaded and never named by a request: they come from the
server-side allowlist of `models.py` (packaged CHGNet weights, the models folder, the operator's
environment), picked by id with `calculator_params.model`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from ase.data import chemical_symbols

from . import models as M
from .errors import WorkerError
from .xtb_program import xtb_path

log = logging.getLogger("atomstudio_worker")

EMT_ELEMENTS = ["Al", "Cu", "Ag", "Au", "Ni", "Pd", "Pt", "H", "C", "N", "O"]
# GFN1/GFN2 and GFN-FF are parametrized for H..Rn (Z = 1..86)
Z86 = chemical_symbols[1:87]
# CHGNet 0.3.0 was trained on the Materials Project trajectory set: Z = 1..94
Z94 = chemical_symbols[1:95]

GFN0_WHY_NOT_OTHERS = (
    "tblite and dxtb implement GFN1/GFN2 only, and Debian's xtb program 6.5.1 aborts on `--gfn 0` "
    "for molecules in generate_wsc.f90"
)
UFF_REASON = ("UFF runs in the studio (in the browser, a Web Worker running atomstudio-core's UFF), not on "
              "the server: pick UFF in the studio's Optimize panel, or ask the studio's assistant")
UFF_ENGINE = "atomstudio-core UFF in the studio's Web Worker (molecules)"
# Molecules given to models that need a cell (CHGNet, M3GNet) are put in a box whose images are
# this far apart, well beyond their 5-6 Angstrom cutoffs, so the energy is the isolated molecule's.
MOLECULE_BOX_PADDING = 20.0


# calculator id -> (module to find, pip package); the engine name shown in the listing
ML_PACKAGES = {"mace": ("mace", "mace-torch"), "chgnet": ("chgnet", "chgnet"), "m3gnet": ("matgl", "matgl")}
ML_ENGINE_NAMES = {"mace": "mace-torch", "chgnet": "CHGNet", "m3gnet": "matgl"}


def _hidden_modules() -> set[str]:
    # Lets tests (and people) simulate a missing optional library without uninstalling it.
    raw = os.environ.get("ATOMSTUDIO_WORKER_HIDE_MODULES", "")
    return {m.strip() for m in raw.split(",") if m.strip()}


def module_present(name: str) -> bool:
    if name.split(".")[0] in _hidden_modules():
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def pip_command(*pkgs: str) -> str:
    return "pip install " + " ".join(pkgs)


@dataclass(frozen=True)
class CalcSpec:
    id: str
    name: str
    kind: str
    supports_pbc: bool
    elements: list[str] | None  # None: all elements, or the model decides (checked after loading)
    needs_cell: bool = False  # molecules are boxed (see MOLECULE_BOX_PADDING)


SPECS: dict[str, CalcSpec] = {
    s.id: s
    for s in [
        CalcSpec("emt", "EMT (effective medium theory)", "empirical potential for metals", True, EMT_ELEMENTS),
        CalcSpec("gfn2", "GFN2-xTB", "tight binding", True, Z86),
        CalcSpec("gfn1", "GFN1-xTB", "tight binding", True, Z86),
        # molecules only: xtb's periodic GFN0 path was not verified here
        CalcSpec("gfn0", "GFN0-xTB", "tight binding", False, Z86),
        CalcSpec("gfnff", "GFN-FF", "force field", True, Z86),
        CalcSpec("mace", "MACE", "machine-learned potential (equivariant neural network)", True, None),
        CalcSpec("chgnet", "CHGNet", "machine-learned potential (crystal Hamiltonian graph network)", True, Z94,
                 needs_cell=True),
        CalcSpec("m3gnet", "M3GNet", "machine-learned potential (3-body graph network)", True, None,
                 needs_cell=True),
        CalcSpec("uff", "UFF (universal force field)", "force field", False, None),
    ]
}


# ---------------------------------------------------------------------------------------------
# availability


def _engine(calc_id: str, params: dict[str, Any] | None = None) -> tuple[str | None, str]:
    """(engine, status_message); engine None means unavailable and the message says why and how."""
    params = params or {}
    wanted = params.get("engine")
    if calc_id == "emt":
        return "ase", "ASE's EMT"
    if calc_id in ("gfn2", "gfn1"):
        if wanted in (None, "tblite") and module_present("tblite"):
            return "tblite", "tblite (Python)"
        if wanted in (None, "xtb") and xtb_path():
            return "xtb", "xtb program (molecules only)"
        if wanted not in (None, "tblite", "xtb"):
            return None, f"unknown engine {wanted!r} for {calc_id} (tblite or xtb)"
        return None, f"tblite is not installed: {pip_command('tblite')} (or apt-get install xtb)"
    if calc_id == "gfnff":
        if wanted in (None, "gfnff") and module_present("gfnff"):
            return "gfnff", "gfnff library (Python)"
        if wanted in (None, "xtb") and xtb_path():
            return "xtb", "xtb program (molecules only)"
        if wanted not in (None, "gfnff", "xtb"):
            return None, f"unknown engine {wanted!r} for gfnff (gfnff or xtb)"
        return None, f"gfnff is not installed: {pip_command('gfnff')} (or apt-get install xtb)"
    if calc_id == "gfn0":
        from .gfn0 import PARAM_FILE, param_dir

        if not module_present("xtb"):
            return None, (f"needs the xtb Python API: {pip_command('xtb')} (bundles libxtb 6.5.1), plus "
                          f"{PARAM_FILE} (apt-get install xtb puts it in /usr/share/xtb, or set XTBPATH); "
                          f"{GFN0_WHY_NOT_OTHERS}")
        if param_dir() is None:
            return None, (f"xtb Python API installed, but {PARAM_FILE} was not found in XTBPATH or "
                          "/usr/share/xtb: apt-get install xtb, or set XTBPATH to a folder holding it")
        return "xtb-python", "xtb Python API (libxtb 6.5.1), molecules only"
    if calc_id == "uff":
        return None, UFF_REASON
    if calc_id in M.MODEL_CALCULATORS:
        package, install = ML_PACKAGES[calc_id]
        if not module_present(package) or not module_present("torch"):
            return None, f"{SPECS[calc_id].name} is not installed: pip install torch==2.13.0 && pip install {install}"
        models, default = M.available(calc_id)
        if not models:
            return None, f"no {SPECS[calc_id].name} model on this server: {M.where_to_put(calc_id)}"
        what = f"model {default}" if default else f"{len(models)} models (pick one with calculator_params.model)"
        return calc_id if calc_id != "m3gnet" else "matgl", f"{ML_ENGINE_NAMES[calc_id]}, {what}"
    return None, "unknown calculator"


def describe_calculator(calc_id: str) -> dict[str, Any]:
    spec = SPECS[calc_id]
    if calc_id == "uff":
        # Available wherever the studio runs; the worker itself never runs it (check_calculator).
        return {"id": spec.id, "name": spec.name, "kind": spec.kind, "available": True, "status_message": None,
                "engine": UFF_ENGINE, "supports_pbc": False, "elements": spec.elements, "models": None,
                "runs_in": "browser"}
    engine, msg = _engine(calc_id)
    supports_pbc = spec.supports_pbc and engine != "xtb"
    return {
        "id": spec.id,
        "name": spec.name,
        "kind": spec.kind,
        "available": engine is not None,
        "status_message": None if engine else msg,
        "engine": msg if engine else None,
        "supports_pbc": supports_pbc,
        "elements": spec.elements,
        "models": M.listing(calc_id),
        "runs_in": "server",
    }


OPTIMIZERS = {
    "bfgs": ("BFGS", "minimizer", "ASE's BFGS quasi-Newton minimizer"),
    "tr_min": ("Trust-radius minimizer", "minimizer", "Sella, order 0"),
    "tr_ts": ("Transition-state search", "saddle point", "Sella, order 1"),
    "irc": ("Intrinsic reaction coordinate", "reaction path", "Sella IRC"),
}
SELLA_INSTALL = "pip install sella"


def optimizer_status(opt_id: str) -> tuple[bool, str | None]:
    if opt_id == "bfgs":
        return True, None
    if module_present("sella"):
        return True, None
    return False, f"{opt_id} needs the Sella library, which is not installed: {SELLA_INSTALL}"


def describe_optimizer(opt_id: str) -> dict[str, Any]:
    name, kind, desc = OPTIMIZERS[opt_id]
    ok, msg = optimizer_status(opt_id)
    return {"id": opt_id, "name": name, "kind": kind, "description": desc, "available": ok,
            "status_message": msg}


# ---------------------------------------------------------------------------------------------
# building calculators

_cache: dict[tuple, Any] = {}
_cache_lock = threading.Lock()


def _device(params: dict[str, Any]) -> str:
    device = str(params.get("device") or os.environ.get("ATOMSTUDIO_DEVICE") or "cpu")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise WorkerError("MALFORMED_REQUEST", f"calculator_params.device must be cpu or cuda, got {device!r}",
                          {"fields": ["calculator_params.device"]})
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise WorkerError("CALCULATOR_UNAVAILABLE", "device cuda requested but torch sees no CUDA device "
                              "(this torch build or machine has none); use device cpu")
    return device


def _cached(key: tuple, build: Callable[[], Any]) -> Any:
    with _cache_lock:
        if key not in _cache:
            log.info("loading %s", key)
            _cache[key] = build()
        return _cache[key]


def _charge_mult(meta) -> tuple[int, int | None]:
    charge = int(round(meta.charge)) if meta is not None else 0
    mult = meta.spin_multiplicity if meta is not None and meta.is_molecule else None
    return charge, mult


@dataclass
class Prepared:
    calc: Any
    engine: str
    elements: list[str] | None  # the loaded model's element list, when the model decides


def check_calculator(calc_id: str, params: dict[str, Any]) -> tuple[CalcSpec, str, M.ModelEntry | None]:
    """The calculator, its engine and (for ML potentials) the allowlisted model the request picked."""
    if calc_id not in SPECS:
        raise WorkerError("UNKNOWN_CALCULATOR", f"unknown calculator {calc_id!r}; known: {', '.join(SPECS)}")
    if "model_path" in params:  # refused for every calculator: callers never name files on the server
        M.resolve(calc_id, params)
    engine, msg = _engine(calc_id, params)
    if calc_id == "uff":
        raise WorkerError("CALCULATOR_UNAVAILABLE", UFF_REASON)
    if engine is None:
        raise WorkerError("CALCULATOR_UNAVAILABLE", f"{calc_id} is unavailable: {msg}")
    model = M.resolve(calc_id, params) if calc_id in M.MODEL_CALCULATORS else None
    return SPECS[calc_id], engine, model


def check_system(spec: CalcSpec, engine: str, atoms, elements: list[str] | None) -> None:
    """Elements and periodicity, before any work starts."""
    allowed = elements if elements is not None else spec.elements
    symbols = sorted(set(atoms.get_chemical_symbols()))
    if allowed is not None:
        bad = [s for s in symbols if s not in allowed]
        if bad:
            raise WorkerError(
                "UNSUPPORTED_ELEMENTS",
                f"{spec.id} does not support {', '.join(bad)} (supported: {', '.join(allowed)})",
                {"unsupported": bad, "supported": allowed},
            )
    if atoms.pbc.any() and (not spec.supports_pbc or engine == "xtb"):
        raise WorkerError(
            "UNSUPPORTED_ELEMENTS",
            f"{spec.id} via {engine} cannot do periodic structures; send a molecule or use another calculator",
            {"periodic": True},
        )


def load_chgnet(entry: M.ModelEntry):
    """A CHGNet model from an allowlisted checkpoint, read with weights_only=True.

    CHGNet's own `from_file` unpickles with weights_only=False; its checkpoints are plain state
    dictionaries, so the restricted loader reads them and no file can run code. Packaged weights
    get the keyword arguments `CHGNet.load` gives them (the 0.2.0 model has an output bias).
    """
    import torch
    from chgnet.model import CHGNet

    state = torch.load(entry.path, map_location=torch.device("cpu"), weights_only=True)
    kwargs: dict[str, Any] = {}
    if entry.source == "package":
        kwargs = {"mlp_out_bias": entry.id == "0.2.0", "version": entry.id}
    return CHGNet.from_dict(state["model"], **kwargs)


def build(calc_id: str, engine: str, params: dict[str, Any], meta=None, model: M.ModelEntry | None = None) -> Prepared:
    """An ASE calculator for one request. Heavy models come from the per-process cache."""
    charge, mult = _charge_mult(meta)
    charge = int(params.get("charge", charge))
    if params.get("multiplicity") is not None:
        mult = int(params["multiplicity"])
    if calc_id == "emt":
        from ase.calculators.emt import EMT

        return Prepared(EMT(), engine, None)
    if calc_id in ("gfn2", "gfn1", "gfnff") and engine == "xtb":
        from .xtb_program import XTBProgram

        uhf = (mult - 1) if mult else 0
        return Prepared(XTBProgram(method=calc_id, charge=charge, uhf=uhf), engine, None)
    if calc_id in ("gfn2", "gfn1"):
        from tblite.ase import TBLite

        kw: dict[str, Any] = {"method": "GFN2-xTB" if calc_id == "gfn2" else "GFN1-xTB", "verbosity": 0,
                              "charge": charge}
        if mult:
            kw["multiplicity"] = mult
        if params.get("accuracy") is not None:
            kw["accuracy"] = float(params["accuracy"])
        if params.get("electronic_temperature") is not None:
            kw["electronic_temperature"] = float(params["electronic_temperature"])
        return Prepared(TBLite(**kw), engine, None)
    if calc_id == "gfn0":
        from .gfn0 import GFN0

        kw0: dict[str, Any] = {"charge": charge, "uhf": (mult - 1) if mult else 0}
        for key in ("accuracy", "electronic_temperature"):
            if params.get(key) is not None:
                kw0[key] = float(params[key])
        return Prepared(GFN0(**kw0), engine, None)
    if calc_id == "gfnff":
        from gfnff import GFNFF

        return Prepared(GFNFF(charge=charge), engine, None)
    if model is None:
        raise WorkerError("INTERNAL_ERROR", f"{calc_id} needs a model entry")
    if calc_id == "chgnet":
        device = _device(params)
        entry = model

        def load_calc():
            from chgnet.model.dynamics import CHGNetCalculator

            return CHGNetCalculator(model=load_chgnet(entry), use_device=device)

        try:
            # the calculator (and its model) is kept: reset() drops results of the last structure
            calc = _cached(("chgnet", entry.path, device), load_calc)
        except Exception as exc:  # an unreadable file is reported, not a crash
            raise WorkerError("CALCULATOR_UNAVAILABLE", f"could not load CHGNet model {entry.id}: {exc}") from exc
        calc.reset()
        return Prepared(calc, engine, None)
    if calc_id == "mace":
        device = _device(params)
        dtype = str(params.get("dtype", "float64"))
        if dtype not in ("float64", "float32"):
            raise WorkerError("MALFORMED_REQUEST", f"calculator_params.dtype must be float64 or float32, got {dtype!r}",
                              {"fields": ["calculator_params.dtype"]})
        mace_path = model.path

        def load():
            from pathlib import Path

            from mace.calculators import MACECalculator

            # a MACE model file is a whole pickled torch module (mace-torch loads it with
            # weights_only=False): only allowlisted server files get here. A Path, not a str,
            # so MACECalculator does not glob it.
            return MACECalculator(model_paths=Path(mace_path), device=device, default_dtype=dtype)

        try:
            calc = _cached(("mace", os.path.abspath(mace_path), device, dtype), load)
        except Exception as exc:
            raise WorkerError("CALCULATOR_UNAVAILABLE", f"could not load MACE model {model.id}: {exc}") from exc
        calc.reset()
        elements = [chemical_symbols[int(z)] for z in calc.z_table.zs]
        return Prepared(calc, engine, elements)
    if calc_id == "m3gnet":
        device = _device(params)
        m3g_path = model.path

        def load():
            import matgl
            from matgl.ext.ase import PESCalculator

            # matgl reads model.pt and state.pt with weights_only=True; the folder is checked to
            # hold all three files, so matgl never falls back to a download from its hub
            pot = matgl.load_model(m3g_path)
            if device != "cpu":
                pot = pot.to(device)
            return PESCalculator(pot, stress_unit="eV/A3")

        try:
            calc = _cached(("m3gnet", os.path.abspath(m3g_path), device), load)
        except Exception as exc:
            raise WorkerError("CALCULATOR_UNAVAILABLE", f"could not load M3GNet model {model.id}: {exc}") from exc
        calc.reset()
        elements = list(getattr(calc.potential.model, "element_types", None) or []) or None
        return Prepared(calc, engine, elements)
    raise WorkerError("UNKNOWN_CALCULATOR", f"unknown calculator {calc_id!r}")


def box_molecule(atoms) -> None:
    """Give a molecule a cell for models that need one (images far beyond the model cutoff)."""
    extent = np.ptp(atoms.get_positions(), axis=0)
    atoms.set_cell(np.diag(extent + 2 * MOLECULE_BOX_PADDING))
    atoms.set_pbc(True)
