"""The `/api/build` worker methods write pymatgen dictionaries without pymatgen's per-site
`as_dict` (_build_common): the dictionaries must be the very ones pymatgen writes, for every
nanoparticle shape and for the structures the defect and intercalation methods return."""

from __future__ import annotations

import numpy as np
import pytest
from ase import Atoms
from ase.constraints import FixAtoms
from pymatgen.core import Lattice, Species, Structure
from pymatgen.io.ase import AseAtomsAdaptor

from atomstudio_worker.analysis.methods import build_nanoparticle
from atomstudio_worker.analysis.methods._build_common import atoms_structure_out, structure_out

WULFF = {"surfaces": [[1, 1, 1], [1, 0, 0], [1, 1, 0]], "energies": [1.0, 1.1, 1.2], "rounding": "closest",
         "lattice_constant": 0}

NANOPARTICLES = [
    {"element": "Pt", "shape": "icosahedron", "shells": 6, "lattice_constant": 0},
    {"element": "Au", "shape": "icosahedron", "shells": 3, "lattice_constant": 4.1},
    {"element": "Au", "shape": "wulff", "size": 300, "structure": "fcc", **WULFF},
    {"element": "Fe", "shape": "wulff", "size": 200, "structure": "bcc", **WULFF},
    {"element": "Cu", "shape": "octahedron", "length": 7, "cutoff": 2, "lattice_constant": 0},
    {"element": "Ag", "shape": "decahedron", "p": 3, "q": 2, "r": 1, "lattice_constant": 0},
]


def exact(a, b) -> None:
    """Equal, with floats bit for bit and 1 and 1.0 told apart (JSON writes them differently)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            exact(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            exact(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("params", NANOPARTICLES, ids=lambda p: f"{p['element']}-{p['shape']}")
@pytest.mark.parametrize("vacuum", [10.0, 0.0])
def test_nanoparticle_dict_is_the_adaptors(params, vacuum):
    atoms = build_nanoparticle.cluster(params)
    atoms.center(vacuum=vacuum)
    atoms.pbc = True
    reference = AseAtomsAdaptor.get_structure(atoms)
    exact(atoms_structure_out(atoms), reference.as_dict())
    out = build_nanoparticle.run({**params, "vacuum": vacuum, "max_atoms": 100000}, None, None)
    exact(out["structure"], reference.as_dict())
    assert out["formula"] == reference.composition.reduced_formula
    assert out["n_atoms"] == len(reference)


def skewed_atoms() -> Atoms:
    cell = [[4.0, 0.3, 0.1], [1.7, 3.9, -0.2], [0.4, 0.9, 5.1]]
    rng = np.random.default_rng(7)
    return Atoms("Cu3AuNi2", positions=rng.normal(size=(6, 3)) * 3, cell=cell, pbc=True)


@pytest.mark.parametrize("extra", ["plain", "tags", "magmoms", "constraint", "info"])
def test_atoms_dict_is_the_adaptors(extra):
    atoms = skewed_atoms()
    if extra == "tags":
        atoms.set_tags([1, 2, 3, 4, 5, 6])
    if extra == "magmoms":
        atoms.set_initial_magnetic_moments([0.5] * 6)
    if extra == "constraint":
        atoms.set_constraint(FixAtoms(indices=[0, 2]))
    if extra == "info":
        atoms.info["note"] = "x"
    exact(atoms_structure_out(atoms), AseAtomsAdaptor.get_structure(atoms).as_dict())


def structures() -> list[Structure]:
    skewed = Lattice([[4.0, 0.3, 0.1], [1.7, 3.9, -0.2], [0.4, 0.9, 5.1]])
    plain = Structure(skewed, ["Li", "Fe", "O", "O"], [[0, 0, 0], [0.5, 0.5, 0.5], [0.25, 0.1, 0.9], [-0.2, 1.3, 0.4]])
    oxidised = Structure(skewed, [Species("Fe", 2), Species("O", -2)], [[0, 0, 0], [0.5, 0.5, 0.5]])
    disordered = Structure(skewed, [{"Fe": 0.5, "Mn": 0.5}, {"O": 1.0}], [[0, 0, 0], [0.5, 0.5, 0.5]],
                           site_properties={"magmom": [1.5, 0]}, labels=[None, "O1"], charge=1.0)
    cartesian = Structure(skewed, ["Cu", "Cu"], [[0.1, 0.2, 0.3], [2.0, 1.0, 3.3]], coords_are_cartesian=True)
    edited = plain * (2, 1, 2)
    edited.remove_sites([3])
    edited.replace(0, "Na")
    edited.append("Li", [0.41, 0.42, 0.43])
    edited.translate_sites([1, 2], [0.1, 0.0, -0.3], to_unit_cell=True)
    edited[4].coords = [1.234567, 2.345678, 3.456789]  # a site whose cached Cartesian position was set
    return [plain, oxidised, disordered, cartesian, edited, Structure(skewed, [], [])]


@pytest.mark.parametrize("index", range(6))
def test_structure_dict_is_as_dict(index):
    s = structures()[index]
    exact(structure_out(s), s.as_dict())
