"""`hetero_build`: one interface for a chosen match, built from the match's own integer
transformations (never by re-running the search and indexing its list).

Slab mode: the slab pipeline (`_hetero.stack_slabs`). Bulk mode: pymatgen's
`CoherentInterfaceBuilder.get_interfaces` for the chosen termination, fed the one match sent."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _hetero as h
from .hetero_search import bulk_builder, bulk_unit_vectors

METHOD = "hetero_build"


def _result(structure, n_sub: int, n_film: int, f_sl, s_sl, extra: dict[str, Any]) -> dict[str, Any]:
    vm, tensor = h.match_strain(f_sl, s_sl)
    return {
        "structure": h.structure_json(structure),
        "n_atoms": len(structure),
        "n_atoms_substrate": n_sub,
        "n_atoms_film": n_film,
        "match_area": h.area(structure.lattice),
        "strain": 100.0 * vm,
        "von_mises_strain": vm,
        "strain_components": tensor,
        **extra,
    }


def build_slab_mode(substrate, film, match: dict[str, Any], gap: float, vacuum: float, shift=(0.0, 0.0), cancel=None):
    ts = h.sent_transform(match, "substrate_transformation")
    tf = h.sent_transform(match, "film_transformation")
    sub = h.strip_vacuum(substrate, "substrate")
    fil = h.strip_vacuum(film, "film")
    h.check_sent_vectors(match, "substrate_sl_vectors", ts @ sub.lattice.matrix[:2])
    h.check_sent_vectors(match, "film_sl_vectors", tf @ fil.lattice.matrix[:2])
    return h.stack_slabs(substrate, film, ts, tf, gap, vacuum, shift, cancel)


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    from pymatgen.analysis.interfaces.zsl import ZSLMatch

    h.pymatgen()
    substrate = h.structure(params["substrate"], "substrate")
    film = h.structure(params["film"], "film")
    match = params["match"]
    p = params["params"]
    sp = params["search_params"]
    if p["twist_angle"] != 0:
        raise WorkerError("TWIST_NOT_COMMENSURATE",
                          "a twist inside an unchanged cell breaks periodicity; rotated (twisted) lattice matches "
                          "come from the search itself, so choose one of its matches instead", {"field": "twist_angle"})
    if sp["mode"] == "slab":
        out, n_sub, n_film, f_sl, s_sl = build_slab_mode(substrate, film, match, p["gap"], p["vacuum"], cancel=cancel)
        return _result(out, n_sub, n_film, f_sl, s_sl, {"match_id": match.get("match_id"), "mode": "slab",
                       "message": f"slab-mode interface: {n_sub} substrate + {n_film} film atoms"})
    # Bulk mode: pymatgen's builder with exactly this match
    ts = h.sent_transform(match, "substrate_transformation")
    tf = h.sent_transform(match, "film_transformation")
    s_unit, n_s = bulk_unit_vectors(sp, substrate, "substrate_miller")
    f_unit, n_f = bulk_unit_vectors(sp, film, "film_miller")
    s_sl, f_sl = ts @ s_unit, tf @ f_unit
    h.check_sent_vectors(match, "substrate_sl_vectors", s_sl)
    h.check_sent_vectors(match, "film_sl_vectors", f_sl)
    h.check_atoms(abs(round(np.linalg.det(ts))) * n_s * p["substrate_thickness"]
                  + abs(round(np.linalg.det(tf))) * n_f * p["film_thickness"], "the interface")
    zm = ZSLMatch(film_sl_vectors=f_sl, substrate_sl_vectors=s_sl, film_vectors=f_unit, substrate_vectors=s_unit,
                  film_transformation=tf, substrate_transformation=ts)
    cib = bulk_builder(sp, substrate, film, matches=[zm])
    if not cib.terminations:
        raise WorkerError("NO_TERMINATIONS", "pymatgen finds no termination pair for these Miller indices")
    ti = params["termination_index"]
    if ti >= len(cib.terminations):
        raise WorkerError("INVALID_TERMINATION", f"termination_index {ti} is out of range (0..{len(cib.terminations) - 1})",
                          {"n_terminations": len(cib.terminations)})
    termination = cib.terminations[ti]
    try:
        iface = next(cib.get_interfaces(termination, gap=p["gap"], vacuum_over_film=p["vacuum"],
                                        film_thickness=p["film_thickness"],
                                        substrate_thickness=p["substrate_thickness"], in_layers=True))
    except ValueError as exc:
        raise WorkerError("MATCH_MISMATCH", f"pymatgen cannot build this match: {str(exc)[:200]}") from None
    labels = iface.site_properties["interface_label"]
    n_sub = sum(1 for x in labels if x == "substrate")
    return _result(iface, n_sub, len(iface) - n_sub, f_sl, s_sl, {
        "match_id": match.get("match_id"), "mode": "bulk",
        "termination": {"film_termination": termination[0], "substrate_termination": termination[1],
                        "label": f"{termination[0]} / {termination[1]}"},
        "message": f"bulk-mode interface ({termination[0]} / {termination[1]}): {n_sub} substrate + "
                   f"{len(iface) - n_sub} film atoms"})
