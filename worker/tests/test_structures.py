"""The worker's own pymatgen-dict conversion against pymatgen itself (the oracle)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from atomstudio_worker.errors import WorkerError
from atomstudio_worker.structures import from_dict, to_dict


def _pmg_structure():
    from pymatgen.core import Lattice, Structure

    lat = Lattice.from_parameters(4.1, 4.3, 5.2, 80, 95, 110, pbc=(True, True, False))
    s = Structure(lat, ["Cu", "O", "Fe"], [[0, 0, 0], [0.5, 0.25, 0.1], [1.2, -0.1, 0.5]],
                  site_properties={"magmom": [0.0, 0.1, 2.0]}, labels=["Cu1", "O1", "Fe1"])
    s.add_oxidation_state_by_element({"Cu": 2, "O": -2, "Fe": 2})
    return s


def test_structure_round_trip_equals_pymatgen():
    from pymatgen.core import Structure
    from pymatgen.io.ase import AseAtomsAdaptor

    s = _pmg_structure()
    d = json.loads(s.to_json())
    atoms, meta = from_dict(d)
    ref = AseAtomsAdaptor.get_atoms(s)
    assert np.abs(atoms.get_positions() - ref.get_positions()).max() < 1e-12
    assert np.abs(atoms.cell[:] - ref.cell[:]).max() < 1e-12
    assert list(atoms.pbc) == [True, True, False]
    out = to_dict(atoms, meta)
    assert json.loads(json.dumps(out)) == out  # plain JSON
    again = Structure.from_dict(out)
    assert again == s  # same lattice, species (with oxidation states) and positions
    assert again.labels == s.labels
    assert again.site_properties["magmom"] == [0.0, 0.1, 2.0]
    # not wrapped into the cell: the site at abc 1.2 stays there
    assert abs(out["sites"][2]["abc"][0] - 1.2) < 1e-12
    ref_d = s.as_dict()
    assert list(out) == list(ref_d)
    assert list(out["lattice"]) == list(ref_d["lattice"])
    for key in ("a", "b", "c", "alpha", "beta", "gamma", "volume"):
        assert out["lattice"][key] == pytest.approx(ref_d["lattice"][key], abs=1e-10)
    for mine, theirs in zip(out["sites"], ref_d["sites"]):
        assert list(mine) == list(theirs)


def test_molecule_round_trip_equals_pymatgen():
    from pymatgen.core import Molecule

    m = Molecule(["O", "H", "H"], [[0, 0, 0.12], [0, 0.76, -0.47], [0, -0.76, -0.47]], charge=-1,
                 spin_multiplicity=2)
    d = m.as_dict()
    atoms, meta = from_dict(d)
    assert not atoms.pbc.any()
    out = to_dict(atoms, meta, forces=np.ones((3, 3)))
    assert list(out) == list(d)
    assert [list(s) for s in out["sites"]] == [list(s) for s in d["sites"]]
    again = Molecule.from_dict(out)
    assert again.site_properties["forces"] == [[1.0, 1.0, 1.0]] * 3
    again.remove_site_property("forces")  # sites compare their properties too
    assert again == m and again.charge == -1 and again.spin_multiplicity == 2


@pytest.mark.parametrize("bad,msg", [
    ({"sites": []}, "no sites"),
    ("nope", "object"),
    ({"@class": "Structure", "sites": [{"species": [{"element": "Cu", "occu": 1}], "abc": [0, 0, 0]}]}, "lattice"),
    ({"sites": [{"species": [{"element": "Cu", "occu": 0.5}, {"element": "Au", "occu": 0.5}], "xyz": [0, 0, 0]}]},
     "disordered"),
    ({"sites": [{"species": [{"element": "Cu", "occu": 0.5}], "xyz": [0, 0, 0]}]}, "partial occupancy"),
    ({"sites": [{"species": [{"element": "Qq", "occu": 1}], "xyz": [0, 0, 0]}]}, "unknown element"),
    ({"sites": [{"species": [{"element": "Cu", "occu": 1}], "xyz": [0, 0]}]}, "3 numbers"),
    ({"sites": [{"species": [{"element": "Cu", "occu": 1}]}]}, "needs xyz"),
    ({"lattice": {"matrix": [[1, 0, 0], [2, 0, 0], [0, 0, 1]]},
      "sites": [{"species": [{"element": "Cu", "occu": 1}], "abc": [0, 0, 0]}]}, "singular"),
])
def test_invalid_structures(bad, msg):
    with pytest.raises(WorkerError) as err:
        from_dict(bad)
    assert err.value.code == "INVALID_STRUCTURE" and msg in err.value.message
