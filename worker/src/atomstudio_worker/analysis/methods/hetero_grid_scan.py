"""`hetero_grid_scan`: copies of a built interface with the film shifted in plane over an
nx x ny grid of the interface cell, reduced to the symmetry-distinct shifts.

Two shifts t and t' give the same interface (up to a rigid motion) when t' = R t + tau - sigma for
an operation (R, tau) of the substrate part and (R, sigma) of the film part with the same in-plane
rotation R (both found by spglib through pymatgen, in the interface's own fractional frame; pure
translations are the R = 1 case). Each class is returned once with its multiplicity."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _hetero as h

METHOD = "hetero_grid_scan"
MAX_PAIRS = 200_000


def _planar_ops(part, symprec: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """In-plane operations (R 2x2, t 2) of a part of the interface that keep z (no flip, no z shift)."""
    from pymatgen.symmetry.analyzer import SpacegroupAnalyzer

    try:
        ops = SpacegroupAnalyzer(part, symprec=symprec).get_symmetry_operations(cartesian=False)
    except Exception:  # spglib gives up on some inputs: then the identity only, said in the reply
        return [(np.eye(2), np.zeros(2))]
    out = []
    for op in ops:
        r, t = op.rotation_matrix, op.translation_vector
        if np.allclose(r[2, :2], 0, atol=1e-4) and np.allclose(r[:2, 2], 0, atol=1e-4) and abs(r[2, 2] - 1) < 1e-4 \
                and abs(((t[2] + 0.5) % 1.0) - 0.5) < 1e-3:
            out.append((np.round(r[:2, :2]).astype(int), t[:2]))
    return out or [(np.eye(2), np.zeros(2))]


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    from pymatgen.core import Structure

    h.pymatgen()
    p = params["params"]
    iface = h.structure(params["heterostructure"], "heterostructure")
    n = len(iface)
    labels = iface.site_properties.get("interface_label")
    if labels is not None and set(labels) <= {"substrate", "film"} and "film" in labels and "substrate" in labels:
        is_film = np.array([x == "film" for x in labels])
        split = "interface_label"
    else:
        ns = params.get("n_atoms_substrate")
        if ns is None or not (0 < ns < n):
            raise WorkerError("INVALID_INDEX", f"n_atoms_substrate must be between 1 and {n - 1} (the interface has "
                              "no interface_label site property to split it by)", {"n_atoms": n})
        is_film = np.arange(n) >= ns
        split = "n_atoms_substrate"
    nx, ny = p["n_grid_x"], p["n_grid_y"]
    h.check_atoms(n * nx * ny, "the scan's structures together")
    sub = Structure.from_sites([iface[i] for i in range(n) if not is_film[i]])
    fil = Structure.from_sites([iface[i] for i in range(n) if is_film[i]])
    sub_ops = _planar_ops(sub, p["symprec"])
    fil_ops = _planar_ops(fil, p["symprec"])
    h.check_cancel(cancel)
    pairs = [(rs, ts - tf) for rs, ts in sub_ops for rf, tf in fil_ops if np.array_equal(rs, rf)]
    if len(pairs) > MAX_PAIRS:
        pairs = [(r, t) for r, t in pairs if np.array_equal(r, np.eye(2, dtype=int))]
    grid = np.array([(i / nx, j / ny) for i in range(nx) for j in range(ny)])
    rep = np.arange(len(grid))
    # For each grid point, its images; an image on the grid joins the point's class (union-find)
    parent = list(range(len(grid)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r, t in pairs:
        img = np.mod(grid @ r.T + t, 1.0)
        gi, gj = img[:, 0] * nx, img[:, 1] * ny
        on = (np.abs(gi - np.round(gi)) < 1e-3 * nx) & (np.abs(gj - np.round(gj)) < 1e-3 * ny)
        idx = (np.mod(np.round(gi).astype(int), nx)) * ny + np.mod(np.round(gj).astype(int), ny)
        for a, b in zip(np.flatnonzero(on), idx[on]):
            ra, rb = find(int(a)), find(int(b))
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    rep = np.array([find(i) for i in range(len(grid))])
    classes = sorted(set(rep.tolist()))
    m = iface.lattice.matrix
    normal = h.surface_normal(iface.lattice)
    entries = []
    for k in classes:
        fx, fy = grid[k]
        shift = fx * m[0] + fy * m[1]
        shift = shift - np.dot(shift, normal) * normal  # in plane only (zero for cells with c normal to a, b)
        s = iface.copy()
        frac_shift = iface.lattice.get_fractional_coords(shift)
        s.translate_sites(np.flatnonzero(is_film).tolist(), frac_shift, frac_coords=True, to_unit_cell=True)
        entries.append({
            "shift_frac": [float(fx), float(fy)], "shift_cart": shift.tolist(), "multiplicity": int(np.sum(rep == k)),
            "structure": h.structure_json(s), "n_atoms": len(s), "label": f"shift_({fx:.3f},{fy:.3f})",
        })
    total = nx * ny
    return {
        "entries": entries, "n_total_grid": total, "n_irreducible": len(entries),
        "n_symmetry_ops": len(pairs), "reduction_ratio": total / len(entries), "split_by": split,
        "message": f"{nx}x{ny} grid of film shifts: {len(entries)} symmetry-distinct of {total} "
                   f"({len(pairs)} operation pairs of substrate and film)",
    }
