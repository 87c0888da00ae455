"""`adsorption_sites`: pymatgen's `AdsorbateSiteFinder.find_adsorption_sites` (ontop, bridge and
hollow sites from a Delaunay triangulation of the surface atoms, reduced by the slab's symmetry)
on the top, bottom or both surfaces of a slab."""

from __future__ import annotations

from typing import Any

from ...errors import WorkerError
from . import _adsorption as ads
from ._common import check_cancel

METHOD = "adsorption_sites"


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    ads.pymatgen()
    slab = ads.structure(params["structure"])
    if not hasattr(slab, "lattice"):
        raise WorkerError("MISSING_LATTICE", "site finding needs a periodic slab (the structure has no lattice)")
    check_cancel(cancel)
    try:
        sites = ads.find_sites(slab, params["surface"], params["height"], params["positions"], params["symm_reduce"],
                               params["near_reduce"], params["surface_height"], params["no_obtuse_hollow"])
    except WorkerError:
        raise
    except Exception as exc:  # Delaunay (Qhull) refuses degenerate meshes, e.g. surface atoms on one line
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise WorkerError("NO_SURFACE_SITES", f"no adsorption sites could be found on this slab: {reason}") from None
    return {"sites": sites}
