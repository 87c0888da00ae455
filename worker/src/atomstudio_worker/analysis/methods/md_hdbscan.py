"""HDBSCAN of trajectory frames (`/api/md/clustering`, method `hdbscan`): scikit-learn's
`sklearn.cluster.HDBSCAN` with `metric="precomputed"` on the frame-to-frame RMSD matrix that the
service's core builds (the same matrix its agglomerative and DBSCAN methods cut). No maintained
JavaScript HDBSCAN exists, so this one method runs here.

params: `distance` (the F x F matrix as little-endian float64 bytes, base64), `n_frames`,
`min_cluster_size` (2..F), `min_samples` (1..F, default min_cluster_size),
`cluster_selection_epsilon` (>= 0, Angstrom RMSD), `allow_single_cluster`.
Answers `labels` (-1: noise), scikit-learn's own.
"""

from __future__ import annotations

import base64
from typing import Any

from ...errors import WorkerError
from ..store import unavailable
from ._common import check_cancel

METHOD = "md_hdbscan"


def _bad(message: str, details: dict[str, Any]) -> WorkerError:
    return WorkerError("INVALID_CLUSTER_PARAMETERS", message, details)


def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    try:
        import numpy as np
        from sklearn.cluster import HDBSCAN
    except ImportError as exc:
        raise unavailable("scikit-learn", exc) from None
    n = int(params["n_frames"])
    raw = base64.b64decode(params["distance"], validate=True)
    if n < 1 or len(raw) != 8 * n * n:
        raise _bad(f"distance holds {len(raw) // 8} numbers, not {n} x {n}", {"n_frames": n})
    dist = np.frombuffer(raw, dtype="<f8").reshape(n, n)
    if not np.all(np.isfinite(dist)):
        raise _bad("distance has non-finite entries", {"n_frames": n})
    min_cluster_size = int(params.get("min_cluster_size", 5))
    min_samples = params.get("min_samples")
    min_samples = None if min_samples is None else int(min_samples)
    epsilon = float(params.get("cluster_selection_epsilon", 0.0))
    # scikit-learn's own bounds, as coded errors before any work (it would raise ValueError).
    if not 2 <= min_cluster_size <= n:
        raise _bad(f"min_cluster_size {min_cluster_size} must be between 2 and the {n} frames",
                   {"min_cluster_size": min_cluster_size, "n_frames": n})
    if min_samples is not None and not 1 <= min_samples <= n:
        raise _bad(f"min_samples {min_samples} must be between 1 and the {n} frames",
                   {"min_samples": min_samples, "n_frames": n})
    check_cancel(cancel)
    model = HDBSCAN(
        min_cluster_size=min_cluster_size,
        min_samples=min_samples,
        cluster_selection_epsilon=epsilon,
        allow_single_cluster=bool(params.get("allow_single_cluster", False)),
        metric="precomputed",
        copy=True,
    )
    try:
        labels = model.fit_predict(dist)
    except (TypeError, ValueError) as exc:
        # scikit-learn 1.9 with NumPy 2 raises TypeError in its epsilon search on some matrices
        # (tied distances; scikit-learn issue 33219): a coded answer instead of a crash.
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        hint = " (a known scikit-learn failure with cluster_selection_epsilon; try 0)" if epsilon > 0 else ""
        raise _bad(f"scikit-learn's HDBSCAN failed on these frames: {reason}{hint}", {"n_frames": n}) from None
    return {"labels": [int(x) for x in labels]}
