"""`hetero_build_manual`: two slabs stacked with caller-given in-plane supercell matrices (no
search): the same slab pipeline as a slab-mode build, the film's superlattice mapped onto the
substrate's and the strain between the two reported."""

from __future__ import annotations

from typing import Any

from ...errors import WorkerError
from . import _hetero as h
from .hetero_build import _result

METHOD = "hetero_build_manual"


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    h.pymatgen()
    substrate = h.structure(params["substrate"], "substrate")
    film = h.structure(params["film"], "film")
    if params["twist_angle"] != 0:
        raise WorkerError("TWIST_NOT_COMMENSURATE",
                          "a twist inside an unchanged cell breaks periodicity; give the twisted superlattice as "
                          "film_transform instead", {"field": "twist_angle"})
    ts = h.sent_transform({"substrate_transform": params["substrate_transform"]}, "substrate_transform")
    tf = h.sent_transform({"film_transform": params["film_transform"]}, "film_transform")
    out, n_sub, n_film, f_sl, s_sl = h.stack_slabs(substrate, film, ts, tf, params["gap"], params["vacuum"],
                                                   cancel=cancel)
    return _result(out, n_sub, n_film, f_sl, s_sl,
                   {"message": f"manual interface: {n_sub} substrate + {n_film} film atoms"})
