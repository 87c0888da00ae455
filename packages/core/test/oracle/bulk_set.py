"""The bulk structures shared by the slab and symmetry conformance tests, built with pymatgen."""

import os

from pymatgen.core import Lattice, Structure


def bulk_structures(testdata_dir):
    """Name -> conventional bulk Structure; one per structure family the tests cover."""
    s = {}
    s["Cu_fcc"] = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.615), ["Cu"], [[0, 0, 0]])
    s["Fe_bcc"] = Structure.from_spacegroup("Im-3m", Lattice.cubic(2.866), ["Fe"], [[0, 0, 0]])
    s["Mg_hcp"] = Structure.from_spacegroup(
        "P6_3/mmc", Lattice.hexagonal(3.209, 5.211), ["Mg"], [[1 / 3, 2 / 3, 0.25]]
    )
    s["NaCl_rocksalt"] = Structure.from_spacegroup(
        "Fm-3m", Lattice.cubic(5.64), ["Na", "Cl"], [[0, 0, 0], [0.5, 0.5, 0.5]]
    )
    s["SrTiO3_perovskite"] = Structure.from_spacegroup(
        "Pm-3m", Lattice.cubic(3.905), ["Sr", "Ti", "O"], [[0, 0, 0], [0.5, 0.5, 0.5], [0.5, 0.5, 0]]
    )
    s["TiO2_rutile"] = Structure.from_spacegroup(
        "P4_2/mnm", Lattice.tetragonal(4.594, 2.959), ["Ti", "O"], [[0, 0, 0], [0.3048, 0.3048, 0]]
    )
    s["ZnO_wurtzite"] = Structure.from_spacegroup(
        "P6_3mc", Lattice.hexagonal(3.25, 5.207), ["Zn", "O"], [[1 / 3, 2 / 3, 0], [1 / 3, 2 / 3, 0.382]]
    )
    s["MgAl2O4_spinel"] = Structure.from_spacegroup(
        "Fd-3m",
        Lattice.cubic(8.08),
        ["Mg", "Al", "O"],
        [[0.125, 0.125, 0.125], [0.5, 0.5, 0.5], [0.2624, 0.2624, 0.2624]],
    )
    s["LiFePO4_olivine"] = Structure.from_file(os.path.join(testdata_dir, "structures", "POSCAR_LiFePO4"))
    s["MoS2_layered"] = Structure.from_spacegroup(
        "P6_3/mmc", Lattice.hexagonal(3.16, 12.29), ["Mo", "S"], [[1 / 3, 2 / 3, 0.25], [1 / 3, 2 / 3, 0.621]]
    )
    s["Si_diamond"] = Structure.from_spacegroup("Fd-3m", Lattice.cubic(5.431), ["Si"], [[0, 0, 0]])
    s["GaAs_zincblende"] = Structure.from_spacegroup(
        "F-43m", Lattice.cubic(5.653), ["Ga", "As"], [[0, 0, 0], [0.25, 0.25, 0.25]]
    )
    s["CsCl"] = Structure.from_spacegroup(
        "Pm-3m", Lattice.cubic(4.12), ["Cs", "Cl"], [[0, 0, 0], [0.5, 0.5, 0.5]]
    )
    s["Al2O3_corundum"] = Structure.from_spacegroup(
        "R-3c", Lattice.hexagonal(4.759, 12.99), ["Al", "O"], [[0, 0, 0.35216], [0.30624, 0, 0.25]]
    )
    s["CaF2_fluorite"] = Structure.from_spacegroup(
        "Fm-3m", Lattice.cubic(5.463), ["Ca", "F"], [[0, 0, 0], [0.25, 0.25, 0.25]]
    )
    s["graphite_layered"] = Structure.from_spacegroup(
        "P6_3/mmc", Lattice.hexagonal(2.464, 6.711), ["C", "C"], [[0, 0, 0.25], [1 / 3, 2 / 3, 0.25]]
    )
    s["triclinic_P-1"] = Structure.from_spacegroup(
        "P-1",
        Lattice.from_parameters(4.1, 5.3, 6.2, 81.0, 97.0, 104.0),
        ["K", "O"],
        [[0.1, 0.2, 0.3], [0.25, 0.7, 0.1]],
    )
    s["monoclinic_C2m"] = Structure.from_spacegroup(
        "C2/m", Lattice.monoclinic(5.6, 3.9, 6.3, 104.0), ["Zr", "O"], [[0.0, 0.0, 0.0], [0.28, 0.0, 0.31]]
    )
    return s
