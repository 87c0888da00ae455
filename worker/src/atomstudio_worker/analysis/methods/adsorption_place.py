"""`adsorption_place`: one adsorbate at a site, `add_adsorbate`-style (binding atoms at the site,
the molecule's z along the outward normal, a along the slab's a), with a periodic overlap check."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _adsorption as ads

METHOD = "adsorption_place"


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    ads.pymatgen()
    slab = ads.structure(params["slab"])
    molecule = ads.structure(params["adsorbate"])
    normal = np.asarray(params["normal"], dtype=float)
    merged, info = ads.place(slab, molecule, params["binding"], np.asarray(params["site_position"], dtype=float),
                             normal, params["height_offset"], params["auto_rotate"], params["clearance"],
                             params["on_overlap"], params["max_lift"])
    return {"structure": ads.as_output(merged), **info}
