"""`hetero_intermat`: the intermat/JARVIS-Tools interface pipeline (`InterfaceCombi`), first result.

intermat is optional (worker extra `intermat`); without it the method answers
ANALYSIS_UNAVAILABLE (503) with the install command, never a 500. It is imported on the first
request (about 10 s), not when the worker starts, so workers without it start as fast as before.
Substrate and film atoms come from intermat's `bottom` / `top` site labels (never a 50/50 guess)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _hetero as h

METHOD = "hetero_intermat"


def _jarvis(structure):
    from jarvis.core.atoms import Atoms

    return Atoms(lattice_mat=structure.lattice.matrix, coords=structure.frac_coords,
                 elements=[site.specie.symbol for site in structure], cartesian=False)


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from intermat.generate import InterfaceCombi
            from jarvis.core.atoms import Atoms
    except ImportError:
        raise WorkerError("ANALYSIS_UNAVAILABLE",
                          "intermat (JARVIS-Tools interfaces) is not installed in the analysis worker's Python; "
                          'install it with: .venv/bin/pip install -e "worker[intermat]"', {"package": "intermat"}) from None
    from pymatgen.core import Lattice, Structure

    p = params["params"]
    substrate = h.structure(params["substrate"], "substrate")
    film = h.structure(params["film"], "film")
    for s, what in ((substrate, "substrate"), (film, "film")):
        if not s.is_ordered:
            raise WorkerError("INVALID_STRUCTURE", f"{what}: intermat needs an ordered structure (no partial occupancy)",
                              {"field": what})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            combi = InterfaceCombi(
                film_mats=[_jarvis(film)], subs_mats=[_jarvis(substrate)], film_indices=[p["film_miller"]],
                subs_indices=[p["substrate_miller"]], film_thicknesses=[p["film_thickness"]],
                subs_thicknesses=[p["substrate_thickness"]], seperations=[p["separation"]],
                vacuum_interface=p["vacuum"], max_area=p["max_area"], max_area_ratio_tol=p["max_area_ratio_tol"],
                ltol=p["ltol"], atol=p["atol"], apply_strain=p["apply_strain"], disp_intvl=p["disp_intvl"],
                lowest_mismatch=True, from_conventional_structure_film=True, from_conventional_structure_subs=True,
                dataset=[None])
            results = combi.generate()
    except WorkerError:
        raise
    except Exception as exc:  # intermat raises anything from IndexError to ValueError on unmatched inputs
        raise WorkerError("NO_INTERFACE", f"intermat finds no interface: {str(exc)[:200] or type(exc).__name__}") from None
    info = results[0] if results else None
    raw = (info or {}).get("generated_interface") or (info or {}).get("interface")
    if not raw or isinstance(info.get("mismatch_u"), str):
        raise WorkerError("NO_INTERFACE", "intermat finds no interface within these tolerances")
    atoms = Atoms.from_dict(raw) if isinstance(raw, dict) else raw
    props = list(atoms.props)
    if set(props) != {"bottom", "top"}:
        raise WorkerError("NO_INTERFACE", "intermat's interface does not say which atoms are substrate and film")
    order = [i for i, x in enumerate(props) if x == "bottom"] + [i for i, x in enumerate(props) if x == "top"]
    frac = np.asarray(atoms.frac_coords)[order]
    frac[:, :2] = np.mod(frac[:, :2], 1.0)
    elements = [atoms.elements[i] for i in order]
    n_sub = props.count("bottom")
    s = Structure(Lattice(atoms.lattice_mat), elements, frac,
                  site_properties={"interface_label": ["substrate"] * n_sub + ["film"] * (len(order) - n_sub)})
    h.check_atoms(len(s), "the interface")
    u, v = float(info["mismatch_u"]), float(info["mismatch_v"])
    return {
        "structure": h.structure_json(s), "n_atoms": len(s), "n_atoms_substrate": n_sub,
        "n_atoms_film": len(s) - n_sub, "match_area": h.area(s.lattice),
        "strain": 100.0 * float(np.sqrt(u * u + v * v - u * v)),
        "mismatch_u": 100.0 * u, "mismatch_v": 100.0 * v, "mismatch_angle": float(info["mismatch_angle"]),
        "area_substrate": float(info["area1"]), "area_film": float(info["area2"]),
        "message": f"intermat interface: {n_sub} substrate + {len(s) - n_sub} film atoms",
    }
