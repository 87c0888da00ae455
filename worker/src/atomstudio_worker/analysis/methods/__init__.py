"""The analysis methods, found by module: every module here that defines `METHOD` (the protocol
method name) and `run(params, context, cancel) -> dict` is served. Adding a method is adding a
module; nothing else needs to change."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable

Method = Callable[[dict[str, Any], Any, Any], dict[str, Any]]


def _discover() -> dict[str, Method]:
    found: dict[str, Method] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        name = getattr(module, "METHOD", None)
        if isinstance(name, str):
            found[name] = module.run
    return found


METHODS: dict[str, Method] = _discover()
