"""The server-side allowlist of machine-learned models (MACE, CHGNet, M3GNet), by id.

A request picks a model with `calculator_params.model` (an id from this list) and can never name a
file: model files are pickles, and unpickling runs code, so only files the operator put on the
server may ever reach a loader. The list is made of:

- `package`: models shipped inside an installed package (CHGNet's pretrained weights), found from
  the package's folder without importing it;
- `models_dir`: entries of `$ATOMSTUDIO_MODELS_DIR/<calculator>/` (a file for mace and chgnet, a
  saved matgl directory with model.json, model.pt and state.pt for m3gnet); the id is the entry's
  name without a known model suffix (`small.model` -> `small`);
- `environment`: the operator's `ATOMSTUDIO_MACE_MODEL` / `ATOMSTUDIO_CHGNET_MODEL` /
  `ATOMSTUDIO_M3GNET_MODEL`, which is then the calculator's default.

The folder is read on every request (cheap), so a model dropped into it is usable at once.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from dataclasses import dataclass

from .errors import WorkerError

log = logging.getLogger("atomstudio_worker")

MODEL_CALCULATORS = ("mace", "chgnet", "m3gnet")
MODEL_ENV = {"mace": "ATOMSTUDIO_MACE_MODEL", "chgnet": "ATOMSTUDIO_CHGNET_MODEL",
             "m3gnet": "ATOMSTUDIO_M3GNET_MODEL"}
MODELS_DIR_ENV = "ATOMSTUDIO_MODELS_DIR"
# stripped from file names to make ids; the longest first (`.pth.tar` before `.tar` could matter)
MODEL_SUFFIXES = (".pth.tar", ".model", ".pth", ".pt", ".ckpt")
MATGL_FILES = ("model.json", "model.pt", "state.pt")
# what an id may look like: ids are only ever looked up in the list, never joined into a path
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
CHGNET_DEFAULT = "0.3.0"


@dataclass(frozen=True)
class ModelEntry:
    id: str
    path: str
    source: str  # package | models_dir | environment


def _model_id(name: str) -> str:
    for suffix in MODEL_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _is_model_entry(calc_id: str, path: str) -> bool:
    if calc_id == "m3gnet":
        return os.path.isdir(path) and all(os.path.isfile(os.path.join(path, f)) for f in MATGL_FILES)
    return os.path.isfile(path)


def _packaged(calc_id: str) -> dict[str, ModelEntry]:
    """CHGNet's weights inside its package: pretrained/<version>/<one>.pth.tar, found without importing it."""
    if calc_id != "chgnet":
        return {}
    try:
        spec = importlib.util.find_spec("chgnet")
    except (ImportError, ValueError):
        return {}
    if spec is None or not spec.submodule_search_locations:
        return {}
    root = os.path.join(list(spec.submodule_search_locations)[0], "pretrained")
    out: dict[str, ModelEntry] = {}
    if not os.path.isdir(root):
        return out
    for version in sorted(os.listdir(root)):
        folder = os.path.join(root, version)
        files = sorted(f for f in os.listdir(folder) if f.endswith(".pth.tar")) if os.path.isdir(folder) else []
        if len(files) == 1 and ID_PATTERN.match(version):
            out[version] = ModelEntry(version, os.path.join(folder, files[0]), "package")
    return out


def _from_models_dir(calc_id: str) -> dict[str, ModelEntry]:
    base = os.environ.get(MODELS_DIR_ENV)
    if not base:
        return {}
    folder = os.path.join(base, calc_id)
    if not os.path.isdir(folder):
        return {}
    out: dict[str, ModelEntry] = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("."):
            continue
        path = os.path.join(folder, name)
        mid = _model_id(name) if calc_id != "m3gnet" else name
        if not ID_PATTERN.match(mid) or not _is_model_entry(calc_id, path):
            continue
        if mid in out:
            log.warning("models folder: %s and %s give the same id %r; keeping the first", out[mid].path, path, mid)
            continue
        out[mid] = ModelEntry(mid, path, "models_dir")
    return out


def _from_environment(calc_id: str) -> ModelEntry | None:
    path = os.environ.get(MODEL_ENV[calc_id])
    if not path:
        return None
    name = os.path.basename(os.path.normpath(path))
    mid = _model_id(name) if calc_id != "m3gnet" else name
    return ModelEntry(mid if ID_PATTERN.match(mid) else "environment", path, "environment")


def available(calc_id: str) -> tuple[dict[str, ModelEntry], str | None]:
    """(models by id, the default id or None). The environment's model is the default; for
    CHGNet the packaged 0.3.0; otherwise the only model, if there is exactly one."""
    models = {**_packaged(calc_id), **_from_models_dir(calc_id)}
    env_entry = _from_environment(calc_id)
    if env_entry is not None:
        models[env_entry.id] = env_entry
        return models, env_entry.id
    if calc_id == "chgnet" and CHGNET_DEFAULT in models:
        return models, CHGNET_DEFAULT
    return models, (next(iter(models)) if len(models) == 1 else None)


def listing(calc_id: str) -> list[dict[str, object]] | None:
    if calc_id not in MODEL_CALCULATORS:
        return None
    models, default = available(calc_id)
    return [{"id": m.id, "source": m.source, "default": m.id == default} for m in models.values()]


def where_to_put(calc_id: str) -> str:
    what = "a saved matgl model directory (model.json, model.pt, state.pt)" if calc_id == "m3gnet" else "a model file"
    return (f"put {what} in $ATOMSTUDIO_MODELS_DIR/{calc_id}/ (and pick it with calculator_params.model), "
            f"or set {MODEL_ENV[calc_id]} on the server; models cannot be downloaded here")


def resolve(calc_id: str, params: dict) -> ModelEntry:
    """The allowlisted model a request asks for. A path from the request is refused outright."""
    if "model_path" in params:
        raise WorkerError("MODEL_PATH_NOT_ALLOWED",
                          "calculator_params.model_path is not accepted: requests pick a server-side model by id "
                          "with calculator_params.model (GET /api/optimize/calculators lists them)",
                          {"fields": ["calculator_params.model_path"]})
    wanted = params.get("model")
    if wanted is not None and not isinstance(wanted, str):
        raise WorkerError("MALFORMED_REQUEST", "calculator_params.model must be a string (a model id)",
                          {"fields": ["calculator_params.model"]})
    models, default = available(calc_id)
    ids = list(models)
    if wanted is None:
        if default is None:
            if not ids:
                raise WorkerError("CALCULATOR_UNAVAILABLE", f"no {calc_id} model on this server: {where_to_put(calc_id)}")
            raise WorkerError("UNKNOWN_MODEL", f"several {calc_id} models are available; choose one with "
                              f"calculator_params.model: {', '.join(ids)}", {"available": ids})
        return models[default]
    entry = models.get(wanted)
    if entry is None:
        shown = wanted if ID_PATTERN.match(wanted) else "(not a model id)"
        raise WorkerError("UNKNOWN_MODEL", f"unknown {calc_id} model {shown}; available: {', '.join(ids) or 'none'}",
                          {"available": ids})
    return entry
