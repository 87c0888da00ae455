"""EMT + BFGS through the worker protocol gives what the same ASE loop gives in-process."""

from __future__ import annotations

import numpy as np
import pytest
from ase.calculators.emt import EMT
from ase.constraints import FixAtoms
from ase.filters import FrechetCellFilter
from ase.optimize import BFGS
from conftest import cu_cluster, from_pmg, positions_of, pt_slab, to_pmg


def ase_reference(d, fmax=0.05, steps=200, frozen=(), cell=False):
    atoms = from_pmg(d)
    atoms.calc = EMT()
    if frozen:
        atoms.set_constraint(FixAtoms(indices=list(frozen)))
    e0 = atoms.get_potential_energy()
    target = FrechetCellFilter(atoms) if cell else atoms
    opt = BFGS(target, logfile=None)
    converged = opt.run(fmax=fmax, steps=steps)
    return atoms, e0, converged, opt.nsteps


def test_cu_cluster_matches_ase(worker):
    d = to_pmg(cu_cluster())
    events, reply = worker.collect(worker.send("optimize", {"structure": d, "calculator": "emt",
                                                             "optimizer": "bfgs", "fmax": 0.02}))
    assert reply["ok"], reply
    res = reply["result"]
    ref, e0, converged, nsteps = ase_reference(d, fmax=0.02)
    assert res["converged"] is True and bool(converged) is True
    assert res["steps"] == nsteps
    assert abs(res["initial_energy"] - e0) < 1e-6
    assert abs(res["energy"] - ref.get_potential_energy()) < 1e-6
    assert np.abs(positions_of(res["structure"]) - ref.get_positions()).max() < 1e-5
    # one event per ASE iteration including the initial point, energies as ASE's
    assert [e["data"]["step"] for e in events] == list(range(nsteps + 1))
    assert abs(events[0]["data"]["energy"] - e0) < 1e-6
    forces = np.array([s["properties"]["forces"] for s in res["structure"]["sites"]])
    assert np.abs(forces - ref.get_forces()).max() < 1e-5
    assert res["fmax"] < 0.02


def test_pt_slab_frozen_bottom_layers(worker):
    slab = pt_slab()
    frozen = [a.index for a in slab if a.tag >= 3]  # fcc111 tags layers from the top: 3, 4 are the bottom
    assert len(frozen) == 8
    d = to_pmg(slab)
    start = positions_of(d)
    reply = worker.call("optimize", {"structure": d, "calculator": "emt", "optimizer": "bfgs",
                                     "frozen_atoms": frozen, "fmax": 0.03})
    assert reply["ok"], reply
    res = reply["result"]
    ref, e0, converged, nsteps = ase_reference(d, fmax=0.03, frozen=frozen)
    assert res["converged"] and converged
    assert res["steps"] == nsteps
    assert abs(res["energy"] - ref.get_potential_energy()) < 1e-6
    final = positions_of(res["structure"])
    assert np.abs(final - ref.get_positions()).max() < 1e-5
    # frozen atoms do not move at all; the others did
    assert np.array_equal(final[frozen], start[frozen])
    free = [i for i in range(len(slab)) if i not in frozen]
    assert np.abs(final[free] - start[free]).max() > 1e-3
    # periodicity and lattice came back as they went in
    assert res["structure"]["lattice"]["pbc"] == [True, True, False]
    assert np.allclose(res["structure"]["lattice"]["matrix"], d["lattice"]["matrix"])


def emt_cu_lattice_constant() -> float:
    """EMT's equilibrium fcc Cu lattice constant from an equation-of-state fit."""
    from ase.build import bulk
    from ase.eos import EquationOfState

    vols, ens = [], []
    for a in np.linspace(3.55, 3.65, 11):
        atoms = bulk("Cu", "fcc", a=a, cubic=True)
        atoms.calc = EMT()
        vols.append(atoms.get_volume())
        ens.append(atoms.get_potential_energy())
    v0, _, _ = EquationOfState(vols, ens).fit()
    return (v0) ** (1 / 3)


def test_cell_relaxation_recovers_lattice_constant(worker):
    from ase.build import bulk

    strained = bulk("Cu", "fcc", a=3.80, cubic=True)  # +5.7 % strain
    d = to_pmg(strained)
    reply = worker.call("optimize", {"structure": d, "calculator": "emt", "optimize_cell": True,
                                     "fmax": 0.001, "max_steps": 100})
    assert reply["ok"], reply
    res = reply["result"]
    assert res["converged"]
    lat = res["structure"]["lattice"]
    a0 = emt_cu_lattice_constant()
    for key in ("a", "b", "c"):
        assert abs(lat[key] - a0) < 2e-3, (lat[key], a0)
    assert abs(lat["alpha"] - 90) < 1e-6 and abs(lat["gamma"] - 90) < 1e-6
    ref, _, converged, nsteps = ase_reference(d, fmax=0.001, steps=100, cell=True)
    assert abs(res["energy"] - ref.get_potential_energy()) < 1e-6
    assert np.abs(np.array(lat["matrix"]) - ref.cell[:]).max() < 1e-5
    assert res["steps"] == nsteps


def test_max_steps_not_converged(worker):
    d = to_pmg(cu_cluster())
    events, reply = worker.collect(worker.send("optimize", {"structure": d, "calculator": "emt",
                                                             "fmax": 1e-6, "max_steps": 3}))
    res = reply["result"]
    assert res["converged"] is False and res["steps"] == 3
    assert len(events) == 4 and "not converged" in res["message"]


def test_energy_single_point_matches_ase(worker):
    from ase.build import bulk

    atoms = bulk("Cu", "fcc", a=3.7, cubic=True) * (2, 2, 2)
    atoms.rattle(0.02, seed=3)
    d = to_pmg(atoms)
    reply = worker.call("energy", {"structure": d, "calculator": "emt"})
    assert reply["ok"], reply
    res = reply["result"]
    ref = from_pmg(d)
    ref.calc = EMT()
    assert abs(res["energy"] - ref.get_potential_energy()) < 1e-9
    assert abs(res["energy_per_atom"] - ref.get_potential_energy() / len(ref)) < 1e-9
    assert np.abs(np.array(res["forces"]) - ref.get_forces()).max() < 1e-9
    assert np.abs(np.array(res["stress"]) - ref.get_stress()).max() < 1e-9
    assert abs(res["fmax"] - np.linalg.norm(ref.get_forces(), axis=1).max()) < 1e-9


def test_molecule_energy_has_no_stress(worker):
    reply = worker.call("energy", {"structure": to_pmg(cu_cluster()), "calculator": "emt"})
    assert reply["ok"] and "stress" not in reply["result"]


@pytest.mark.parametrize("optimizer", ["tr_min"])
def test_sella_minimizer_reaches_same_minimum(worker, optimizer):
    pytest.importorskip("sella")
    from ase.cluster import Icosahedron

    cluster = Icosahedron("Cu", 2)  # 13 atoms: Sella's cost grows quickly with size
    cluster.rattle(0.05, seed=1)
    d = to_pmg(cluster)
    reply = worker.call("optimize", {"structure": d, "calculator": "emt", "optimizer": optimizer,
                                     "fmax": 0.01, "optimizer_params": {"delta0": 0.1}})
    assert reply["ok"], reply
    ref, _, _, _ = ase_reference(d, fmax=0.01)
    assert reply["result"]["converged"]
    # a different algorithm: same local minimum of the same potential, not the same path
    assert abs(reply["result"]["energy"] - ref.get_potential_energy()) < 1e-3


def test_sella_keeps_frozen_atoms_fixed(worker):
    pytest.importorskip("sella")
    from ase.build import add_adsorbate, fcc100

    slab = fcc100("Al", size=(2, 2, 2), vacuum=6.0)
    add_adsorbate(slab, "Au", 1.7, "hollow")
    slab.rattle(0.02, seed=1)
    frozen = [a.index for a in slab if a.tag == 2]  # the bottom Al layer
    d = to_pmg(slab)
    reply = worker.call("optimize", {"structure": d, "calculator": "emt", "optimizer": "tr_min",
                                     "frozen_atoms": frozen, "fmax": 0.01})
    assert reply["ok"] and reply["result"]["converged"], reply
    start, final = positions_of(d), positions_of(reply["result"]["structure"])
    assert np.array_equal(final[frozen], start[frozen])
    assert np.abs(final - start).max() > 1e-2


def test_sella_transition_state_au_hop_on_al100(worker):
    """The classic ASE example: Au hopping between hollow sites of Al(100) crosses the bridge site."""
    pytest.importorskip("sella")
    from ase.build import add_adsorbate, fcc100

    def slab(site):
        s = fcc100("Al", size=(2, 2, 3), vacuum=8.0)
        add_adsorbate(s, "Au", 1.7, site)
        return s

    frozen = [a.index for a in slab("hollow") if a.tag == 3]  # the bottom layer
    # minimum: Au in the hollow site; reference saddle: Au relaxed in the (symmetric) bridge site
    ends = {}
    for site in ("hollow", "bridge"):
        r = worker.call("optimize", {"structure": to_pmg(slab(site)), "calculator": "emt",
                                     "frozen_atoms": frozen, "fmax": 0.005})
        assert r["ok"] and r["result"]["converged"], r
        ends[site] = r["result"]
    guess = slab("bridge")
    guess.positions[-1, 1] += 0.3  # push Au off the bridge, towards a hollow site
    reply = worker.call("optimize", {"structure": to_pmg(guess), "calculator": "emt", "optimizer": "tr_ts",
                                     "frozen_atoms": frozen, "fmax": 0.005})
    assert reply["ok"] and reply["result"]["converged"], reply
    ts = reply["result"]
    barrier = ts["energy"] - ends["hollow"]["energy"]
    assert abs(ts["energy"] - ends["bridge"]["energy"]) < 1e-3
    assert 0.3 < barrier < 0.45, barrier  # ASE's NEB tutorial finds about 0.37 eV
    au = positions_of(ts["structure"])[-1]
    bridge_y = positions_of(ends["bridge"]["structure"])[-1][1]
    assert abs(au[1] - bridge_y) < 0.02  # back on the bridge along the hop direction
