"""Shared by the adsorption methods: pymatgen's `AdsorbateSiteFinder` on one or both surfaces of a
slab, and `add_adsorbate`-style placement along any outward normal with a periodic overlap check.

Coordinates are Cartesian Å throughout. The service validates structures (core `fromDict`) and
caps atoms before anything reaches here; errors here are coded for 400 answers."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...errors import WorkerError
from ..store import unavailable

# pymatgen's names for the kinds it finds, and the site_type names the routes answer
PYMATGEN_KINDS = ("ontop", "bridge", "hollow")
IMAGES = range(-3, 4)


def pymatgen():
    try:
        import pymatgen.analysis.adsorption  # noqa: F401
    except ImportError as exc:
        raise unavailable("pymatgen", exc) from None


def structure(d: dict):
    """The service's compact form `{lattice: 3×3 rows or null, species: [symbol], cart: [[x,y,z]], frac?}`
    (already validated, disorder resolved to the majority element) as a pymatgen Structure/Molecule."""
    from pymatgen.core import Lattice, Molecule, Structure

    if d.get("lattice") is not None:
        if d.get("frac") is not None:  # the caller's own fractional numbers: pymatgen's bits exactly
            return Structure(Lattice(d["lattice"]), d["species"], d["frac"])
        return Structure(Lattice(d["lattice"]), d["species"], d["cart"], coords_are_cartesian=True)
    return Molecule(d["species"], d["cart"], charge=0, spin_multiplicity=None)


def slab_normal(slab) -> np.ndarray:
    """pymatgen's `get_mi_vec`: the unit normal to the a-b plane (the top surface's outward normal)."""
    m = slab.lattice.matrix
    n = np.cross(m[0], m[1])
    return n / np.linalg.norm(n)


def _neighbours(slab, surface_idx: list[int], base: np.ndarray, normal: np.ndarray, kind: str):
    """Surface atoms around a site, nearest first in the surface plane (periodic images in a and b,
    so an index repeats when the site touches an atom and its image). top: the atom under it;
    otherwise the 2 (bridge) or 3 (hollow) nearest and any tied with the last (1 %)."""
    m = slab.lattice.matrix
    cand = []
    for i in surface_idx:  # every image is its own candidate: a bridge may join an atom to its image
        p = slab.cart_coords[i]
        for da in IMAGES:  # slab cells are often oblique (b = -a + …): ±1 misses nearest images
            for db in IMAGES:
                d = p + da * m[0] + db * m[1] - base
                d = d - np.dot(d, normal) * normal
                cand.append((float(np.linalg.norm(d)), i))
    cand.sort()
    if kind == "ontop":
        return [cand[0][1]], "top"
    need = 2 if kind == "bridge" else 3
    edge = cand[min(need, len(cand)) - 1][0]
    chosen = [i for r, i in cand if r <= edge * 1.01 + 1e-6][:6]
    site_type = {2: "bridge", 3: "hollow3"}.get(len(chosen), "hollow4")
    return chosen, site_type


def find_sites(slab, surface: str, distance: float, positions: list[str], symm_reduce: float,
               near_reduce: float, surface_height: float, no_obtuse_hollow: bool) -> list[dict[str, Any]]:
    """`AdsorbateSiteFinder(slab, height=surface_height, mi_vec=±n).find_adsorption_sites(...)`
    for the top surface, the bottom one (normal reversed), or both; one record per site."""
    from pymatgen.analysis.adsorption import AdsorbateSiteFinder

    n = slab_normal(slab)
    sides = {"top": [1.0], "bottom": [-1.0], "both": [1.0, -1.0]}[surface]
    out: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sign in sides:
            normal = sign * n
            asf = AdsorbateSiteFinder(slab, height=surface_height, mi_vec=list(normal))
            found = asf.find_adsorption_sites(distance=distance, put_inside=True, symm_reduce=symm_reduce,
                                              near_reduce=near_reduce, positions=tuple(positions),
                                              no_obtuse_hollow=no_obtuse_hollow)
            props = asf.slab.site_properties["surface_properties"]
            surface_idx = [i for i, p in enumerate(props) if p == "surface"]
            for kind in positions:
                for pos in found[kind]:
                    pos = np.asarray(pos, dtype=float)
                    idx, site_type = _neighbours(slab, surface_idx, pos - distance * normal, normal, kind)
                    elements = [slab[i].specie.symbol for i in idx]
                    out.append({
                        "position": pos.tolist(),
                        "site_type": site_type,
                        "pymatgen_kind": kind,
                        "surface": "top" if sign > 0 else "bottom",
                        "normal": normal.tolist(),
                        "neighbor_indices": idx,
                        "neighbor_elements": elements,
                        "env_signature": "-".join(sorted(elements)),
                        "height": distance,
                    })
    return out


def frame(slab_matrix: np.ndarray | None, normal: np.ndarray) -> np.ndarray:
    """pymatgen's `get_rot(slab)` generalised to any normal: columns x (a, made perpendicular to the
    normal), y = n × x, z = n. For the top normal of a slab it is `get_rot(slab).inverse`."""
    a = np.array([1.0, 0.0, 0.0]) if slab_matrix is None else np.asarray(slab_matrix[0], dtype=float)
    x = a - np.dot(a, normal) * normal
    if np.linalg.norm(x) < 1e-8:  # a along the normal: any perpendicular direction
        x = np.cross(normal, [0.0, 1.0, 0.0] if abs(normal[1]) < 0.9 else [1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(normal, x)
    return np.column_stack([x, y, normal])


def _rotation_to(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The smallest rotation taking unit vector u onto unit vector v."""
    c = float(np.dot(u, v))
    if c > 1 - 1e-12:
        return np.eye(3)
    if c < -1 + 1e-12:
        axis = np.cross(u, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(u, [0.0, 1.0, 0.0])
        axis /= np.linalg.norm(axis)
        return 2 * np.outer(axis, axis) - np.eye(3)
    w = np.cross(u, v)
    k = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    return np.eye(3) + k + k @ k / (1 + c)


def orient(coords: np.ndarray, masses: np.ndarray, binding: list[int], auto_rotate: bool) -> np.ndarray:
    """Molecule coordinates in the molecule frame with the binding atoms' centroid at the origin.
    auto_rotate: first turn it so the centre of mass lies straight above the binding centroid (+z),
    i.e. the binding atoms face the surface; without it the molecule keeps its own z as the normal,
    which is pymatgen's `add_adsorbate` (its lowest-z atoms being the binding ones)."""
    centre = coords[binding].mean(axis=0)
    local = coords - centre
    if auto_rotate and len(coords) > 1:
        com = (masses[:, None] * local).sum(axis=0) / masses.sum()
        if np.linalg.norm(com) > 1e-6:
            local = local @ _rotation_to(com / np.linalg.norm(com), np.array([0.0, 0.0, 1.0])).T
    return local


def min_distance(slab, placed: np.ndarray) -> tuple[float, int, int]:
    """Shortest adsorbate–slab distance, periodic images included for a periodic slab."""
    from pymatgen.core import Structure

    if len(slab) == 0:
        return float("inf"), -1, -1
    if isinstance(slab, Structure):
        d = slab.lattice.get_all_distances(slab.lattice.get_fractional_coords(placed), slab.frac_coords)
    else:
        d = np.linalg.norm(placed[:, None, :] - slab.cart_coords[None, :, :], axis=2)
    k = int(np.argmin(d))
    i, j = divmod(k, d.shape[1])
    return float(d[i, j]), j, i


def place(slab, molecule, binding: list[int], site: np.ndarray, normal: np.ndarray, height_offset: float,
          auto_rotate: bool, clearance: float, on_overlap: str, max_lift: float):
    """Place the molecule with its binding centroid at site + height_offset·normal; check (and, when
    asked, lift along the normal to restore) the clearance. Returns (merged, info)."""
    from pymatgen.core import Structure

    n_mol = len(molecule)
    bad = [i for i in binding if i < 0 or i >= n_mol]
    if bad:
        raise WorkerError("INVALID_BINDING_INDEX", f"binding atom index {bad[0]} is out of range (0..{n_mol - 1})",
                          {"indices": bad, "n_adsorbate_atoms": n_mol})
    matrix = slab.lattice.matrix if isinstance(slab, Structure) else None
    masses = np.array([float(s.specie.atomic_mass) for s in molecule])
    local = orient(molecule.cart_coords, masses, binding, auto_rotate)
    rotated = local @ frame(matrix, normal).T
    anchor = site + height_offset * normal
    placed = rotated + anchor
    d, slab_i, ads_i = min_distance(slab, placed)
    lift = 0.0
    if d < clearance:
        if on_overlap == "error":
            raise WorkerError("ADSORBATE_OVERLAP",
                              f"adsorbate atom {ads_i} is {d:.3f} Å from slab atom {slab_i}, closer than the "
                              f"clearance of {clearance} Å (on_overlap: lift moves it up instead)",
                              {"distance": d, "clearance": clearance, "slab_index": slab_i, "adsorbate_index": ads_i})
        step = 0.01
        while d < clearance:
            lift += step
            if lift > max_lift + 1e-9:
                raise WorkerError("ADSORBATE_OVERLAP",
                                  f"lifting the adsorbate by up to {max_lift} Å along the normal does not clear "
                                  f"{clearance} Å from the slab",
                                  {"clearance": clearance, "max_lift": max_lift, "distance": d})
            placed = rotated + anchor + lift * normal
            d, slab_i, ads_i = min_distance(slab, placed)
    merged = slab.copy()
    for s, xyz in zip(molecule, placed, strict=True):
        if isinstance(merged, Structure):
            merged.append(s.specie, xyz, coords_are_cartesian=True)
        else:
            merged.append(s.specie, xyz)
    binding_position = placed[binding].mean(axis=0)
    return merged, {"lift": lift, "min_distance": d, "binding_atom_position": binding_position.tolist()}


def as_output(st) -> dict[str, Any]:
    """Back to the compact form; the service writes the structure dictionary."""
    return {
        "lattice": st.lattice.matrix.tolist() if hasattr(st, "lattice") else None,
        "species": [site.specie.symbol for site in st],
        "cart": st.cart_coords.tolist(),
    }
