"""`hetero_search`: lattice matches between a substrate and a film by pymatgen's ZSL algorithm.

Slab mode: both inputs are slabs; ZSL runs on their a, b vectors (after stripping vacuum).
Bulk mode: pymatgen's `CoherentInterfaceBuilder` on the two bulk crystals and Miller indices, which
also gives the termination pairs. Matches are listed in generation order (match_id), first
`max_results` of them (`truncated` says when more exist), then sorted by (area, strain)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _hetero as h

METHOD = "hetero_search"


class _Stop(Exception):
    pass


def _take(gen, limit: int, deadline: h.Deadline) -> tuple[list, bool]:
    """The first `limit` items of a generator, and whether there was another one."""
    out = []
    for item in gen:
        deadline.check()
        if len(out) == limit:
            return out, True
        out.append(item)
    return out, False


def slab_units(p: dict[str, Any], substrate, film):
    sub = h.strip_vacuum(substrate, "substrate")
    fil = h.strip_vacuum(film, "film")
    return sub, fil


def bulk_builder(p: dict[str, Any], substrate, film, matches=None):
    """pymatgen's CoherentInterfaceBuilder; with `matches`, those matches instead of a ZSL search."""
    from pymatgen.analysis.interfaces.coherent_interfaces import CoherentInterfaceBuilder

    class _Given(CoherentInterfaceBuilder):
        def _find_matches(self) -> None:
            self.zsl_matches = matches

    cls = CoherentInterfaceBuilder if matches is None else _Given
    try:
        return cls(substrate_structure=substrate, film_structure=film, film_miller=h.miller(p, "film_miller"),
                   substrate_miller=h.miller(p, "substrate_miller"), zslgen=h.zsl_generator(p))
    except WorkerError:
        raise
    except ValueError as exc:
        raise WorkerError("INVALID_MILLER", f"no interface for these Miller indices: {str(exc)[:200]}") from None


def bulk_unit_vectors(p: dict[str, Any], structure, key: str):
    """The in-plane vectors (and atoms per layer) CoherentInterfaceBuilder matches for one crystal."""
    from pymatgen.core.surface import SlabGenerator

    try:
        gen = SlabGenerator(structure, h.miller(p, key), min_slab_size=1, min_vacuum_size=3, in_unit_planes=True,
                            center_slab=True, primitive=True, reorient_lattice=False)
        slab = gen.get_slab(shift=0)
    except WorkerError:
        raise
    except ValueError as exc:
        raise WorkerError("INVALID_MILLER", f"{key}: {str(exc)[:200]}", {"field": key}) from None
    return slab.lattice.matrix[:2], len(slab)


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    h.pymatgen()
    p = params["params"]
    substrate = h.structure(params["substrate"], "substrate")
    film = h.structure(params["film"], "film")
    deadline = h.Deadline(params.get("deadline_s", 120), cancel)
    limit = int(p["max_results"])
    terminations: list[dict[str, str]] = []
    if p["mode"] == "slab":
        sub, fil = slab_units(p, substrate, film)
        s_unit, f_unit = sub.lattice.matrix[:2], fil.lattice.matrix[:2]
        h.check_area_budget(p, h.area(sub.lattice), h.area(fil.lattice))
        raw, truncated = _take(h.zsl_generator(p)(f_unit, s_unit), limit, deadline)
        n_sub, n_fil = len(sub), len(fil)
        millers: tuple[Any, Any] = (None, None)
    else:
        s_unit, n_sub = bulk_unit_vectors(p, substrate, "substrate_miller")
        f_unit, n_fil = bulk_unit_vectors(p, film, "film_miller")
        h.check_area_budget(p, float(np.linalg.norm(np.cross(*s_unit))), float(np.linalg.norm(np.cross(*f_unit))))
        raw, truncated = _take(h.zsl_generator(p)(f_unit, s_unit, lowest=False), limit, deadline)
        # Terminations by pymatgen, without a second ZSL search (the matches are the ones above)
        cib = bulk_builder(p, substrate, film, matches=raw)
        terminations = [{"film_termination": f, "substrate_termination": s, "label": f"{f} / {s}"}
                        for f, s in cib.terminations]
        millers = (list(h.miller(p, "film_miller")), list(h.miller(p, "substrate_miller")))
    # Each match's own unit vectors are the ones searched (the same for all matches)
    matches = h.matches_json(raw, f_unit, s_unit, millers[0], millers[1], n_fil, n_sub)
    matches.sort(key=lambda m: (m["match_area"], m["strain"], m["match_id"]))
    return {
        "mode": p["mode"],
        "matches": matches,
        "terminations": terminations,
        "n_matches": len(matches),
        "n_terminations": len(terminations),
        "truncated": truncated,
        "message": f"{len(matches)} lattice match(es){' (more exist: raise max_results)' if truncated else ''}"
        + (f", {len(terminations)} termination pair(s)" if p["mode"] != "slab" else ""),
    }
