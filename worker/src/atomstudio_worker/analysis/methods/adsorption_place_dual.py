"""`adsorption_place_dual`: two adsorbates on the pair of sites whose (minimum-image) distance is
closest to the target within the tolerance; the second is placed against slab + first."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _adsorption as ads
from ._common import check_cancel

METHOD = "adsorption_place_dual"


def _pair(slab, sites: list[dict], target: float, tolerance: float):
    pos = np.array([s["position"] for s in sites], dtype=float)
    if hasattr(slab, "lattice"):
        f = slab.lattice.get_fractional_coords(pos)
        d = slab.lattice.get_all_distances(f, f)
    else:
        d = np.linalg.norm(pos[:, None, :] - pos[None, :, :], axis=2)
    best = None
    for i in range(len(sites)):
        for j in range(i + 1, len(sites)):
            err = abs(d[i, j] - target)
            if err <= tolerance and (best is None or err < best[0] - 1e-12):
                best = (err, i, j, float(d[i, j]))
    if best is None:
        raise WorkerError("NO_SITE_PAIR",
                          f"no two of the {len(sites)} sites are {target} ± {tolerance} Å apart",
                          {"n_sites": len(sites), "target_distance": target, "distance_tolerance": tolerance})
    return best[1], best[2], best[3]


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    ads.pymatgen()
    slab = ads.structure(params["slab"])
    sites = params.get("sites")
    if sites is None:
        if not hasattr(slab, "lattice"):
            raise WorkerError("MISSING_LATTICE", "without sites, site finding needs a periodic slab")
        sites = ads.find_sites(slab, "top", params["height"], list(ads.PYMATGEN_KINDS), 1e-2, 1e-2, 0.9, True)
    if len(sites) < 2:
        raise WorkerError("NO_SITE_PAIR", f"two sites are needed, {len(sites)} given or found", {"n_sites": len(sites)})
    i, j, site_distance = _pair(slab, sites, params["target_distance"], params["distance_tolerance"])
    check_cancel(cancel)
    common = (params["auto_rotate"], params["clearance"], params["on_overlap"], params["max_lift"])
    normal_of = lambda s: np.asarray(s.get("normal") or ads.slab_normal(slab), dtype=float)  # noqa: E731
    mol1 = ads.structure(params["adsorbate1"])
    mol2 = ads.structure(params["adsorbate2"])
    step1, info1 = ads.place(slab, mol1, params["binding1"], np.asarray(sites[i]["position"], dtype=float),
                             normal_of(sites[i]), 0.0, *common)
    step2, info2 = ads.place(step1, mol2, params["binding2"], np.asarray(sites[j]["position"], dtype=float),
                             normal_of(sites[j]), 0.0, *common)
    n = len(slab)
    b1 = np.asarray(info1["binding_atom_position"])
    b2 = np.asarray(info2["binding_atom_position"])
    if hasattr(slab, "lattice"):
        fb = slab.lattice.get_fractional_coords(np.array([b1, b2]))
        binding_distance = float(slab.lattice.get_all_distances(fb[:1], fb[1:])[0, 0])
    else:
        binding_distance = float(np.linalg.norm(b1 - b2))
    return {
        "structure": ads.as_output(step2),
        "ads1_indices": list(range(n, n + len(mol1))),
        "ads2_indices": list(range(n + len(mol1), n + len(mol1) + len(mol2))),
        "site1": {"position": list(sites[i]["position"]), "type": sites[i].get("site_type"), "index": i},
        "site2": {"position": list(sites[j]["position"]), "type": sites[j].get("site_type"), "index": j},
        "site_distance": site_distance,
        "binding_distance": binding_distance,
        "lift": [info1["lift"], info2["lift"]],
    }
