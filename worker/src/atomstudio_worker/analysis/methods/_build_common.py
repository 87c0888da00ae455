"""Shared by the `/api/build` methods: structures in and out, and the supercell whose site order
follows pymatgen's `make_supercell` (all images of site 0 first, then of site 1, ...)."""

from __future__ import annotations

from typing import Any

from ...errors import WorkerError
from ..store import unavailable


def structure_in(d: dict[str, Any]):
    try:
        from pymatgen.core import Structure
    except ImportError as exc:
        raise unavailable("pymatgen", exc) from None
    # the service has read and checked the structure already; this is its canonical dictionary
    return Structure.from_dict(d)


def structure_out(s) -> dict[str, Any]:
    return s.as_dict()


def defects_module():
    try:
        import pymatgen.analysis.defects.generators as generators
    except ImportError as exc:
        raise unavailable("pymatgen-analysis-defects", exc) from None
    return generators


def images(scaling: list[int]) -> int:
    return int(scaling[0]) * int(scaling[1]) * int(scaling[2])


def first_image(site_index: int, scaling: list[int]) -> int:
    """Index in the supercell of the first image of a parent-cell site (make_supercell order)."""
    return site_index * images(scaling)


def require_index(i: int, n: int, field: str = "site_index") -> None:
    if i < 0 or i >= n:
        raise WorkerError("INVALID_INDEX", f"{field} {i} is out of range for {n} sites (0 to {n - 1}; -1 for every distinct site)",
                          {"field": field, "value": i, "n_sites": n})


def generated(make, what: str) -> list:
    """Run a pymatgen-analysis-defects generator; a structure it cannot analyse is a 400 of the request."""
    try:
        return list(make())
    except WorkerError:
        raise
    except Exception as exc:  # noqa: BLE001 - the generators raise anything from ValueError to QhullError
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise WorkerError("INVALID_STRUCTURE", f"pymatgen-analysis-defects could not find {what} in this structure: {reason}",
                          {"reason": reason}) from None


def require_ordered(host, what: str) -> None:
    if not host.is_ordered:
        raise WorkerError("INVALID_STRUCTURE", f"{what} needs an ordered structure (every site one species of occupancy 1)",
                          {"field": "structure"})
