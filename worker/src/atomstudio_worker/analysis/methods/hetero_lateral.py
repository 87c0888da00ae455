"""`hetero_lateral_search` and the shared pieces of the lateral join: 1-D edge matches between two
2-D slabs placed side by side (n1 cells of A against n2 cells of B along one in-plane axis)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _hetero as h

METHOD = "hetero_lateral_search"
MAX_REPEATS = 1000
"""Largest n1 or n2 looked at: max_length / the shorter edge."""


def edge_lengths(slab_a, slab_b, axis: int) -> tuple[float, float, Any, Any]:
    a = h.strip_vacuum(slab_a, "slab_A")
    b = h.strip_vacuum(slab_b, "slab_B")
    return float(a.lattice.abc[axis]), float(b.lattice.abc[axis]), a, b


def lateral_strain(la: float, lb: float) -> float:
    """|n1 L_A - n2 L_B| / mean, in %."""
    return abs(la - lb) / ((la + lb) / 2.0) * 100.0


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    from ...errors import WorkerError

    h.pymatgen()
    p = params["params"]
    sa = h.structure(params["slab_A"], "slab_A")
    sb = h.structure(params["slab_B"], "slab_B")
    la, lb, a, b = edge_lengths(sa, sb, p["interface_axis"])
    n1max, n2max = int(p["max_length"] // la), int(p["max_length"] // lb)
    if max(n1max, n2max) > MAX_REPEATS:
        raise WorkerError("AREA_TOO_LARGE", f"max_length {p['max_length']} Å is more than {MAX_REPEATS} cells of "
                          f"{min(la, lb):.3f} Å", {"max_length": p["max_length"]})
    n1, n2 = np.meshgrid(np.arange(1, n1max + 1), np.arange(1, n2max + 1), indexing="ij")
    ea, eb = n1 * la, n2 * lb
    strain = np.abs(ea - eb) / ((ea + eb) / 2.0) * 100.0
    keep = (ea <= p["max_length"]) & (eb <= p["max_length"]) & (strain <= p["max_strain"])
    ids = np.flatnonzero(keep.ravel())  # match_id: loop order, n1 outer, n2 inner
    rows = [{
        "match_id": int(i), "n1": int(n1.ravel()[i]), "n2": int(n2.ravel()[i]),
        "edge_length_A": float(ea.ravel()[i]), "edge_length_B": float(eb.ravel()[i]),
        "strain_percent": float(strain.ravel()[i]),
        "n_atoms_A": len(a) * int(n1.ravel()[i]), "n_atoms_B": len(b) * int(n2.ravel()[i]),
    } for i in ids]
    rows.sort(key=lambda m: (m["n_atoms_A"] + m["n_atoms_B"], m["strain_percent"], m["match_id"]))
    truncated = len(rows) > p["max_results"]
    rows = rows[: p["max_results"]]
    return {"matches": rows, "n_matches": len(rows), "truncated": truncated,
            "message": f"{len(rows)} edge match(es) along {'ab'[p['interface_axis']]}"
                       f"{' (more exist: raise max_results)' if truncated else ''}"}
