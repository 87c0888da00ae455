"""pymatgen structure dictionaries <-> ASE Atoms, without importing pymatgen.

pymatgen takes about a second to import and the worker's cold start matters (the service starts
workers on demand), so the dictionary form is read and written here directly. The output follows
`Structure.as_dict()` / `Molecule.as_dict()` key for key; tests check it against pymatgen itself.

Positions are taken from `xyz` when a site has it (so a structure that goes through the worker
and one that is built in-process from the same dictionary start from bit-identical positions),
else from `abc` times the lattice matrix.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ase import Atoms
from ase.data import atomic_numbers

from .errors import WorkerError

STRUCTURE_MODULE = "pymatgen.core.structure"


@dataclass
class StructureMeta:
    """What the dictionary carried besides numbers and positions, to be written back unchanged."""

    is_molecule: bool
    charge: float = 0.0
    spin_multiplicity: int | None = None
    species: list[list[dict[str, Any]]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    site_properties: list[dict[str, Any]] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    pbc: tuple[bool, bool, bool] = (True, True, True)


def _invalid(msg: str, **details: Any) -> WorkerError:
    return WorkerError("INVALID_STRUCTURE", msg, details or None)


def _vec3(value: Any, what: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise _invalid(f"{what} must be an array of 3 numbers")
    try:
        out = [float(v) for v in value]
    except (TypeError, ValueError):
        raise _invalid(f"{what} must be an array of 3 numbers") from None
    if not all(np.isfinite(out)):
        raise _invalid(f"{what} must be finite")
    return out


def _site_element(site: dict[str, Any], i: int) -> tuple[str, list[dict[str, Any]]]:
    species = site.get("species")
    if species is None and isinstance(site.get("element"), str):
        species = [{"element": site["element"], "occu": 1}]
    if not isinstance(species, list) or not species:
        raise _invalid(f"site {i} has no species", site=i)
    if len(species) != 1:
        raise _invalid(f"site {i} is disordered (several species); calculators need ordered sites", site=i)
    sp = species[0]
    if not isinstance(sp, dict) or not isinstance(sp.get("element"), str):
        raise _invalid(f"site {i}: species entry needs an element symbol", site=i)
    occu = sp.get("occu", 1)
    if not isinstance(occu, (int, float)) or abs(float(occu) - 1.0) > 1e-8:
        raise _invalid(f"site {i} has partial occupancy {occu}; calculators need ordered sites", site=i)
    el = sp["element"]
    if el not in atomic_numbers or atomic_numbers[el] == 0:
        raise _invalid(f"site {i}: unknown element symbol {el!r}", site=i)
    if "occu" not in sp:
        sp = {**sp, "occu": 1}
    return el, [sp]


def from_dict(d: Any) -> tuple[Atoms, StructureMeta]:
    """Read a pymatgen Structure/Molecule dictionary (full or the reduced viewer form)."""
    if not isinstance(d, dict):
        raise _invalid("structure must be an object")
    sites = d.get("sites")
    if not isinstance(sites, list) or not sites:
        raise _invalid("structure has no sites")
    cls = d.get("@class")
    lattice = d.get("lattice")
    if cls == "Molecule":
        is_molecule = True
    elif cls == "Structure":
        is_molecule = False
        if not isinstance(lattice, dict):
            raise _invalid("a Structure needs a lattice")
    elif cls is None:
        is_molecule = not isinstance(lattice, dict)
    else:
        raise _invalid(f"unsupported @class {cls!r} (expected Structure or Molecule)")

    matrix = None
    pbc: tuple[bool, bool, bool] = (False, False, False)
    if not is_molecule:
        m = lattice.get("matrix")
        if not isinstance(m, list) or len(m) != 3:
            raise _invalid("lattice.matrix must be a 3x3 array")
        matrix = np.array([_vec3(row, "lattice.matrix row") for row in m], dtype=float)
        if abs(np.linalg.det(matrix)) < 1e-8:
            raise _invalid("lattice matrix is singular")
        raw_pbc = lattice.get("pbc", [True, True, True])
        if not isinstance(raw_pbc, list) or len(raw_pbc) != 3:
            raise _invalid("lattice.pbc must be 3 booleans")
        pbc = tuple(bool(x) for x in raw_pbc)  # type: ignore[assignment]

    symbols: list[str] = []
    positions = np.empty((len(sites), 3))
    meta = StructureMeta(is_molecule=is_molecule, pbc=pbc)
    for i, site in enumerate(sites):
        if not isinstance(site, dict):
            raise _invalid(f"site {i} must be an object", site=i)
        el, species = _site_element(site, i)
        symbols.append(el)
        meta.species.append(species)
        if "xyz" in site:
            positions[i] = _vec3(site["xyz"], f"site {i} xyz")
        elif "abc" in site and matrix is not None:
            positions[i] = np.array(_vec3(site["abc"], f"site {i} abc")) @ matrix
        else:
            raise _invalid(f"site {i} needs xyz" + ("" if is_molecule else " or abc"), site=i)
        label = site.get("label")
        meta.labels.append(label if isinstance(label, str) else el)
        props = site.get("properties")
        meta.site_properties.append(dict(props) if isinstance(props, dict) else {})

    charge = d.get("charge", 0.0)
    meta.charge = float(charge) if isinstance(charge, (int, float)) and charge is not None else 0.0
    if is_molecule:
        smult = d.get("spin_multiplicity")
        meta.spin_multiplicity = int(smult) if isinstance(smult, (int, float)) else None
    props = d.get("properties")
    meta.properties = dict(props) if isinstance(props, dict) else {}

    atoms = Atoms(symbols=symbols, positions=positions)
    if matrix is not None:
        atoms.set_cell(matrix)
        atoms.set_pbc(pbc)
    return atoms, meta


def _lattice_dict(matrix: np.ndarray, pbc: tuple[bool, bool, bool]) -> dict[str, Any]:
    # same formulas as pymatgen's Lattice (lengths, angles via clipped arccos, |det| volume)
    lengths = np.sqrt(np.sum(matrix**2, axis=1))
    angles = np.zeros(3)
    for dim in range(3):
        j, k = (dim + 1) % 3, (dim + 2) % 3
        angles[dim] = np.clip(np.dot(matrix[j], matrix[k]) / (lengths[j] * lengths[k]), -1, 1)
    angles = np.arccos(angles) * 180.0 / np.pi
    return {
        "matrix": matrix.tolist(),
        "pbc": [bool(p) for p in pbc],
        "a": float(lengths[0]),
        "b": float(lengths[1]),
        "c": float(lengths[2]),
        "alpha": float(angles[0]),
        "beta": float(angles[1]),
        "gamma": float(angles[2]),
        "volume": float(abs(np.linalg.det(matrix))),
    }


def to_dict(atoms: Atoms, meta: StructureMeta, forces: np.ndarray | None = None) -> dict[str, Any]:
    """Write the pymatgen dictionary for `atoms`, keeping species, labels and properties of `meta`.

    With `forces`, each site gets `properties.forces` (eV/Angstrom).
    """
    pos = atoms.get_positions()
    xyz = pos.tolist()
    f = forces.tolist() if forces is not None else None
    sites = []
    if meta.is_molecule:
        for i in range(len(atoms)):
            props = dict(meta.site_properties[i])
            if f is not None:
                props["forces"] = f[i]
            sites.append(
                {
                    "name": meta.species[i][0]["element"],
                    "species": [dict(sp) for sp in meta.species[i]],
                    "xyz": xyz[i],
                    "properties": props,
                    "label": meta.labels[i],
                }
            )
        smult = meta.spin_multiplicity
        if smult is None:
            # pymatgen's default: singlet for an even electron count, doublet otherwise
            nel = int(atoms.get_atomic_numbers().sum()) - int(round(meta.charge))
            smult = 1 if nel % 2 == 0 else 2
        return {
            "@module": STRUCTURE_MODULE,
            "@class": "Molecule",
            "charge": meta.charge,
            "spin_multiplicity": smult,
            "sites": sites,
            "properties": copy.deepcopy(meta.properties),
        }
    matrix = np.array(atoms.get_cell())
    abc = np.linalg.solve(matrix.T, pos.T).T.tolist()
    for i in range(len(atoms)):
        props = dict(meta.site_properties[i])
        if f is not None:
            props["forces"] = f[i]
        sites.append(
            {
                "species": [dict(sp) for sp in meta.species[i]],
                "abc": abc[i],
                "properties": props,
                "label": meta.labels[i],
                "xyz": xyz[i],
            }
        )
    return {
        "@module": STRUCTURE_MODULE,
        "@class": "Structure",
        "charge": meta.charge,
        "lattice": _lattice_dict(matrix, meta.pbc),
        "properties": copy.deepcopy(meta.properties),
        "sites": sites,
    }
