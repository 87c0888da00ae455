"""The heterostructure methods (`hetero_*`) against pymatgen run directly on the same inputs
(graphene on Cu(111) and MoS2 on WS2, built here from lattice parameters): same match areas and
strains within 1e-8, same counts, same built structures up to StructureMatcher. Then one row per
defect of the earlier implementation that this group fixes (kept-routes defects 13-23)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("pymatgen.analysis.interfaces.zsl")
from pymatgen.analysis.elasticity.strain import Deformation  # noqa: E402
from pymatgen.analysis.interfaces.coherent_interfaces import CoherentInterfaceBuilder  # noqa: E402
from pymatgen.analysis.interfaces.zsl import ZSLGenerator  # noqa: E402
from pymatgen.analysis.structure_matcher import StructureMatcher  # noqa: E402
from pymatgen.core import Lattice, Structure  # noqa: E402
from pymatgen.core.surface import SlabGenerator  # noqa: E402

from atomstudio_worker.analysis.methods import METHODS  # noqa: E402
from atomstudio_worker.errors import WorkerError  # noqa: E402

TOL = 1e-8
SEARCH = dict(mode="slab", substrate_miller=[0, 0, 1], film_miller=[0, 0, 1], max_area=100, max_area_ratio_tol=0.09,
              max_length_tol=0.03, max_angle_tol=0.01, max_results=200)
BUILD = dict(gap=2.0, vacuum=20.0, substrate_thickness=3, film_thickness=3, twist_angle=0)


def call(method: str, **params):
    return METHODS[method](params, None, None)


def tmd(metal: str, a: float, dz: float, c: float = 20.0) -> Structure:
    """A 2H-type MX2 monolayer (X above and below the metal) in a cell with vacuum."""
    return Structure(Lattice.hexagonal(a, c), [metal, "S", "S"],
                     [[1 / 3, 2 / 3, 0.5], [2 / 3, 1 / 3, 0.5 + dz / c], [2 / 3, 1 / 3, 0.5 - dz / c]])


@pytest.fixture(scope="module")
def inputs():
    cu = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.615), ["Cu"], [[0, 0, 0]])
    return {
        "cu": cu,
        "cu111": SlabGenerator(cu, (1, 1, 1), 6, 15, center_slab=True, primitive=True).get_slab(),
        "graphene": Structure(Lattice.hexagonal(2.46, 20.0), ["C", "C"], [[1 / 3, 2 / 3, 0.5], [2 / 3, 1 / 3, 0.5]]),
        "graphite": Structure(Lattice.hexagonal(2.46, 6.7), ["C"] * 4,
                              [[0, 0, 0.25], [0, 0, 0.75], [1 / 3, 2 / 3, 0.25], [2 / 3, 1 / 3, 0.75]]),
        "mos2": tmd("Mo", 3.16, 1.58),
        "ws2": tmd("W", 3.153, 1.57),
    }


def oracle_matches(film_vecs, sub_vecs, p=SEARCH):
    gen = ZSLGenerator(p["max_area_ratio_tol"], p["max_area"], p["max_length_tol"], p["max_angle_tol"])
    return list(gen(np.asarray(film_vecs), np.asarray(sub_vecs)))


def oracle_strain(m) -> float:
    return Deformation(m.match_transformation).green_lagrange_strain.von_mises_strain * 100


@pytest.mark.parametrize("film,substrate", [("graphene", "cu111"), ("mos2", "ws2")])
def test_slab_search_equals_zsl(inputs, film, substrate):
    f, s = inputs[film], inputs[substrate]
    r = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)
    want = oracle_matches(f.lattice.matrix[:2], s.lattice.matrix[:2])
    # MoS2 on WS2 (0.2 % apart) has more than max_results matches: the first 200, and truncated says so
    assert r["n_matches"] == min(len(want), SEARCH["max_results"])
    assert r["truncated"] == (len(want) > SEARCH["max_results"])
    by_id = {m["match_id"]: m for m in r["matches"]}
    for i, m in enumerate(want[: SEARCH["max_results"]]):
        got = by_id[i]
        assert abs(got["match_area"] - m.match_area) < TOL
        assert abs(got["strain"] - oracle_strain(m)) < TOL
        np.testing.assert_allclose(got["film_sl_vectors"], m.film_sl_vectors, atol=TOL)
        np.testing.assert_allclose(np.array(got["film_transformation"]) @ f.lattice.matrix[:2], m.film_sl_vectors,
                                   atol=1e-6)
        np.testing.assert_allclose(got["strain_components"],
                                   Deformation(m.match_transformation).green_lagrange_strain, atol=TOL)
    keys = [(m["match_area"], m["strain"]) for m in r["matches"]]
    assert keys == sorted(keys)


def test_bulk_search_and_build_equal_coherent_interface_builder(inputs):
    p = dict(SEARCH, mode="bulk", substrate_miller=[1, 1, 1], film_miller=[0, 0, 1])
    cu, graphite = inputs["cu"], inputs["graphite"]
    r = call("hetero_search", substrate=cu.as_dict(), film=graphite.as_dict(), params=p)
    cib = CoherentInterfaceBuilder(cu, graphite, film_miller=(0, 0, 1), substrate_miller=(1, 1, 1),
                                   zslgen=ZSLGenerator(0.09, 100, 0.03, 0.01))
    assert r["n_matches"] == len(cib.zsl_matches)
    assert [(t["film_termination"], t["substrate_termination"]) for t in r["terminations"]] == \
        [tuple(t) for t in cib.terminations]
    by_id = {m["match_id"]: m for m in r["matches"]}
    for i, m in enumerate(cib.zsl_matches):
        assert abs(by_id[i]["match_area"] - m.match_area) < TOL
        assert abs(by_id[i]["strain"] - oracle_strain(m)) < TOL
    # Build the last match in generation order (not the first of the sorted list)
    k = len(cib.zsl_matches) - 1
    b = call("hetero_build", substrate=cu.as_dict(), film=graphite.as_dict(), match=by_id[k], termination_index=0,
             params=BUILD, search_params=p)
    want = list(cib.get_interfaces(cib.terminations[0], gap=2.0, vacuum_over_film=20.0, film_thickness=3,
                                   substrate_thickness=3))[k]
    got = Structure.from_dict(b["structure"])
    assert len(got) == len(want) == b["n_atoms"]
    assert StructureMatcher(primitive_cell=False, attempt_supercell=False).fit(got, want)
    labels = want.site_properties["interface_label"]
    assert b["n_atoms_substrate"] == labels.count("substrate") and b["n_atoms_film"] == labels.count("film")
    assert abs(b["strain"] - want.interface_properties["von_mises_strain"] * 100) < TOL


@pytest.mark.parametrize("film,substrate", [("graphene", "cu111"), ("mos2", "ws2")])
def test_slab_build_geometry(inputs, film, substrate):
    f, s = inputs[film], inputs[substrate]
    r = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)
    m = r["matches"][0]
    b = call("hetero_build", substrate=s.as_dict(), film=f.as_dict(), match=m, termination_index=0,
             params=BUILD, search_params=SEARCH)
    got = Structure.from_dict(b["structure"])
    det = lambda t: abs(round(np.linalg.det(t)))  # noqa: E731
    assert b["n_atoms_substrate"] == len(s) * det(m["substrate_transformation"])
    assert b["n_atoms_film"] == len(f) * det(m["film_transformation"])
    # The cell's a, b are the substrate superlattice (possibly swapped together to stay right-handed)
    ab = got.lattice.matrix[:2]
    sl = np.array(m["substrate_sl_vectors"])
    assert np.allclose(ab, sl, atol=1e-8) or np.allclose(ab, sl[::-1], atol=1e-8)
    assert abs(b["strain"] - m["strain"]) < TOL
    # The substrate part is pymatgen's supercell of the substrate slab
    labels = got.site_properties["interface_label"]
    sub_part = Structure.from_sites([x for x, lab in zip(got, labels) if lab == "substrate"])
    ref = s.copy()
    ref.make_supercell([[*m["substrate_transformation"][0], 0], [*m["substrate_transformation"][1], 0], [0, 0, 1]])
    assert sorted(sub_part.composition.as_dict().items()) == sorted(ref.composition.as_dict().items())
    # Gap along the surface normal between the substrate's top and the film's bottom
    n = np.cross(ab[0], ab[1])
    n /= np.linalg.norm(n)
    h = got.cart_coords @ n
    is_film = np.array([lab == "film" for lab in labels])
    assert abs(h[is_film].min() - h[~is_film].max() - BUILD["gap"]) < 1e-8


# --- Defects of the earlier implementation, fixed --------------------------------------------------

def test_defect13_max_angle_tol_is_relative(inputs):
    """max_angle_tol is pymatgen's relative change of the angle, as documented (not radians)."""
    f, s = inputs["mos2"], inputs["ws2"]
    for tol in (0.001, 0.05):
        p = dict(SEARCH, max_angle_tol=tol, max_area=30)
        r = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=p)
        assert r["n_matches"] == len(oracle_matches(f.lattice.matrix[:2], s.lattice.matrix[:2], p))


def test_defect14_strain_does_not_depend_on_the_plane_orientation(inputs):
    """Strain uses the full 3-D in-plane vectors: the same pair rotated off the xy plane gives the same strain."""
    f, s = inputs["mos2"], inputs["ws2"]
    rot = np.array([[1, 0, 0], [0, np.cos(0.7), -np.sin(0.7)], [0, np.sin(0.7), np.cos(0.7)]])
    fr = Structure(Lattice(f.lattice.matrix @ rot.T), f.species, f.frac_coords)
    sr = Structure(Lattice(s.lattice.matrix @ rot.T), s.species, s.frac_coords)
    a = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)["matches"]
    b = call("hetero_search", substrate=sr.as_dict(), film=fr.as_dict(), params=SEARCH)["matches"]
    assert [round(m["strain"], 9) for m in a] == [round(m["strain"], 9) for m in b]


def test_defect15_16_build_and_batch_build_give_the_same_cell_for_the_match_sent(inputs):
    f, s = inputs["mos2"], inputs["ws2"]
    r = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)
    m = r["matches"][3]
    b = call("hetero_build", substrate=s.as_dict(), film=f.as_dict(), match=m, termination_index=0, params=BUILD,
             search_params=SEARCH)
    bb = call("hetero_batch_build", substrate=s.as_dict(), film=f.as_dict(), match=m, n_shift=1, step_angstrom=0,
              target_z=0, gap=2.0, vacuum=20.0, fmt="cif")
    assert np.allclose(Structure.from_dict(b["structure"]).lattice.matrix,
                       Structure.from_dict(bb["candidates"][0]["structure"]).lattice.matrix)
    # Other search parameters do not change what is built: the match carries its transformations
    b2 = call("hetero_build", substrate=s.as_dict(), film=f.as_dict(), match=m, termination_index=0, params=BUILD,
              search_params=dict(SEARCH, max_area=20, max_length_tol=0.001))
    assert b2["structure"] == b["structure"]
    # A match from other inputs is refused, not silently replaced
    other = call("hetero_search", substrate=inputs["cu111"].as_dict(), film=inputs["graphene"].as_dict(),
                 params=SEARCH)["matches"][0]
    with pytest.raises(WorkerError) as e:
        call("hetero_build", substrate=s.as_dict(), film=f.as_dict(), match=other, termination_index=0, params=BUILD,
             search_params=SEARCH)
    assert e.value.code == "MATCH_MISMATCH"


def test_defect17_twist_is_refused(inputs):
    f, s = inputs["mos2"], inputs["ws2"]
    m = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)["matches"][0]
    with pytest.raises(WorkerError) as e:
        call("hetero_build", substrate=s.as_dict(), film=f.as_dict(), match=m, termination_index=0,
             params=dict(BUILD, twist_angle=10), search_params=SEARCH)
    assert e.value.code == "TWIST_NOT_COMMENSURATE"


def test_defect18_slab_matches_carry_no_miller_and_bulk_counts_come_from_labels(inputs):
    r = call("hetero_search", substrate=inputs["ws2"].as_dict(), film=inputs["mos2"].as_dict(), params=SEARCH)
    assert r["matches"][0]["film_miller"] is None and r["matches"][0]["substrate_miller"] is None


@pytest.mark.parametrize("fmt,first_line", [("cif", "# generated using pymatgen"), ("poscar", "Mo"), ("xyz", "6"),
                                            ("extxyz", "6")])
def test_defect19_batch_build_writes_every_format(inputs, fmt, first_line):
    f, s = inputs["mos2"], inputs["ws2"]
    m = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)["matches"][0]
    bb = call("hetero_batch_build", substrate=s.as_dict(), film=f.as_dict(), match=m, n_shift=2, step_angstrom=0,
              target_z=0, gap=2.0, vacuum=20.0, fmt=fmt)
    assert bb["n_candidates"] == 4
    assert bb["candidates"][0]["content"].startswith(first_line)


def test_defect19_target_z_below_the_stack_is_refused(inputs):
    f, s = inputs["mos2"], inputs["ws2"]
    m = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)["matches"][0]
    with pytest.raises(WorkerError) as e:
        call("hetero_batch_build", substrate=s.as_dict(), film=f.as_dict(), match=m, n_shift=1, step_angstrom=0,
             target_z=3.0, gap=2.0, vacuum=20.0, fmt="cif")
    assert e.value.code == "INVALID_VACUUM"


INTERMAT = dict(substrate_miller=[1, 1, 1], film_miller=[0, 0, 1], substrate_thickness=16.0, film_thickness=16.0,
                separation=2.5, vacuum=8.0, max_area=300, ltol=0.08, atol=1.0, max_area_ratio_tol=1.0,
                apply_strain=False, disp_intvl=0)


def test_defect20_intermat_missing_is_unavailable_not_500(inputs, monkeypatch):
    monkeypatch.setitem(sys.modules, "intermat.generate", None)  # as if not installed
    with pytest.raises(WorkerError) as e:
        call("hetero_intermat", substrate=inputs["cu"].as_dict(), film=inputs["graphite"].as_dict(), params=INTERMAT)
    assert e.value.code == "ANALYSIS_UNAVAILABLE"


def test_intermat_equals_interface_combi_run_directly(inputs):
    pytest.importorskip("intermat.generate")
    from intermat.generate import InterfaceCombi
    from jarvis.core.atoms import Atoms

    def ja(s):
        return Atoms(lattice_mat=s.lattice.matrix, coords=s.frac_coords, elements=[x.specie.symbol for x in s],
                     cartesian=False)

    p = INTERMAT
    info = InterfaceCombi(film_mats=[ja(inputs["graphite"])], subs_mats=[ja(inputs["cu"])], film_indices=[[0, 0, 1]],
                          subs_indices=[[1, 1, 1]], film_thicknesses=[16.0], subs_thicknesses=[16.0],
                          seperations=[2.5], vacuum_interface=8.0, max_area=300, max_area_ratio_tol=1.0, ltol=0.08,
                          atol=1.0, apply_strain=False, disp_intvl=0, lowest_mismatch=True,
                          from_conventional_structure_film=True, from_conventional_structure_subs=True,
                          dataset=[None]).generate()[0]
    want = Atoms.from_dict(info["generated_interface"])
    got = call("hetero_intermat", substrate=inputs["cu"].as_dict(), film=inputs["graphite"].as_dict(), params=p)
    assert got["n_atoms"] == want.num_atoms
    assert got["n_atoms_substrate"] == list(want.props).count("bottom")  # labels, not a 50/50 split
    assert abs(got["mismatch_u"] - 100 * info["mismatch_u"]) < TOL
    assert abs(got["area_substrate"] - info["area1"]) < TOL
    ref = Structure(Lattice(want.lattice_mat), want.elements, want.frac_coords)
    assert StructureMatcher(primitive_cell=False, attempt_supercell=False).fit(Structure.from_dict(got["structure"]), ref)


def test_defect21_lateral_build_uses_the_match_it_is_given(inputs):
    lp = dict(interface_axis=0, max_length=60, max_strain=5, max_results=50)
    a, b = inputs["mos2"], inputs["graphene"]
    matches = call("hetero_lateral_search", slab_A=a.as_dict(), slab_B=b.as_dict(), params=lp)["matches"]
    # the earlier implementation built position match_id of the sorted list: pick a match where they differ
    m = next(x for pos, x in enumerate(matches) if x["match_id"] != pos)
    out = call("hetero_lateral_build", slab_A=a.as_dict(), slab_B=b.as_dict(), match=m,
               params=dict(width_A=1, width_B=1, buffer=0.5, vacuum=20), search_params=lp)
    assert out["n_atoms_A"] == len(a) * m["n1"] and out["n_atoms_B"] == len(b) * m["n2"]
    assert abs(out["interface_length"] - (m["edge_length_A"] + m["edge_length_B"]) / 2) < TOL
    assert abs(out["strain_A"] + out["strain_B"]) < 0.1  # both sides share the strain
    with pytest.raises(WorkerError) as e:
        call("hetero_lateral_build", slab_A=a.as_dict(), slab_B=b.as_dict(), match=dict(m, edge_length_A=1.0),
             params=dict(width_A=1, width_B=1, buffer=0, vacuum=20), search_params=lp)
    assert e.value.code == "MATCH_MISMATCH"


def test_defect22_grid_scan_reduces_by_symmetry(inputs):
    f, s = inputs["mos2"], inputs["ws2"]
    m = call("hetero_search", substrate=s.as_dict(), film=f.as_dict(), params=SEARCH)["matches"][0]
    built = call("hetero_build", substrate=s.as_dict(), film=f.as_dict(), match=m, termination_index=0, params=BUILD,
                 search_params=SEARCH)
    g = call("hetero_grid_scan", heterostructure=built["structure"], params=dict(n_grid_x=6, n_grid_y=6, symprec=0.1))
    assert g["n_total_grid"] == 36 and g["n_irreducible"] < 36
    assert sum(e["multiplicity"] for e in g["entries"]) == 36
    # The oracle: every grid shift built and grouped by pymatgen's StructureMatcher (tight tolerances)
    iface = Structure.from_dict(built["structure"])
    film_idx = [i for i, lab in enumerate(iface.site_properties["interface_label"]) if lab == "film"]
    shifted = []
    for i in range(6):
        for j in range(6):
            x = iface.copy()
            x.translate_sites(film_idx, [i / 6, j / 6, 0], frac_coords=True, to_unit_cell=True)
            shifted.append(x)
    sm = StructureMatcher(ltol=1e-3, stol=1e-3, angle_tol=0.01, primitive_cell=False, scale=False,
                          attempt_supercell=False)
    assert len(sm.group_structures(shifted)) == g["n_irreducible"]
    for e in g["entries"]:
        assert e["shift_cart"][2] == pytest.approx(0, abs=1e-9)


def test_defect23_gap_is_along_the_normal_for_an_oblique_c(inputs):
    s = inputs["ws2"]
    oblique = Structure(Lattice([s.lattice.matrix[0], s.lattice.matrix[1], [3.0, 2.0, 20.0]]), s.species,
                        s.cart_coords, coords_are_cartesian=True)
    f = inputs["mos2"]
    m = call("hetero_search", substrate=oblique.as_dict(), film=f.as_dict(), params=SEARCH)["matches"][0]
    b = call("hetero_build", substrate=oblique.as_dict(), film=f.as_dict(), match=m, termination_index=0,
             params=dict(BUILD, gap=3.0), search_params=SEARCH)
    got = Structure.from_dict(b["structure"])
    labels = np.array(got.site_properties["interface_label"])
    z = got.cart_coords[:, 2]
    assert abs(z[labels == "film"].min() - z[labels == "substrate"].max() - 3.0) < 1e-8


def test_caps_before_work(inputs):
    with pytest.raises(WorkerError) as e:
        call("hetero_search", substrate=inputs["ws2"].as_dict(), film=inputs["graphene"].as_dict(),
             params=dict(SEARCH, max_area=5000))
    assert e.value.code == "AREA_TOO_LARGE"
    with pytest.raises(WorkerError) as e:
        call("hetero_build_manual", substrate=inputs["cu111"].as_dict(), film=inputs["graphene"].as_dict(),
             substrate_transform=[[100, 0], [0, 100]], film_transform=[[1, 0], [0, 1]], gap=2, vacuum=20,
             twist_angle=0)
    assert e.value.code == "TOO_MANY_ATOMS"
    with pytest.raises(WorkerError) as e:
        call("hetero_build_manual", substrate=inputs["cu111"].as_dict(), film=inputs["graphene"].as_dict(),
             substrate_transform=[[1, 2], [2, 4]], film_transform=[[1, 0], [0, 1]], gap=2, vacuum=20, twist_angle=0)
    assert e.value.code == "INVALID_TRANSFORM"


def test_pymatgen_refusals_are_coded_400s_not_500s():
    from atomstudio_worker.analysis.methods import _hetero as h

    def refuses(params, context, cancel):
        raise ValueError("The lattice angles alpha or beta of the film slab are not approximately 90 degrees.")

    with pytest.raises(WorkerError) as e:
        h.guarded(refuses)({}, None, None)
    assert e.value.code == "INTERFACE_FAILED" and "90 degrees" in e.value.message

    def bug(params, context, cancel):
        raise KeyError("a bug stays a bug")

    with pytest.raises(KeyError):
        h.guarded(bug)({}, None, None)
