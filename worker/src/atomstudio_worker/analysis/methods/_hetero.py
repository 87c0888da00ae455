"""Shared by the heterostructure methods (`hetero_*`): ZSL matches as JSON, the slab pipeline, and
pymatgen's strain of a match. Every method takes the chosen match's integer transformations as
sent; nothing is looked up by an index into a list that a second search might order differently.

Conventions (packages/server/src/heterostructure/README.md):
- a slab's surface normal n is the unit vector of a x b, oriented along the side its c points to;
- "stripping vacuum" makes c perpendicular to a, b (c = n x thickness), so gaps and heights are
  measured along the surface normal whatever the input cell's c looks like;
- strain is pymatgen's: the Green-Lagrange strain of `ZSLMatch.match_transformation` (the film
  superlattice onto the substrate's), reported in % as its von Mises value, with its components.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import WorkerError
from ..store import unavailable
from ._common import check_cancel

MAX_ATOMS = 10_000
"""Largest structure a heterostructure method builds (decisions: every input capped before work)."""
MAX_AREA_MULTIPLE = 400
"""Largest max_area / unit-cell area: ZSL enumerates every superlattice up to this many cells."""


def pymatgen():
    try:
        import pymatgen.analysis.interfaces.zsl  # noqa: F401
    except ImportError as exc:
        raise unavailable("pymatgen", exc) from None


def structure(raw: Any, what: str):
    """A pymatgen Structure from the service's pymatgen dictionary (validated there already)."""
    from pymatgen.core import Structure

    try:
        s = Structure.from_dict(raw)
    except Exception as exc:  # a dictionary the core accepted but pymatgen cannot read
        raise WorkerError("INVALID_STRUCTURE", f"{what}: {str(exc)[:200] or type(exc).__name__}", {"field": what}) from None
    if len(s) == 0:
        raise WorkerError("EMPTY_STRUCTURES", f"{what} has no atoms", {"field": what})
    if len(s) > MAX_ATOMS:
        raise WorkerError("TOO_MANY_ATOMS", f"{what} has {len(s)} atoms (at most {MAX_ATOMS})", {"field": what})
    return s


def check_atoms(n: int, what: str) -> None:
    if n > MAX_ATOMS:
        raise WorkerError("TOO_MANY_ATOMS", f"{what} would have {n} atoms (at most {MAX_ATOMS})",
                          {"n_atoms": n, "max": MAX_ATOMS})


def surface_normal(lattice) -> np.ndarray:
    """Unit a x b, pointing to the side of the plane that c points to."""
    m = lattice.matrix
    n = np.cross(m[0], m[1])
    norm = np.linalg.norm(n)
    if norm < 1e-8:
        raise WorkerError("INVALID_CELL", "a and b are parallel: the cell has no surface plane")
    n = n / norm
    return n if np.dot(n, m[2]) >= 0 else -n


def strip_vacuum(slab, what: str):
    """The slab with c perpendicular to a, b and as long as its thickness + 1 Å (0.5 Å each side).

    Atoms that straddle the c boundary are unwrapped first (the slab is cut at its largest empty
    stretch of fractional c), so a slab centred on the cell edge keeps its thickness. In-plane
    positions are kept as Cartesian; the lowest atom sits 0.5 Å above the cell's origin plane."""
    from pymatgen.core import Lattice, Structure

    fc = np.mod(slab.frac_coords[:, 2], 1.0)
    order = np.sort(fc)
    gaps = np.diff(np.concatenate([order, [order[0] + 1.0]]))
    cut = order[int(np.argmax(gaps))]  # the atom below the largest gap is the slab's top
    frac = slab.frac_coords.copy()
    frac[:, 2] = np.where(fc > cut + 1e-9, fc - 1.0, fc)
    cart = frac @ slab.lattice.matrix
    n = surface_normal(slab.lattice)
    heights = cart @ n
    thickness = max(float(heights.max() - heights.min()), 0.1)
    cart = cart - (heights.min() - 0.5) * n
    m = slab.lattice.matrix
    lattice = Lattice([m[0], m[1], n * (thickness + 1.0)])
    try:
        return Structure(lattice, slab.species, cart, coords_are_cartesian=True, to_unit_cell=False,
                         site_properties=None)
    except Exception as exc:
        raise WorkerError("INVALID_STRUCTURE", f"{what}: {str(exc)[:200]}", {"field": what}) from None


def zsl_generator(p: dict[str, Any]):
    from pymatgen.analysis.interfaces.zsl import ZSLGenerator

    return ZSLGenerator(max_area_ratio_tol=p["max_area_ratio_tol"], max_area=p["max_area"],
                        max_length_tol=p["max_length_tol"], max_angle_tol=p["max_angle_tol"], bidirectional=False)


def check_area_budget(p: dict[str, Any], *areas: float) -> None:
    """ZSL walks every superlattice up to max_area: refuse a search that would walk too many."""
    smallest = min(areas)
    if smallest < 1e-6:
        raise WorkerError("INVALID_CELL", "a surface cell has zero area")
    multiple = p["max_area"] / smallest
    if multiple > MAX_AREA_MULTIPLE:
        raise WorkerError("AREA_TOO_LARGE",
                          f"max_area {p['max_area']} Å² is {multiple:.0f} unit cells of {smallest:.3f} Å²; "
                          f"at most {MAX_AREA_MULTIPLE} cells are searched",
                          {"max_area": p["max_area"], "max_area_allowed": MAX_AREA_MULTIPLE * smallest})


def match_strain(film_sl, substrate_sl) -> tuple[float, list[list[float]]]:
    """pymatgen's strain of a match: von Mises of the Green-Lagrange strain (as a fraction) and the tensor."""
    from pymatgen.analysis.elasticity.strain import Deformation
    from pymatgen.analysis.interfaces.zsl import ZSLMatch

    m = ZSLMatch(film_sl_vectors=np.asarray(film_sl, float), substrate_sl_vectors=np.asarray(substrate_sl, float),
                 film_vectors=None, substrate_vectors=None, film_transformation=None, substrate_transformation=None)
    try:
        gl = Deformation(m.match_transformation).green_lagrange_strain
    except np.linalg.LinAlgError:
        raise WorkerError("MATCH_MISMATCH", "the superlattice vectors are parallel") from None
    return float(gl.von_mises_strain), np.asarray(gl).tolist()


def strains(film_sl: np.ndarray, substrate_sl: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Areas, von Mises strains and Green-Lagrange tensors of N matches at once ((N, 2, 3) inputs):
    pymatgen's `ZSLMatch.match_area`, `match_transformation` and `Deformation.green_lagrange_strain`
    written for arrays (the same operations in the same order, so the same numbers)."""
    fc = np.cross(film_sl[:, 0], film_sl[:, 1])
    sc = np.cross(substrate_sl[:, 0], substrate_sl[:, 1])
    f_area = np.sqrt(np.einsum("ni,ni->n", fc, fc))
    s_area = np.sqrt(np.einsum("ni,ni->n", sc, sc))
    fm = np.concatenate([film_sl, fc[:, None, :]], axis=1)
    sm = np.concatenate([substrate_sl, (sc * (f_area / s_area)[:, None])[:, None, :]], axis=1)
    t = np.transpose(np.linalg.solve(fm, sm), (0, 2, 1))
    gl = 0.5 * (np.einsum("nji,njk->nik", t, t) - np.eye(3))
    dev = gl - (np.trace(gl, axis1=1, axis2=2) / 3)[:, None, None] * np.eye(3)
    vm = np.sqrt(np.sum(dev * dev, axis=(1, 2)) * 2 / 3)
    return f_area, vm, gl


def matches_json(raw: list, film_unit, substrate_unit, film_miller, substrate_miller, n_film: int,
                 n_substrate: int) -> list[dict[str, Any]]:
    """The matches as the service reports them: the superlattice vectors pymatgen found, the integer
    matrices that make them from the unit cells, the area and pymatgen's strain."""
    if not raw:
        return []
    f_sl = np.array([m.film_sl_vectors for m in raw], dtype=float)
    s_sl = np.array([m.substrate_sl_vectors for m in raw], dtype=float)
    tf = f_sl @ np.linalg.pinv(np.asarray(film_unit, float))
    ts = s_sl @ np.linalg.pinv(np.asarray(substrate_unit, float))
    if not (np.allclose(tf, np.round(tf), atol=1e-6) and np.allclose(ts, np.round(ts), atol=1e-6)):
        raise WorkerError("MATCH_MISMATCH", "a superlattice is not an integer multiple of its cell")
    tf, ts = np.round(tf).astype(int), np.round(ts).astype(int)
    area, vm, gl = strains(f_sl, s_sl)
    s_area = np.linalg.norm(np.cross(s_sl[:, 0], s_sl[:, 1]), axis=1)
    det_f = np.abs(np.round(np.linalg.det(tf))).astype(int)
    det_s = np.abs(np.round(np.linalg.det(ts))).astype(int)
    return [{
        "match_id": i,
        "match_area": float(area[i]),
        "substrate_area": float(s_area[i]),
        "film_miller": film_miller,
        "substrate_miller": substrate_miller,
        "film_transformation": tf[i].tolist(),
        "substrate_transformation": ts[i].tolist(),
        "film_sl_vectors": f_sl[i].tolist(),
        "substrate_sl_vectors": s_sl[i].tolist(),
        "strain": 100.0 * float(vm[i]),
        "von_mises_strain": float(vm[i]),
        "strain_components": gl[i].tolist(),
        "n_atoms_film": int(det_f[i]) * n_film,
        "n_atoms_substrate": int(det_s[i]) * n_substrate,
    } for i in range(len(raw))]


def sent_transform(match: dict[str, Any], key: str) -> np.ndarray:
    t = np.asarray(match[key], dtype=float)
    if t.shape != (2, 2) or not np.allclose(t, np.round(t)):
        raise WorkerError("INVALID_TRANSFORM", f"match.{key} must be a 2x2 integer matrix", {"field": key})
    t = np.round(t).astype(int)
    if abs(round(np.linalg.det(t))) < 1:
        raise WorkerError("INVALID_TRANSFORM", f"match.{key} is singular (determinant 0)", {"field": key})
    if np.abs(t).max() > 100:
        raise WorkerError("INVALID_TRANSFORM", f"match.{key} has entries beyond ±100", {"field": key})
    return t


def check_sent_vectors(match: dict[str, Any], key: str, made: np.ndarray) -> None:
    """The match's superlattice vectors, when sent, must be the ones its transformation makes from
    these inputs: a match from another search (other inputs or Miller indices) is refused."""
    sent = match.get(key)
    if sent is None:
        return
    sent = np.asarray(sent, float)
    if sent.shape != made.shape or not np.allclose(sent, made, atol=1e-4):
        raise WorkerError("MATCH_MISMATCH",
                          f"match.{key} is not what its transformation makes from these inputs: "
                          "the match comes from a search on other structures or parameters",
                          {"field": key, "expected": made.tolist()})


def stack_slabs(substrate, film, ts: np.ndarray, tf: np.ndarray, gap: float, vacuum: float,
                shift: tuple[float, float] = (0.0, 0.0), cancel=None):
    """The slab pipeline: both slabs stripped, made into their superlattices, the film mapped onto
    the substrate's superlattice (in plane) and its normal, stacked `gap` Å above the substrate's
    top along the normal, vacuum split evenly above and below, in-plane coordinates wrapped.

    Returns (structure, n_substrate, n_film, film_sl, substrate_sl) with the superlattice vectors
    in the order the cell uses (swapped together when the transformations were left-handed)."""
    from pymatgen.core import Lattice, Structure

    sub = strip_vacuum(substrate, "substrate")
    fil = strip_vacuum(film, "film")
    check_atoms(len(sub) * abs(round(np.linalg.det(ts))) + len(fil) * abs(round(np.linalg.det(tf))), "the interface")
    ns, nf = surface_normal(sub.lattice), surface_normal(fil.lattice)
    s_sl = ts @ sub.lattice.matrix[:2]
    f_sl = tf @ fil.lattice.matrix[:2]
    if np.dot(np.cross(s_sl[0], s_sl[1]), ns) < 0:
        # a left-handed pair: swap a and b of both superlattices, so the cell stays right-handed
        ts, tf, s_sl, f_sl = ts[::-1], tf[::-1], s_sl[::-1], f_sl[::-1]
    check_cancel(cancel)
    sub_sc = sub.copy()
    sub_sc.make_supercell(np.array([[*ts[0], 0], [*ts[1], 0], [0, 0, 1]]), to_unit_cell=True)
    fil_sc = fil.copy()
    fil_sc.make_supercell(np.array([[*tf[0], 0], [*tf[1], 0], [0, 0, 1]]), to_unit_cell=True)
    # The linear map taking the film's superlattice vectors and normal to the substrate's
    mapping = np.column_stack([s_sl[0], s_sl[1], ns]) @ np.linalg.inv(np.column_stack([f_sl[0], f_sl[1], nf]))
    sub_xyz = sub_sc.cart_coords
    fil_xyz = fil_sc.cart_coords @ mapping.T
    sub_h = sub_xyz @ ns
    fil_h = fil_xyz @ ns
    fil_xyz = fil_xyz + np.outer((sub_h.max() + gap) - fil_h.min() + np.zeros_like(fil_h), ns)
    fil_xyz = fil_xyz + shift[0] * s_sl[0] + shift[1] * s_sl[1]
    xyz = np.vstack([sub_xyz, fil_xyz])
    heights = xyz @ ns
    height = float(heights.max() - heights.min())
    c_len = height + vacuum
    if c_len < 1e-3:
        raise WorkerError("INVALID_VACUUM", "the interface has no thickness and no vacuum")
    xyz = xyz - np.outer(heights.min() - vacuum / 2.0 + np.zeros_like(heights), ns)
    lattice = Lattice([s_sl[0], s_sl[1], ns * c_len])
    frac = lattice.get_fractional_coords(xyz)
    frac[:, :2] = np.mod(frac[:, :2], 1.0)
    frac[:, :2] = np.where(frac[:, :2] > 1.0 - 1e-12, 0.0, frac[:, :2])
    labels = ["substrate"] * len(sub_sc) + ["film"] * len(fil_sc)
    out = Structure(lattice, list(sub_sc.species) + list(fil_sc.species), frac, to_unit_cell=False,
                    site_properties={"interface_label": labels})
    return out, len(sub_sc), len(fil_sc), f_sl, s_sl


def structure_json(s) -> dict[str, Any]:
    """A plain pymatgen Structure dictionary (an Interface's extra fields dropped)."""
    from pymatgen.core import Structure

    return Structure.from_sites(s.sites).as_dict() if type(s) is not Structure else s.as_dict()


def area(lattice) -> float:
    m = lattice.matrix
    return float(np.linalg.norm(np.cross(m[0], m[1])))


class Deadline:
    """A wall-clock budget checked between steps of a long loop (besides cancellation)."""

    def __init__(self, seconds: float, cancel=None):
        self.end = time.monotonic() + seconds
        self.cancel = cancel

    def check(self) -> None:
        check_cancel(self.cancel)
        if time.monotonic() > self.end:
            raise WorkerError("DEADLINE_EXCEEDED", "the heterostructure search took too long; lower max_area or max_results")


def miller(p: dict[str, Any], key: str) -> tuple[int, int, int]:
    m = tuple(int(x) for x in p[key])
    if all(x == 0 for x in m):
        raise WorkerError("INVALID_MILLER", f"{key} is (0, 0, 0)", {"field": key})
    return m  # type: ignore[return-value]


def guarded(run):
    """pymatgen's refusals (ValueError, singular matrices) on inputs it cannot handle become a coded
    400 with its short reason, instead of a 500; anything else is still a bug and stays a 500."""
    import functools

    @functools.wraps(run)
    def wrapper(params, context, cancel):
        try:
            return run(params, context, cancel)
        except WorkerError:
            raise
        except (ValueError, np.linalg.LinAlgError, ZeroDivisionError) as exc:
            reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            raise WorkerError("INTERFACE_FAILED", f"the interface cannot be made from these inputs: {reason}") from None

    return wrapper
