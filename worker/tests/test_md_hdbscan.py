"""The analysis worker's `md_hdbscan` method: its labels are scikit-learn's HDBSCAN run directly
on the same precomputed matrix, and malformed or out-of-range input is a coded error, one row
per case."""

from __future__ import annotations

import base64

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.cluster import HDBSCAN  # noqa: E402
from sklearn.metrics import adjusted_rand_score, pairwise_distances  # noqa: E402

from atomstudio_worker.analysis.methods import METHODS  # noqa: E402
from atomstudio_worker.errors import WorkerError  # noqa: E402


def blobs(seed: int, n: int = 90) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    x[: n // 3] += 6
    x[n // 3 : 2 * n // 3] -= 6
    x[-3:] += rng.normal(scale=30, size=(3, 4))  # a few far outliers: noise
    return pairwise_distances(x)


def call(dist: np.ndarray, **params):
    payload = base64.b64encode(np.ascontiguousarray(dist, dtype="<f8").tobytes()).decode()
    return METHODS["md_hdbscan"]({"distance": payload, "n_frames": len(dist), **params}, None, None)


@pytest.mark.parametrize(
    "seed, params",
    [
        (1, {}),
        (2, {"min_cluster_size": 10}),
        (3, {"min_cluster_size": 4, "min_samples": 2}),
        (4, {"min_cluster_size": 60, "allow_single_cluster": True}),
    ],
)
def test_same_labels_as_scikit_learn(seed, params):
    dist = blobs(seed)
    ours = call(dist, **params)["labels"]
    theirs = HDBSCAN(metric="precomputed", copy=True, min_cluster_size=params.get("min_cluster_size", 5),
                     min_samples=params.get("min_samples"),
                     allow_single_cluster=params.get("allow_single_cluster", False)).fit_predict(dist)
    assert ours == theirs.tolist()
    assert adjusted_rand_score(ours, theirs) == 1.0


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"min_cluster_size": 1}, "min_cluster_size 1"),
        ({"min_cluster_size": 91}, "min_cluster_size 91"),
        ({"min_samples": 0}, "min_samples 0"),
        ({"min_samples": 500}, "min_samples 500"),
        ({"n_frames": 89}, "not 89 x 89"),
    ],
)
def test_bad_parameters_are_coded(params, fragment):
    dist = blobs(5)
    with pytest.raises(WorkerError) as err:
        call(dist, **params)
    assert err.value.code == "INVALID_CLUSTER_PARAMETERS"
    assert fragment in str(err.value)


def test_non_finite_matrix_is_coded():
    dist = blobs(6)
    dist[0, 1] = np.nan
    with pytest.raises(WorkerError) as err:
        call(dist)
    assert err.value.code == "INVALID_CLUSTER_PARAMETERS"
