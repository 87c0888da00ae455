"""For the adsorption methods: pymatgen's `AdsorbateSiteFinder` on one or both surfaces of a slab.
(Placement is exact geometry and runs in the core: packages/core/src/geometry/adsorption.ts.)

Coordinates are Cartesian Å throughout. The service validates structures (core `fromDict`) and
caps atoms before anything reaches here; errors here are coded for 400 answers."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

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


def _image_shifts(slab) -> np.ndarray:
    """Cartesian shifts of the periodic images in a and b that `_neighbours` looks at (one per slab)."""
    m = slab.lattice.matrix
    # every image is its own candidate: a bridge may join an atom to its image; slab cells are often
    # oblique (b = -a + …), so ±1 cell misses nearest images
    return np.array([da * m[0] + db * m[1] for da in IMAGES for db in IMAGES])


def _neighbours(surface_cart: np.ndarray, surface_idx: list[int], shifts: np.ndarray, base: np.ndarray,
                normal: np.ndarray, kind: str):
    """Surface atoms around a site, nearest first in the surface plane (periodic images in a and b,
    so an index repeats when the site touches an atom and its image). top: the atom under it;
    otherwise the 2 (bridge) or 3 (hollow) nearest and any tied with the last (1 %).
    `surface_cart`: the Cartesian positions of the `surface_idx` atoms; `shifts`: `_image_shifts`."""
    idx = np.asarray(surface_idx)
    d = surface_cart[:, None, :] + shifts[None, :, :] - base
    d = d - (d @ normal)[..., None] * normal
    r = np.linalg.norm(d, axis=2)
    cand = sorted(zip(r.ravel().tolist(), np.repeat(idx, len(shifts)).tolist(), strict=True))
    if kind == "ontop":
        return [cand[0][1]], "top"
    need = 2 if kind == "bridge" else 3
    edge = cand[min(need, len(cand)) - 1][0]
    chosen = [i for r, i in cand if r <= edge * 1.01 + 1e-6][:6]
    site_type = {2: "bridge", 3: "hollow3"}.get(len(chosen), "hollow4")
    return chosen, site_type


_FINDER = None


def site_finder():
    """pymatgen's `AdsorbateSiteFinder` with the slab's symmetry operations found once per finder.

    Its `symm_reduce` runs spglib on the unchanged slab for each site kind (ontop, bridge, hollow:
    three analyses per call, about half of a small slab's time); this finder keeps the first one's
    operations and reduces with them in the same order and by the same test (`in_coord_list_pbc`),
    so the sites are pymatgen's to the bit."""
    global _FINDER
    if _FINDER is None:
        from pymatgen.analysis.adsorption import AdsorbateSiteFinder
        from pymatgen.symmetry.analyzer import SpacegroupAnalyzer
        from pymatgen.util.coord import in_coord_list_pbc

        class SymmetryOnceSiteFinder(AdsorbateSiteFinder):
            _symm_ops = None

            def symm_reduce(self, coords_set, threshold=1e-6):
                if self._symm_ops is None:  # the same analysis (symprec 0.1) pymatgen's method makes
                    self._symm_ops = SpacegroupAnalyzer(self.slab, 0.1).get_symmetry_operations()
                lattice = self.slab.lattice
                kept: list = []
                for frac in (lattice.get_fractional_coords(c) for c in coords_set):
                    # a site is new unless an image of it under some operation is already kept
                    if not any(in_coord_list_pbc(kept, op.operate(frac), atol=threshold) for op in self._symm_ops):
                        kept.append(frac)
                return [lattice.get_cartesian_coords(f) for f in kept]

        _FINDER = SymmetryOnceSiteFinder
    return _FINDER


def find_sites(slab, surface: str, distance: float, positions: list[str], symm_reduce: float,
               near_reduce: float, surface_height: float, no_obtuse_hollow: bool) -> list[dict[str, Any]]:
    """`AdsorbateSiteFinder(slab, height=surface_height, mi_vec=±n).find_adsorption_sites(...)`
    for the top surface, the bottom one (normal reversed), or both; one record per site."""
    finder = site_finder()

    n = slab_normal(slab)
    sides = {"top": [1.0], "bottom": [-1.0], "both": [1.0, -1.0]}[surface]
    out: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sign in sides:
            normal = sign * n
            asf = finder(slab, height=surface_height, mi_vec=list(normal))
            found = asf.find_adsorption_sites(distance=distance, put_inside=True, symm_reduce=symm_reduce,
                                              near_reduce=near_reduce, positions=tuple(positions),
                                              no_obtuse_hollow=no_obtuse_hollow)
            props = asf.slab.site_properties["surface_properties"]
            surface_idx = [i for i, p in enumerate(props) if p == "surface"]
            # the same for every site of this surface: made once, not per site
            shifts = _image_shifts(slab)
            symbols = [site.specie.symbol for site in slab]
            surface_cart = slab.cart_coords[np.asarray(surface_idx, dtype=int)]
            for kind in positions:
                for pos in found[kind]:
                    pos = np.asarray(pos, dtype=float)
                    idx, site_type = _neighbours(surface_cart, surface_idx, shifts, pos - distance * normal,
                                                 normal, kind)
                    elements = [symbols[i] for i in idx]
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
