"""Shared by the `/api/build` methods: structures in and out, and the supercell whose site order
follows pymatgen's `make_supercell` (all images of site 0 first, then of site 1, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from ..store import unavailable


def structure_in(d: dict[str, Any]):
    try:
        from pymatgen.core import Structure
    except ImportError as exc:
        raise unavailable("pymatgen", exc) from None
    # the service has read and checked the structure already; this is its canonical dictionary
    s = Structure.from_dict(d)
    # pymatgen drops occupancies below 1e-8 (the service refuses them first): a site left without
    # species would fail later with an IndexError
    for i, site in enumerate(s):
        if len(site.species) == 0:
            raise WorkerError("INVALID_STRUCTURE", f"sites[{i}] has no species of occupancy 1e-8 or more",
                              {"field": f"sites[{i}].species"})
    return s


def _species_entry(composition, cache: dict) -> tuple[list[dict[str, Any]], str]:
    """A site's `species` list as `PeriodicSite.as_dict` writes it and its species string (the
    label of a site without one), made once per distinct species of a structure."""
    # the types are part of the key: 1 and 1.0 (and an element and its species of charge 0) hash
    # alike but are written differently
    key = tuple((type(sp), sp, type(occu), occu) for sp, occu in composition.items())
    found = cache.get(key)
    if found is None:
        species = []
        for sp, occu in composition.items():
            d = sp.as_dict()
            del d["@module"], d["@class"]
            d["occu"] = occu
            species.append(d)
        ordered = len(key) == 1 and key[0][3] == 1
        text = str(key[0][1]) if ordered else ", ".join(f"{sp}:{composition[sp]:.3}" for sp in sorted(composition))
        found = cache[key] = (species, text)
    return found


def _lattice_dict(lattice) -> dict[str, Any]:
    d = lattice.as_dict(verbosity=1)
    del d["@module"], d["@class"]
    return d


def structure_out(s) -> dict[str, Any]:
    """`s.as_dict()`, the same dictionary, built in a fraction of its time.

    `Structure.as_dict` calls `PeriodicSite.as_dict` per site, which writes the whole lattice
    (lengths, angles, volume) for every site and then drops it: about half its time. Here the lattice is written once and each site's fields are read directly; the values
    are pymatgen's own (`site.coords` is the site's cached Cartesian position, exactly as `as_dict`
    reads it). Species lists are shared between sites of one species: the result is for
    serialisation, not for editing in place. worker/tests/test_build_dicts.py compares it with
    `as_dict` field by field.
    """
    cache: dict = {}
    frac = [site.frac_coords for site in s]
    abc = np.array(frac, dtype=float).reshape(-1, 3).tolist() if frac else []
    sites = []
    for site, f in zip(s, abc):
        species, text = _species_entry(site.species, cache)
        sites.append({"species": species, "abc": f, "properties": site.properties,
                      "label": text if site._label is None else site._label, "xyz": site.coords.astype(float).tolist()})
    return {"@module": type(s).__module__, "@class": type(s).__name__, "charge": s.charge,
            "lattice": _lattice_dict(s.lattice), "properties": s.properties, "sites": sites}


# the ASE arrays `atoms_structure_out` writes itself; any other array (magnetic moments, charges,
# ...) goes through pymatgen's adaptor, which knows how each becomes a site property
_PLAIN_ATOMS_ARRAYS = {"numbers", "positions", "tags"}


def atoms_structure_out(atoms) -> dict[str, Any]:
    """`AseAtomsAdaptor.get_structure(atoms).as_dict()` for a periodic ASE `Atoms` of plain atoms.

    The adaptor builds one `PeriodicSite` per atom and `as_dict` then reads each back (17 ms of the
    20 ms a 561-atom nanoparticle takes); the same dictionary comes straight from ASE's arrays here.
    Fractional coordinates are `cart · L⁻¹` and Cartesian ones `frac · L` exactly as pymatgen
    computes them per site (a row of a matrix product is the same sum as the vector product).
    Atoms with anything the adaptor turns into more than species, positions and tags (constraints,
    a calculator, `info`, magnetic moments, charges) take the adaptor's own path.
    """
    from pymatgen.core import Element, Lattice, Structure
    from pymatgen.io.ase import AseAtomsAdaptor

    if (set(atoms.arrays) - _PLAIN_ATOMS_ARRAYS or atoms.constraints or atoms.info
            or getattr(atoms, "calc", None) is not None):
        return structure_out(AseAtomsAdaptor.get_structure(atoms))
    lattice = Lattice(atoms.get_cell(), pbc=atoms.pbc)
    frac = np.dot(atoms.get_positions(), lattice.inv_matrix)
    xyz = np.dot(frac, lattice.matrix).tolist()
    species: dict[str, list[dict[str, Any]]] = {}
    for sym in set(atoms.get_chemical_symbols()):
        d = Element(sym).as_dict()
        del d["@module"], d["@class"]
        d["occu"] = 1
        species[sym] = [d]
    tags = atoms.get_tags().tolist() if atoms.has("tags") else None
    sites = []
    for i, (sym, f) in enumerate(zip(atoms.get_chemical_symbols(), frac.tolist())):
        sites.append({"species": species[sym], "abc": f, "properties": {"tags": tags[i]} if tags is not None else {},
                      "label": sym, "xyz": xyz[i]})
    return {"@module": Structure.__module__, "@class": Structure.__name__, "charge": 0.0,
            "lattice": _lattice_dict(lattice), "properties": {}, "sites": sites}


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
