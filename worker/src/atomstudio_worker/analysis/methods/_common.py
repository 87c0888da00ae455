"""Shared by the methods: parsing with pymatgen under coded errors, and small conversions."""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ...errors import WorkerError
from ..store import unavailable

ORBITAL_FAMILIES = {"s": ("s",), "p": ("px", "py", "pz"), "d": ("dxy", "dyz", "dz2", "dxz", "dx2_y2"),
                    "f": ("f_3", "f_2", "f_1", "f0", "f1", "f2", "f3")}


def pymatgen():
    try:
        import pymatgen.io.vasp  # noqa: F401
    except ImportError as exc:
        raise unavailable("pymatgen", exc) from None


def parse(name: str, make: Callable[[], Any]) -> Any:
    """Run a pymatgen parser; anything it raises is INVALID_FILE with a short reason."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make()
    except WorkerError:
        raise
    except MemoryError:
        raise WorkerError("FILE_TOO_LARGE", f"{name} is too large to parse in memory", {"file": name}) from None
    except Exception as exc:  # parsers raise anything from ParseError to IndexError on bad input
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise WorkerError("INVALID_FILE", f"{name} could not be read: {reason}", {"file": name}) from None


def check_cancel(cancel) -> None:
    if cancel is not None and cancel.is_set():
        raise WorkerError("CANCELLED", "cancelled")


def spin_arrays(data: dict, transform: Callable[[Any], Any]) -> dict[str, Any]:
    """`{Spin.up: a, Spin.down: b}` -> `{"up": f(a), "down": f(b)}`."""
    from pymatgen.electronic_structure.core import Spin

    out = {"up": transform(data[Spin.up])}
    if Spin.down in data:
        out["down"] = transform(data[Spin.down])
    return out


def site_indices(structure, sites: list[int] | None, elements: list[str] | None, what: str) -> list[int]:
    n = len(structure)
    if sites is not None:
        bad = [i for i in sites if not isinstance(i, int) or i < 0 or i >= n]
        if bad:
            raise WorkerError("INVALID_INDEX", f"{what}: site index {bad[0]} is out of range (0..{n - 1})",
                              {"indices": bad, "n_sites": n})
        chosen = list(sites)
    else:
        chosen = list(range(n))
    if elements is not None:
        present = {site.specie.symbol for site in structure}
        unknown = [e for e in elements if e not in present]
        if unknown:
            raise WorkerError("UNKNOWN_ELEMENT", f"{what}: element {unknown[0]} is not in the structure",
                              {"elements": unknown, "present": sorted(present)})
        chosen = [i for i in chosen if structure[i].specie.symbol in elements]
    return chosen


def orbital_columns(names: list[str], available: list[str], what: str) -> list[int]:
    """Column indices of orbitals named as families (s, p, d, f) or exactly (px, dxy, ...)."""
    if not names:
        return list(range(len(available)))
    cols: list[int] = []
    for name in names:
        members = ORBITAL_FAMILIES.get(name, (name,))
        found = [i for i, o in enumerate(available) if o in members]
        if not found:
            raise WorkerError("UNKNOWN_ORBITAL", f"{what}: orbital {name!r} is not in the file",
                              {"orbital": name, "available": available})
        cols.extend(i for i in found if i not in cols)
    return cols


def structure_dict(structure) -> dict[str, Any]:
    return structure.as_dict()
