"""`hetero_lateral_build`: two slabs joined side by side along a matched edge. The match's own n1
and n2 are used (checked against the inputs), both sides are strained to the mean edge length, and
both joints of the periodic cell get the buffer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _hetero as h
from .hetero_lateral import edge_lengths

METHOD = "hetero_lateral_build"


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    from pymatgen.core import Lattice, Structure

    h.pymatgen()
    p = params["params"]
    sp = params["search_params"]
    m = params["match"]
    axis = sp["interface_axis"]
    sa = h.structure(params["slab_A"], "slab_A")
    sb = h.structure(params["slab_B"], "slab_B")
    la, lb, a, b = edge_lengths(sa, sb, axis)
    n1, n2 = int(m["n1"]), int(m["n2"])
    if n1 < 1 or n2 < 1:
        raise WorkerError("MATCH_MISMATCH", "match.n1 and match.n2 must be at least 1")
    for key, made in (("edge_length_A", n1 * la), ("edge_length_B", n2 * lb)):
        if key in m and abs(float(m[key]) - made) > 1e-3:
            raise WorkerError("MATCH_MISMATCH", f"match.{key} is {m[key]} but these slabs give {made:.4f} Å: "
                              "the match comes from a search on other slabs or another axis", {"field": key})
    other = 1 - axis
    wa, wb = p["width_A"], p["width_B"]
    h.check_atoms(len(a) * n1 * wa + len(b) * n2 * wb, "the lateral interface")
    rep_a = [1, 1, 1]
    rep_a[axis], rep_a[other] = n1, wa
    rep_b = [1, 1, 1]
    rep_b[axis], rep_b[other] = n2, wb
    big_a, big_b = a * rep_a, b * rep_b
    ma, mb = big_a.lattice.matrix, big_b.lattice.matrix
    # Everything in A's frame: edge direction e, across direction t (in plane, perpendicular to e),
    # normal n (A's stripped c). B's cell is re-expressed in that frame; both edges become the mean.
    length = (np.linalg.norm(ma[axis]) + np.linalg.norm(mb[axis])) / 2.0

    def frame(m):
        e = m[axis] / np.linalg.norm(m[axis])
        par = float(np.dot(m[other], e))
        perp_vec = m[other] - par * e
        return e, par, float(np.linalg.norm(perp_vec)), perp_vec / np.linalg.norm(perp_vec), m[2]

    e, par_a, perp_a, t, c_a = frame(ma)
    _, par_b, perp_b, _, c_b = frame(mb)
    n = c_a / np.linalg.norm(c_a)
    edge = e * length
    other_a = par_a * e + perp_a * t
    other_b = par_b * e + perp_b * t
    buffer = p["buffer"]

    def place(frac, other, c_len):
        cell = np.zeros((3, 3))
        cell[axis], cell[other_index] = edge, other
        cell[2] = n * c_len
        return frac @ cell

    other_index = other
    xyz_a = place(big_a.frac_coords, other_a, float(np.linalg.norm(c_a)))
    xyz_b = place(big_b.frac_coords, other_b, float(np.linalg.norm(c_b))) + other_a + t * buffer
    xyz = np.vstack([xyz_a, xyz_b])
    heights = xyz @ n
    c_len = float(heights.max() - heights.min()) + p["vacuum"]
    xyz = xyz - np.outer(heights.min() - p["vacuum"] / 2.0 + np.zeros_like(heights), n)
    vecs = np.zeros((3, 3))
    vecs[axis], vecs[other] = edge, other_a + other_b + 2 * buffer * t
    vecs[2] = n * c_len
    lattice = Lattice(vecs)
    labels = ["A"] * len(big_a) + ["B"] * len(big_b)
    out = Structure(lattice, list(big_a.species) + list(big_b.species), xyz, coords_are_cartesian=True,
                    to_unit_cell=False, site_properties={"interface_label": labels})
    return {
        "structure": h.structure_json(out), "n_atoms": len(out), "n_atoms_A": len(big_a), "n_atoms_B": len(big_b),
        "interface_length": float(length), "strain": float(abs(n1 * la - n2 * lb) / length * 100.0),
        "strain_A": float((length / (n1 * la) - 1) * 100.0), "strain_B": float((length / (n2 * lb) - 1) * 100.0),
        "match_id": m.get("match_id"),
        "message": f"lateral interface: {len(big_a)} A + {len(big_b)} B atoms along a {length:.3f} Å edge",
    }
