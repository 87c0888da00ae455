"""Model weights come from a server-side allowlist by id; a request never names a file.

A pickle is code: `torch.load` without `weights_only=True` runs whatever the file says. These
tests hand the worker a malicious pickle whose payload creates a marker file, by every route a
caller could try (a path in the request, an id that looks like a path), and check that it is
refused and that the marker never appears. Allowlisted models (the models folder, the packaged
CHGNet weights, the operator's environment variables) load through the same code.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil

import pytest
from conftest import WorkerClient, module_available, to_pmg

needs_torch = pytest.mark.skipif(not module_available("torch"), reason="torch not installed")


class _Payload:
    """Unpickling this object opens (creates) the marker file: proof that code ran."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def write_evil_pickle(path: str, marker: str) -> str:
    """A file that torch.load(weights_only=False) and pickle.load both execute."""
    with open(path, "wb") as fh:
        pickle.dump({"model": _Payload(marker), "state_dict": _Payload(marker)}, fh)
    return path


def evil_m3gnet_dir(path: str, marker: str) -> str:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "model.json"), "w") as fh:
        json.dump({"@class": "Potential", "@module": "matgl.apps.pes", "@model_version": 0}, fh)
    for name in ("model.pt", "state.pt"):
        write_evil_pickle(os.path.join(path, name), marker)
    return path


def cu_cell():
    from ase.build import bulk

    return to_pmg(bulk("Cu", "fcc", a=3.6))


def methane():
    from ase.build import molecule

    return to_pmg(molecule("CH4"))


# [calculator, how the evil file is laid out]
MODEL_PATH_ROWS = [
    ("chgnet", "file"),
    ("mace", "file"),
    ("m3gnet", "dir"),
]


@needs_torch
@pytest.mark.parametrize("calc,layout", MODEL_PATH_ROWS)
def test_model_path_from_a_request_is_refused_and_never_loaded(tmp_path, calc, layout):
    marker = tmp_path / "PWNED"
    evil = (evil_m3gnet_dir(str(tmp_path / "evil"), str(marker)) if layout == "dir"
            else write_evil_pickle(str(tmp_path / "evil.pth.tar"), str(marker)))
    client = WorkerClient()
    try:
        for method in ("energy", "optimize"):
            reply = client.call(method, {"structure": cu_cell(), "calculator": calc,
                                         "calculator_params": {"model_path": evil}})
            assert reply["ok"] is False
            assert reply["error"]["code"] == "MODEL_PATH_NOT_ALLOWED", reply
        assert client.call("hello")["ok"]
    finally:
        client.close()
    assert not marker.exists(), "the pickle's payload ran in the worker"


# model ids a caller might try: none is in the allowlist, so none reaches a loader
UNKNOWN_ID_ROWS = [
    "nope",
    "../evil",
    "evil.pth.tar",
    "EVIL_ABS",  # replaced by the absolute path of the evil file
    "0.3.0/../../evil",
]


@needs_torch
@pytest.mark.skipif(not module_available("chgnet"), reason="chgnet not installed")
@pytest.mark.parametrize("model_id", UNKNOWN_ID_ROWS)
def test_unknown_model_id_is_refused_with_the_available_ids(tmp_path, model_id):
    marker = tmp_path / "PWNED"
    evil = write_evil_pickle(str(tmp_path / "evil.pth.tar"), str(marker))
    models = tmp_path / "models"
    (models / "chgnet").mkdir(parents=True)
    client = WorkerClient({"ATOMSTUDIO_MODELS_DIR": str(models)})
    try:
        reply = client.call("energy", {"structure": cu_cell(), "calculator": "chgnet",
                                       "calculator_params": {"model": evil if model_id == "EVIL_ABS" else model_id}})
    finally:
        client.close()
    assert reply["ok"] is False and reply["error"]["code"] == "UNKNOWN_MODEL", reply
    assert "0.3.0" in reply["error"]["details"]["available"]
    assert not marker.exists()


@needs_torch
@pytest.mark.skipif(not module_available("chgnet"), reason="chgnet not installed")
def test_an_allowlisted_chgnet_file_is_read_with_weights_only(tmp_path):
    # even a file the operator put in the models folder cannot run code: CHGNet checkpoints are
    # plain state dictionaries, loaded by the worker with weights_only=True
    marker = tmp_path / "PWNED"
    (tmp_path / "models" / "chgnet").mkdir(parents=True)
    write_evil_pickle(str(tmp_path / "models" / "chgnet" / "planted.pth.tar"), str(marker))
    client = WorkerClient({"ATOMSTUDIO_MODELS_DIR": str(tmp_path / "models")})
    try:
        listing = client.call("calculators")["result"]["calculators"]
        chgnet = next(c for c in listing if c["id"] == "chgnet")
        assert "planted" in [m["id"] for m in chgnet["models"]]
        reply = client.call("energy", {"structure": cu_cell(), "calculator": "chgnet",
                                       "calculator_params": {"model": "planted"}})
    finally:
        client.close()
    assert reply["ok"] is False and reply["error"]["code"] == "CALCULATOR_UNAVAILABLE", reply
    assert not marker.exists()


@needs_torch
@pytest.mark.skipif(not module_available("chgnet"), reason="chgnet not installed")
def test_listing_names_the_allowlisted_models(tmp_path):
    import chgnet

    models = tmp_path / "models"
    (models / "chgnet").mkdir(parents=True)
    (models / "mace").mkdir()
    packaged = os.path.join(os.path.dirname(chgnet.__file__), "pretrained", "0.3.0")
    weights = next(f for f in os.listdir(packaged) if f.endswith(".pth.tar"))
    shutil.copy(os.path.join(packaged, weights), models / "chgnet" / "site-copy.pth.tar")
    (models / "chgnet" / ".hidden.pth.tar").write_bytes(b"")  # hidden entries are not models
    client = WorkerClient({"ATOMSTUDIO_MODELS_DIR": str(models)})
    try:
        listing = {c["id"]: c for c in client.call("calculators")["result"]["calculators"]}
        chg = listing["chgnet"]
        ids = {m["id"]: m for m in chg["models"]}
        assert ids["0.3.0"]["source"] == "package" and ids["0.3.0"]["default"] is True
        assert ids["site-copy"]["source"] == "models_dir" and ids["site-copy"]["default"] is False
        assert ".hidden" not in ids and "r2scan" in ids
        assert listing["emt"]["models"] is None
        if module_available("mace"):  # an empty mace folder: nothing to offer, and it says where to put one
            assert listing["mace"]["available"] is False and listing["mace"]["models"] == []
            assert "ATOMSTUDIO_MODELS_DIR" in listing["mace"]["status_message"]
        # the site copy loads (weights only) and gives the packaged model's energy
        a = client.call("energy", {"structure": cu_cell(), "calculator": "chgnet",
                                   "calculator_params": {"model": "site-copy"}})
        b = client.call("energy", {"structure": cu_cell(), "calculator": "chgnet"})
        assert a["ok"] and b["ok"], (a, b)
        assert abs(a["result"]["energy"] - b["result"]["energy"]) < 1e-6
    finally:
        client.close()
