"""`build_nanoparticle`: a finite metal cluster by ASE (`ase.cluster`: Wulff construction,
octahedron, icosahedron, decahedron), centred in a box with `vacuum` on each side and answered
as the pymatgen dictionary of `AseAtomsAdaptor.get_structure(atoms)`, as the earlier
implementation did (built straight from ASE's arrays, the same dictionary)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...errors import WorkerError
from ._build_common import atoms_structure_out
from ..store import unavailable

METHOD = "build_nanoparticle"


def cluster(params: dict[str, Any]):
    """The ASE cluster of a request (shared with the conformance test and the benchmark)."""
    try:
        from ase.cluster import Decahedron, Icosahedron, Octahedron, wulff_construction
    except ImportError as exc:
        raise unavailable("ase", exc) from None
    el = params["element"]
    a = params.get("lattice_constant") or None
    shape = params["shape"]
    if shape == "wulff":
        return wulff_construction(el, [tuple(x) for x in params["surfaces"]], params["energies"], int(params["size"]),
                                  params["structure"], rounding=params["rounding"], latticeconstant=a)
    if shape == "octahedron":
        return Octahedron(el, int(params["length"]), cutoff=int(params["cutoff"]), latticeconstant=a)
    if shape == "icosahedron":
        return Icosahedron(el, int(params["shells"]), latticeconstant=a)
    return Decahedron(el, int(params["p"]), int(params["q"]), int(params["r"]), latticeconstant=a)


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    try:
        from pymatgen.core import Composition
    except ImportError as exc:
        raise unavailable("pymatgen", exc) from None
    try:
        atoms = cluster(params)
    except Exception as exc:  # noqa: BLE001
        # the parameters were checked by the service: what ASE still refuses is this element or
        # lattice (no reference lattice constant, a lattice it does not build), a 400 of the request
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise WorkerError("INVALID_NANOPARTICLE", f"ASE cannot build this cluster: {reason}",
                          {"element": params["element"], "shape": params["shape"]}) from None
    if len(atoms) == 0:
        raise WorkerError("INVALID_NANOPARTICLE", "The parameters give a cluster of 0 atoms", {"shape": params["shape"]})
    if len(atoms) > int(params["max_atoms"]):
        raise WorkerError("TOO_MANY_ATOMS", f"The cluster has {len(atoms)} atoms, more than the limit of {params['max_atoms']}",
                          {"n_atoms": len(atoms), "limit": params["max_atoms"]})
    atoms.center(vacuum=float(params["vacuum"]))
    atoms.pbc = True
    # with no vacuum the box is the cluster's extent: a single atom (or a flat cluster) gives a box
    # of zero volume, which no structure can have (pymatgen's Lattice raised, a 500; found by fuzzing)
    if not abs(atoms.cell.volume) > 1e-6:
        raise WorkerError("INVALID_NANOPARTICLE", f"The cluster of {len(atoms)} atom(s) is flat, so with {params['vacuum']} Å "
                          "of vacuum its box has no volume; give vacuum above 0", {"field": "vacuum", "n_atoms": len(atoms)})
    # AseAtomsAdaptor.get_structure(atoms).as_dict(), straight from the arrays (_build_common)
    structure = atoms_structure_out(atoms)
    formula = Composition(dict(Counter(atoms.get_chemical_symbols()))).reduced_formula
    return {"structure": structure, "n_atoms": len(atoms), "formula": formula,
            "message": f"{params['shape']} {formula} cluster of {len(atoms)} atoms with "
                       f"{params['vacuum']} Å of vacuum on each side"}
