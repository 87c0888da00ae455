"""`build_intercalation`: guests placed at the voids of pymatgen-analysis-defects'
`VoronoiInterstitialGenerator` (every symmetry image of each inequivalent void, which keeps
`min_distance` from every host atom), largest voids first, tetrahedral or octahedral ones only when
asked (4 or 6 host atoms within 1.2 x the nearest host distance), or at the caller's fractional
positions; each new guest keeps `min_guest_distance` from the guests already placed (periodic)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from ._build_common import defects_module, generated, require_ordered, structure_in, structure_out
from ._common import check_cancel

METHOD = "build_intercalation"
COORDINATION = {"tetrahedral": 4, "octahedral": 6}


def _environment(host, frac) -> tuple[float, int]:
    d = host.lattice.get_all_distances([frac], host.frac_coords)[0]
    nearest = float(d.min())
    return nearest, int(np.count_nonzero(d <= 1.2 * nearest))


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    host = structure_in(params["structure"])
    species = params["species"]
    mode = params["position"]
    n = int(params["n_intercalants"])
    min_dist = float(params["min_distance"])
    min_guest = float(params["min_guest_distance"])
    if mode == "custom":
        candidates = [np.mod(np.asarray(p, dtype=float), 1.0) for p in params["positions"]]
        for k, frac in enumerate(candidates):
            nearest, _ = _environment(host, frac)
            if nearest < min_dist:
                raise WorkerError("SITE_OVERLAP", f"positions[{k}] is {nearest:.3f} Å from a host atom, closer than "
                                  f"min_distance {min_dist} Å", {"index": k, "distance": nearest})
    else:
        gen = defects_module()
        require_ordered(host, "Finding voids")
        voids = generated(lambda: gen.VoronoiInterstitialGenerator(min_dist=min_dist).generate(
            host, insert_species=[species]), "voids")
        check_cancel(cancel)
        candidates = []
        for v in voids:
            for site in v.equivalent_sites:
                candidates.append(np.mod(np.asarray(site.frac_coords, dtype=float), 1.0))
        env = [_environment(host, f) for f in candidates]
        order = sorted(range(len(candidates)), key=lambda k: (-round(env[k][0], 6), k))
        if mode in COORDINATION:
            order = [k for k in order if env[k][1] == COORDINATION[mode]]
        candidates = [candidates[k] for k in order]
    placed: list[np.ndarray] = []
    for frac in candidates:
        if len(placed) == n:
            break
        if placed and host.lattice.get_all_distances([frac], placed)[0].min() < min_guest:
            continue
        placed.append(frac)
    if len(placed) < n:
        raise WorkerError("NOT_ENOUGH_SITES",
                          f"Only {len(placed)} {'' if mode in ('auto', 'custom') else mode + ' '}sites for {species} keep "
                          f"{min_guest} Å between guests; {n} asked", {"available": len(placed), "requested": n})
    s = host.copy()
    sites = []
    for frac in placed:
        nearest, cn = _environment(host, frac)
        s.append(species, frac, coords_are_cartesian=False)
        sites.append({"frac_coords": frac.tolist(), "nearest_host_distance": nearest, "coordination": cn})
    return {"structures": [structure_out(s)], "labels": [f"Intercalated: {n}× {species} ({mode})"], "count": 1,
            "truncated": False, "sites": sites}
