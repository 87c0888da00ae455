"""Machine-learned potentials through the worker equal direct calls of the same libraries.

CHGNet uses the weights its package ships. MACE and M3GNet have no model inside their packages
(they download pretrained ones, which cannot happen here), so the tests build tiny random models,
save them in a models folder (the server-side allowlist, `ATOMSTUDIO_MODELS_DIR`) or name them in the
operator's environment, and the worker loads them through its normal code, by model id.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import WorkerClient, module_available, to_pmg

needs_torch = pytest.mark.skipif(not module_available("torch"), reason="torch not installed")


def cu_cell_64():
    from ase.build import bulk

    atoms = bulk("Cu", "fcc", a=3.62, cubic=True) * (2, 2, 4)  # 64 atoms
    atoms.rattle(0.03, seed=4)
    return atoms


@needs_torch
@pytest.mark.skipif(not module_available("chgnet"), reason="chgnet not installed")
def test_chgnet_energy_equals_direct_call(worker):
    from chgnet.model import CHGNet
    from chgnet.model.dynamics import CHGNetCalculator

    atoms = cu_cell_64()
    atoms.wrap()  # the worker receives wrapped coordinates through pymatgen; give the direct call the same
    reply = worker.call("energy", {"structure": to_pmg(atoms), "calculator": "chgnet"})
    assert reply["ok"], reply
    atoms.calc = CHGNetCalculator(model=CHGNet.load(verbose=False), use_device="cpu")
    # CHGNet computes in float32, and the order of its float32 sums depends on the CPU and its thread
    # count (CI saw 1.4e-3 eV on this -261 eV total). 5e-5 eV/atom is float32 rounding; any other
    # model or a wrong structure differs by whole eV.
    assert abs(reply["result"]["energy"] - atoms.get_potential_energy()) < 5e-5 * len(atoms)
    assert np.abs(np.array(reply["result"]["forces"]) - atoms.get_forces()).max() < 5e-4
    assert np.abs(np.array(reply["result"]["stress"]) - atoms.get_stress()).max() < 5e-5


@needs_torch
@pytest.mark.skipif(not module_available("chgnet"), reason="chgnet not installed")
def test_chgnet_molecule_is_boxed_and_optimizes(worker):
    from ase import Atoms

    mol = Atoms("OH2", positions=[[0, 0, 0.12], [0, 0.80, -0.47], [0, -0.80, -0.47]])
    events, reply = worker.collect(worker.send("optimize", {"structure": to_pmg(mol), "calculator": "chgnet",
                                                             "fmax": 0.05, "max_steps": 50}))
    assert reply["ok"], reply
    res = reply["result"]
    assert res["structure"]["@class"] == "Molecule" and res["energy"] <= res["initial_energy"]


@needs_torch
@pytest.mark.skipif(not module_available("mace"), reason="mace-torch not installed")
def test_mace_model_from_the_models_folder_equals_direct_call(tmp_path):
    from ase.build import molecule
    from mace.calculators import MACECalculator
    from tiny_models import build_mace

    bare = WorkerClient()
    try:
        listing = bare.call("calculators")["result"]["calculators"]
        mace = next(c for c in listing if c["id"] == "mace")
        assert mace["available"] is False and "ATOMSTUDIO_MODELS_DIR" in mace["status_message"]
    finally:
        bare.close()
    path = build_mace(str(tmp_path / "models" / "mace" / "tiny.model"))
    build_mace(str(tmp_path / "models" / "mace" / "other.model"), seed=1)
    atoms = molecule("CH4")
    atoms.rattle(0.05, seed=5)
    client = WorkerClient({"ATOMSTUDIO_MODELS_DIR": str(tmp_path / "models")})
    try:
        listing = client.call("calculators")["result"]["calculators"]
        mace = next(c for c in listing if c["id"] == "mace")
        assert mace["available"] is True
        assert mace["models"] == [{"id": "other", "source": "models_dir", "default": False},
                                  {"id": "tiny", "source": "models_dir", "default": False}]
        # two models and no default: the request must pick one
        unpicked = client.call("energy", {"structure": to_pmg(atoms), "calculator": "mace"})
        assert unpicked["error"]["code"] == "UNKNOWN_MODEL"
        assert unpicked["error"]["details"]["available"] == ["other", "tiny"]
        reply = client.call("energy", {"structure": to_pmg(atoms), "calculator": "mace",
                                       "calculator_params": {"model": "tiny"}})
        assert reply["ok"], reply
        # elements outside the model's table are refused before any work
        bad = client.call("energy", {"structure": to_pmg(molecule("SiH4")), "calculator": "mace",
                                     "calculator_params": {"model": "tiny"}})
        assert bad["error"]["code"] == "UNSUPPORTED_ELEMENTS" and "Si" in bad["error"]["message"]
    finally:
        client.close()
    atoms.calc = MACECalculator(model_paths=path, device="cpu", default_dtype="float64")
    assert abs(reply["result"]["energy"] - atoms.get_potential_energy()) < 1e-8
    assert np.abs(np.array(reply["result"]["forces"]) - atoms.get_forces()).max() < 1e-8


@needs_torch
@pytest.mark.skipif(not module_available("mace"), reason="mace-torch not installed")
def test_mace_model_from_environment_is_listed_and_loaded_once(tmp_path):
    from ase.build import molecule
    from tiny_models import build_mace

    path = build_mace(str(tmp_path / "env.model"))
    client = WorkerClient({"ATOMSTUDIO_MACE_MODEL": path, "ATOMSTUDIO_WORKER_LOG_LEVEL": "INFO"})
    try:
        listing = client.call("calculators")["result"]["calculators"]
        mace = next(c for c in listing if c["id"] == "mace")
        assert mace["available"] is True and mace["status_message"] is None
        for _ in range(2):
            reply = client.call("optimize", {"structure": to_pmg(molecule("CH4")), "calculator": "mace",
                                             "max_steps": 3})
            assert reply["ok"], reply
        client.close()
        assert client.stderr.count("loading ('mace'") == 1  # cached per worker process
    finally:
        client.close()


@needs_torch
@pytest.mark.skipif(not module_available("matgl"), reason="matgl not installed")
def test_m3gnet_model_from_the_models_folder_equals_direct_call(tmp_path):
    import matgl
    from ase.build import bulk
    from matgl.ext.ase import PESCalculator
    from tiny_models import build_m3gnet

    path = build_m3gnet(str(tmp_path / "models" / "m3gnet" / "small"))
    (tmp_path / "models" / "m3gnet" / "incomplete").mkdir()  # no model.json etc.: not a model
    atoms = bulk("Si", "diamond", a=5.43) * (2, 1, 1)
    atoms.rattle(0.03, seed=6)
    client = WorkerClient({"ATOMSTUDIO_MODELS_DIR": str(tmp_path / "models")})
    try:
        listing = client.call("calculators")["result"]["calculators"]
        m3g = next(c for c in listing if c["id"] == "m3gnet")
        assert m3g["available"] is True
        assert m3g["models"] == [{"id": "small", "source": "models_dir", "default": True}]  # the only one
        reply = client.call("energy", {"structure": to_pmg(atoms), "calculator": "m3gnet",
                                       "calculator_params": {"model": "small"}})
        assert reply["ok"], reply
        fe = client.call("energy", {"structure": to_pmg(bulk("Fe")), "calculator": "m3gnet"})
        assert fe["error"]["code"] == "UNSUPPORTED_ELEMENTS"
    finally:
        client.close()
    atoms.calc = PESCalculator(matgl.load_model(path), stress_unit="eV/A3")
    assert abs(reply["result"]["energy"] - atoms.get_potential_energy()) < 1e-5
    assert np.abs(np.array(reply["result"]["forces"]) - atoms.get_forces()).max() < 1e-5
    assert np.abs(np.array(reply["result"]["stress"]) - atoms.get_stress()).max() < 1e-6


def test_m3gnet_without_model_is_unavailable_with_instructions(worker):
    reply = worker.call("calculators")
    m3g = next(c for c in reply["result"]["calculators"] if c["id"] == "m3gnet")
    if module_available("matgl"):
        assert m3g["available"] is False and "ATOMSTUDIO_M3GNET_MODEL" in m3g["status_message"]
    else:
        assert "pip install" in m3g["status_message"]
