"""The analysis worker's methods against pymatgen run directly on the same files (the oracle):
every VASP and LOBSTER file of the shared test data, plain, gzipped and bzip2-compressed
(the band file is spin-polarised, the DOS file is not). Values must agree within 1e-8."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymatgen.io.vasp")
from pymatgen.electronic_structure.core import Spin  # noqa: E402
from pymatgen.io.lobster import Cohpcar, Icohplist  # noqa: E402
from pymatgen.io.vasp.outputs import BSVasprun, Vasprun  # noqa: E402

from atomstudio_worker.analysis.methods import METHODS  # noqa: E402
from atomstudio_worker.analysis.store import Context  # noqa: E402
from atomstudio_worker.errors import WorkerError  # noqa: E402

TESTDATA = Path(os.environ.get("ATOMSTUDIO_TESTDATA", Path(__file__).resolve().parents[2] / ".." / "shared" / "testdata"))
TOL = 1e-8
BANDS = "vasp/vasprun_Si_bands.xml.gz"
KPOINTS = "vasp/KPOINTS_Si_bands"
UNIFORM = "vasp/vasprun.uniform.xml.gz"
COHPCAR = "lobster/NaCl/COHPCAR.lobster.gz"
ICOHPLIST = "lobster/NaCl/ICOHPLIST.lobster.gz"
CONTCAR = "lobster/NaCl/CONTCAR.gz"
COMPRESSIONS = ("plain", "gzip", "bzip2")


def _plain(rel: str) -> bytes:
    raw = (TESTDATA / rel).read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """Every file in each compression, written where pymatgen (the oracle) reads it by name."""
    root = tmp_path_factory.mktemp("variants")
    out = {}
    for rel in (BANDS, KPOINTS, UNIFORM, COHPCAR, ICOHPLIST, CONTCAR):
        data = _plain(rel)
        stem = Path(rel).name.removesuffix(".gz")
        for comp in COMPRESSIONS:
            path = root / comp / (stem + {"plain": "", "gzip": ".gz", "bzip2": ".bz2"}[comp])
            path.parent.mkdir(exist_ok=True)
            path.write_bytes({"plain": data, "gzip": gzip.compress(data), "bzip2": bz2.compress(data)}[comp])
            out[(rel, comp)] = path
    return out


# The service's upload store as the worker sees it: one private folder, files under their sha256.
FILES = tempfile.mkdtemp(prefix="atomstudio-files-")


def _data(raw: bytes) -> dict:
    """A file as the service hands it over: written into its folder, named by path and sha256."""
    sha = hashlib.sha256(raw).hexdigest()
    path = os.path.join(FILES, sha)
    with open(path, "wb") as out:
        out.write(raw)
    return {"sha256": sha, "path": path}


def spec(path: Path, filename: str | None = None) -> dict:
    return {**_data(path.read_bytes()), "filename": filename or path.name}


def call(method: str, params: dict, ctx: Context | None = None) -> dict:
    return METHODS[method](params, ctx or Context(files_root=FILES), None)


def close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=0, atol=TOL)


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_bands_equal_pymatgen(variants, comp):
    vpath, kpath = variants[(BANDS, comp)], variants[(KPOINTS, "plain")]
    got = call("bands", {"files": {"vasprun": spec(vpath), "kpoints": spec(kpath)}, "emin": -1e9, "emax": 1e9,
                         "projections": [{"label": "Si p", "elements": ["Si"], "orbitals": ["p"]}]})
    vr = BSVasprun(str(vpath), parse_projected_eigen=True, parse_potcar_file=False)
    bs = vr.get_band_structure(str(kpath), efermi="smart", line_mode=True)
    assert got["efermi_ev"] == pytest.approx(bs.efermi, abs=TOL)
    assert got["is_spin_polarized"] is True and got["nkpts"] == 160 and got["nbands"] == 13
    for spin, key in ((Spin.up, "up"), (Spin.down, "down")):
        close(np.asarray(got["bands"][key]) + got["efermi_ev"], bs.bands[spin])
        proj = bs.projections[spin][:, :, 1:4, :].sum(axis=(2, 3))
        close(got["projections"][0][key], proj)
    gap = bs.get_band_gap()
    assert got["band_gap"]["energy_ev"] == pytest.approx(gap["energy"], abs=TOL)
    assert got["band_gap"]["direct"] == gap["direct"] and got["band_gap"]["transition"] == gap["transition"]
    vbm, cbm = bs.get_vbm(), bs.get_cbm()
    assert got["band_gap"]["vbm"]["energy_ev"] + bs.efermi == pytest.approx(vbm["energy"], abs=TOL)
    assert got["band_gap"]["cbm"]["energy_ev"] + bs.efermi == pytest.approx(cbm["energy"], abs=TOL)
    assert got["band_gap"]["vbm"]["kpoint_index"] == list(vbm["kpoint_index"])
    assert got["band_gap"]["cbm"]["kpoint_index"] == list(cbm["kpoint_index"])
    close(got["kpath"]["distances"], bs.distance)
    labels = [t["label"] for t in got["kpath"]["ticks"]]
    assert labels == ["\\Gamma", "X", "W", "K", "\\Gamma", "L", "U", "W", "L", "K|U", "X"]
    assert gap["energy"] == pytest.approx(0.6143, abs=1e-4)


# Fat bands: a projection group equals pymatgen's own helpers. [group, pymatgen's value of one (spin, band, k)]
FAT_BANDS = [
    ({"elements": ["Si"]}, lambda el, elorb, s, b, k: el[s][b][k]["Si"]),
    ({"elements": ["Si"], "orbitals": ["s"]}, lambda el, elorb, s, b, k: elorb[s][b][k]["Si"]["s"]),
    ({"elements": ["Si"], "orbitals": ["p"]}, lambda el, elorb, s, b, k: elorb[s][b][k]["Si"]["p"]),
    ({"elements": ["Si"], "orbitals": ["d"]}, lambda el, elorb, s, b, k: elorb[s][b][k]["Si"]["d"]),
    ({"elements": ["Si"], "orbitals": ["s", "p"]},
     lambda el, elorb, s, b, k: elorb[s][b][k]["Si"]["s"] + elorb[s][b][k]["Si"]["p"]),
]


@pytest.mark.parametrize("comp", ["plain", "gzip"])
def test_fat_bands_equal_pymatgen_projections_on_elements_and_orbitals(variants, comp):
    vpath, kpath = variants[(BANDS, comp)], variants[(KPOINTS, "plain")]
    groups = [{"label": f"group {i}", **g} for i, (g, _) in enumerate(FAT_BANDS)]
    got = call("bands", {"files": {"vasprun": spec(vpath), "kpoints": spec(kpath)}, "emin": -1e9, "emax": 1e9,
                         "projections": groups})
    vr = BSVasprun(str(vpath), parse_projected_eigen=True, parse_potcar_file=False)
    bs = vr.get_band_structure(str(kpath), efermi="smart", line_mode=True)
    by_el = bs.get_projection_on_elements()
    by_el_orb = bs.get_projections_on_elements_and_orbitals({"Si": ["s", "p", "d"]})
    assert got["band_indices"] == list(range(bs.nb_bands))
    for n, (_, value) in enumerate(FAT_BANDS):
        assert got["projections"][n]["label"] == f"group {n}"
        for spin, key in ((Spin.up, "up"), (Spin.down, "down")):
            expected = [[value(by_el, by_el_orb, spin, b, k) for k in range(len(bs.kpoints))] for b in range(bs.nb_bands)]
            close(got["projections"][n][key], expected)


@pytest.mark.parametrize(("efermi", "expected"), [("smart", "smart"), ("vasprun", None), (5.9, 5.9)])
def test_bands_efermi_choice(variants, efermi, expected):
    vpath, kpath = variants[(BANDS, "gzip")], variants[(KPOINTS, "plain")]
    got = call("bands", {"files": {"vasprun": spec(vpath), "kpoints": spec(kpath)}, "efermi": efermi})
    bs = BSVasprun(str(vpath), parse_potcar_file=False).get_band_structure(str(kpath), efermi=expected, line_mode=True)
    assert got["efermi_ev"] == pytest.approx(bs.efermi, abs=TOL)
    assert got["band_gap"]["energy_ev"] == pytest.approx(bs.get_band_gap()["energy"], abs=TOL)


def test_bands_without_kpoints_warns_and_keeps_eigenvalues(variants):
    vpath = variants[(BANDS, "plain")]
    got = call("bands", {"files": {"vasprun": spec(vpath)}, "emin": -1e9, "emax": 1e9})
    bs = BSVasprun(str(vpath), parse_potcar_file=False).get_band_structure(efermi="smart")
    close(np.asarray(got["bands"]["up"]) + got["efermi_ev"], bs.bands[Spin.up])
    assert got["kpath"]["ticks"] == [] and any("KPOINTS" in w for w in got["warnings"])
    assert got["band_gap"]["energy_ev"] == pytest.approx(bs.get_band_gap()["energy"], abs=TOL)


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_dos_equal_pymatgen(variants, comp):
    vpath = variants[(UNIFORM, comp)]
    got = call("dos", {"files": {"vasprun": spec(vpath)}, "mode": "projected", "emin": -1e9, "emax": 1e9})
    cdos = Vasprun(str(vpath), parse_potcar_file=False).complete_dos
    close(np.asarray(got["energies"]) + got["efermi_ev"], cdos.energies)
    close(got["total"]["up"], cdos.densities[Spin.up])
    assert "down" not in got["total"] and got["is_spin_polarized"] is False
    element = cdos.get_element_dos()
    assert [s["label"] for s in got["series"]] == [el.symbol for el in element]
    close(got["series"][0]["up"], element[next(iter(element))].densities[Spin.up])
    cbm, vbm = cdos.get_cbm_vbm()
    assert got["gap"]["energy_ev"] == pytest.approx(cdos.get_gap(), abs=TOL)
    assert got["gap"]["vbm_ev"] + got["efermi_ev"] == pytest.approx(vbm, abs=TOL)
    assert got["gap"]["cbm_ev"] + got["efermi_ev"] == pytest.approx(cbm, abs=TOL)


def _resmeared_vasprun(path: Path, out: Path, sigma: float = 0.1) -> None:
    """The uniform run with its total DOS recomputed from its own eigenvalues and k-weights with a
    Gaussian of `sigma` (the file's SIGMA = 0.001 eV on a 0.1 eV grid undersamples its DOS, so its
    DOS column alone does not integrate to the electron count)."""
    import re

    vr = Vasprun(str(path), parse_potcar_file=False)
    eig = vr.eigenvalues[Spin.up][:, :, 0]  # (nkpts, nbands)
    w = np.asarray(vr.actual_kpoints_weights)
    text = path.read_text()
    total = text[text.index("<total>"):text.index("</total>")]
    rows = re.findall(r"<r>\s*(\S+)\s+\S+\s+\S+\s*</r>", total)
    energies = np.array([float(r) for r in rows])
    g = np.exp(-((energies[:, None, None] - eig[None]) ** 2) / (2 * sigma**2)) / (sigma * np.sqrt(2 * np.pi))
    dos = 2 * (g * w[None, :, None]).sum(axis=(1, 2))  # ISPIN = 1: two electrons per state
    body = "".join(f"<r> {e:.4f} {d:.8f} 0.0000 </r>\n" for e, d in zip(energies, dos))
    start = total.index('<set comment="spin 1">') + len('<set comment="spin 1">')
    end = total.index("</set>", start)
    out.write_text(text.replace(total, total[:start] + "\n" + body + total[end:]))


def test_dos_integrates_to_the_electron_count(variants, tmp_path):
    resmeared = tmp_path / "vasprun.xml"
    _resmeared_vasprun(variants[(UNIFORM, "plain")], resmeared)
    got = call("dos", {"files": {"vasprun": spec(resmeared)}, "emin": -1e9, "emax": 1e9})
    e = np.asarray(got["energies"])
    d = np.asarray(got["total"]["up"])
    below = e <= 0
    assert got["nelect"] == 8
    assert np.trapezoid(d[below], e[below]) == pytest.approx(got["nelect"], abs=0.02)


def test_dos_smearing_groups_normalisation_and_band_centre(variants):
    vpath = variants[(UNIFORM, "plain")]
    got = call("dos", {"files": {"vasprun": spec(vpath)}, "mode": "projected", "sigma_ev": 0.1, "normalize": "per_atom",
                       "emin": -1e9, "emax": 1e9,
                       "groups": [{"label": "Si0 p", "sites": [0], "orbitals": ["p"]}, {"label": "Si s", "elements": ["Si"],
                                                                                     "orbitals": ["s"]}],
                       "band_center": {"band": "p", "erange": [-8, 0]}})
    cdos = Vasprun(str(vpath), parse_potcar_file=False).complete_dos
    close(got["total"]["up"], cdos.get_smeared_densities(0.1)[Spin.up] / 2)
    site0 = cdos.get_site_spd_dos(cdos.structure[0])
    from pymatgen.electronic_structure.core import OrbitalType
    from pymatgen.electronic_structure.dos import Dos

    close(got["series"][0]["up"], Dos(cdos.efermi, cdos.energies, site0[OrbitalType.p].densities)
          .get_smeared_densities(0.1)[Spin.up] / 2)
    s_all = cdos.get_spd_dos()[OrbitalType.s]
    close(got["series"][1]["up"], s_all.get_smeared_densities(0.1)[Spin.up] / 2)
    bc = got["band_center"]
    assert bc["center_ev"] == pytest.approx(cdos.get_band_center(band=OrbitalType.p, erange=(-8, 0)), abs=TOL)
    assert bc["width_ev"] == pytest.approx(cdos.get_band_width(band=OrbitalType.p, erange=(-8, 0)), abs=TOL)
    assert bc["filling"] == pytest.approx(cdos.get_band_filling(band=OrbitalType.p), abs=TOL)


@pytest.mark.parametrize("comp", COMPRESSIONS)
def test_cohp_equal_pymatgen(variants, comp):
    cpath, ipath = variants[(COHPCAR, comp)], variants[(ICOHPLIST, comp)]
    got = call("cohp", {"files": {"cohpcar": spec(cpath), "icohplist": spec(ipath)}, "emin": -1e9, "emax": 1e9,
                        "bonds": ["1", "21"], "orbital_resolved": True, "sum_bonds": True})
    cohpcar, icohp = Cohpcar(filename=str(cpath)), Icohplist(filename=str(ipath))
    assert got["kind"] == "cohp" and got["efermi_ev"] == pytest.approx(cohpcar.efermi, abs=TOL)
    close(np.asarray(got["energies"]) + got["efermi_ev"], cohpcar.energies)
    assert len(got["bonds"]) == 50
    for bond in got["bonds"]:
        ref = icohp.icohplist[bond["label"]]
        assert bond["icohp_ev"] == pytest.approx(ref["icohp"][Spin.up], abs=TOL)
        assert bond["distance_ang"] == pytest.approx(cohpcar.cohp_data[bond["label"]]["length"], abs=TOL)
        assert bond["sites"] == list(cohpcar.cohp_data[bond["label"]]["sites"])
    for s in got["series"]:
        close(s["up"], -cohpcar.cohp_data[s["label"]]["COHP"][Spin.up])
        orb = cohpcar.orb_res_cohp[s["label"]]
        assert [o["label"] for o in s["orbitals"]] == list(orb)
        close(s["orbitals"][0]["up"], -orb[next(iter(orb))]["COHP"][Spin.up])
    close(got["summed"]["up"], -(cohpcar.cohp_data["1"]["COHP"][Spin.up] + cohpcar.cohp_data["21"]["COHP"][Spin.up]))
    close(got["average"]["up"], -cohpcar.cohp_data["average"]["COHP"][Spin.up])
    assert {tuple(b["elements"]) for b in got["bonds"]} == {("Cl", "Na"), ("Na", "Na"), ("Cl", "Cl")}


def test_cohp_without_icohplist_reads_the_integrated_column_at_ef(variants):
    got = call("cohp", {"files": {"cohpcar": spec(variants[(COHPCAR, "gzip")])}})
    icohp = Icohplist(filename=str(variants[(ICOHPLIST, "gzip")]))
    strongest = min(got["bonds"], key=lambda b: b["icohp_ev"])
    # interpolated on LOBSTER's energy grid: close to ICOHPLIST, not identical
    assert strongest["icohp_ev"] == pytest.approx(icohp.icohplist[strongest["label"]]["icohp"][Spin.up], abs=0.02)


def test_cohp_lobsterpy_summary(variants):
    pytest.importorskip("lobsterpy")
    got = call("cohp", {"files": {"cohpcar": spec(variants[(COHPCAR, "gzip")]), "icohplist": spec(variants[(ICOHPLIST, "gzip")]),
                                  "structure": spec(variants[(CONTCAR, "plain")])}, "summary": True})
    assert "Na" in " ".join(got["summary"]["text"]) and got["summary"]["condensed_bonding_analysis"]["formula"] == "NaCl"


def test_repeated_request_does_not_parse_again(variants):
    ctx = Context(files_root=FILES)
    params = {"files": {"vasprun": spec(variants[(UNIFORM, "gzip")])}}
    call("dos", params, ctx)
    misses = ctx.misses
    call("dos", {**params, "sigma_ev": 0.2}, ctx)
    assert ctx.misses == misses and ctx.hits >= 1


def test_a_dead_workers_decompressed_copies_are_removed_by_its_successor():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = os.path.join(FILES, f"worker-{dead.pid}-abc")
    os.makedirs(leftover)
    alive = Context(files_root=FILES).store.own
    assert not os.path.exists(leftover) and os.path.isdir(alive)


# [name, method, params builder, code]
ERRORS = [
    ("0-byte file", "dos", lambda v: {"files": {"vasprun": {**spec(v[(UNIFORM, "plain")]), **_data(b"")}}}, "INVALID_FILE"),
    ("truncated gzip", "dos", lambda v: {"files": {"vasprun": _data(v[(UNIFORM, "gzip")].read_bytes()[:5000])}}, "INVALID_FILE"),
    ("truncated bzip2", "dos", lambda v: {"files": {"vasprun": _data(v[(UNIFORM, "bzip2")].read_bytes()[:5000])}}, "INVALID_FILE"),
    ("truncated XML", "bands", lambda v: {"files": {"vasprun": _data(_plain(BANDS)[:200_000])}}, "INVALID_FILE"),
    ("non-VASP XML", "dos", lambda v: {"files": {"vasprun": _data(b"<?xml version='1.0'?><svg><g/></svg>")}}, "INVALID_FILE"),
    ("not XML at all", "bands", lambda v: {"files": {"vasprun": _data(b"hello world\n")}}, "INVALID_FILE"),
    ("projected DOS of a file without", "dos", lambda v: {"files": {"vasprun": _data(_without_pdos())}, "mode": "projected"},
     "NO_PROJECTIONS"),
    ("band centre of a file without", "dos", lambda v: {"files": {"vasprun": _data(_without_pdos())},
                                                          "band_center": {"band": "p"}}, "NO_PROJECTIONS"),
    ("projection of an absent element", "bands", lambda v: {"files": {"vasprun": spec(v[(BANDS, "gzip")])},
                                                              "projections": [{"elements": ["Fe"]}]}, "UNKNOWN_ELEMENT"),
    ("projection site out of range", "dos", lambda v: {"files": {"vasprun": spec(v[(UNIFORM, "gzip")])}, "mode": "projected",
                                                         "groups": [{"sites": [2]}]}, "INVALID_INDEX"),
    ("KPOINTS of another run", "bands", lambda v: {"files": {"vasprun": spec(v[(BANDS, "gzip")]),
                                                             "kpoints": _data(_other_kpoints())}}, "STRUCTURE_MISMATCH"),
    ("KPOINTS without a path", "bands", lambda v: {"files": {"vasprun": spec(v[(BANDS, "gzip")]),
                                                             "kpoints": _data(b"auto\n0\nGamma\n4 4 4\n")}}, "NO_KPATH_LABELS"),
    ("unknown bond label", "cohp", lambda v: {"files": {"cohpcar": spec(v[(COHPCAR, "gzip")])}, "bonds": ["999"]},
     "UNKNOWN_BOND_LABEL"),
    ("structure of another system", "cohp", lambda v: {"files": {"cohpcar": spec(v[(COHPCAR, "gzip")]),
                                                                  "structure": _data(_si_poscar())}}, "STRUCTURE_MISMATCH"),
    ("COHPCAR that is a vasprun", "cohp", lambda v: {"files": {"cohpcar": spec(v[(UNIFORM, "gzip")])}}, "INVALID_FILE"),
    ("summary without structure", "cohp", lambda v: {"files": {"cohpcar": spec(v[(COHPCAR, "gzip")])}, "summary": True},
     "MISSING_FILE"),
    ("decompression bomb", "dos", lambda v: {"files": {"vasprun": _data(gzip.compress(b"\0" * 5_000_000))},
                                             "max_file_bytes": 1_000_000}, "FILE_TOO_LARGE"),
    # the worker reads only files the service wrote into its folder, whatever path a request names
    ("no path", "dos", lambda v: {"files": {"vasprun": {"sha256": "0" * 64}}}, "MALFORMED_REQUEST"),
    ("path outside the store", "dos", lambda v: {"files": {"vasprun": {"sha256": "0" * 64, "path": str(v[(UNIFORM, "plain")])}}},
     "MALFORMED_REQUEST"),
    ("relative path", "dos", lambda v: {"files": {"vasprun": {"sha256": "0" * 64, "path": "vasprun.xml"}}},
     "MALFORMED_REQUEST"),
    ("path climbing out with ..", "dos", lambda v: {"files": {"vasprun": {
        "sha256": "0" * 64, "path": os.path.join(FILES, "..", os.path.basename(FILES), _data(b"x")["sha256"])}}},
     "MALFORMED_REQUEST"),
    ("link in the store to a file outside", "dos", lambda v: {"files": {"vasprun": {
        "sha256": "0" * 64, "path": _link_in_store(v[(UNIFORM, "plain")])}}}, "MALFORMED_REQUEST"),
    ("folder in the store", "dos", lambda v: {"files": {"vasprun": {"sha256": "0" * 64, "path": _folder_in_store()}}},
     "MALFORMED_REQUEST"),
    ("file in a subfolder of the store", "dos", lambda v: {"files": {"vasprun": {
        "sha256": "0" * 64, "path": _file_in_subfolder(_plain(UNIFORM))}}}, "MALFORMED_REQUEST"),
]


def _link_in_store(target: Path) -> str:
    link = os.path.join(FILES, "link-" + "a" * 8)
    if not os.path.islink(link):
        os.symlink(target, link)
    return link


def _folder_in_store() -> str:
    folder = os.path.join(FILES, "folder")
    os.makedirs(folder, exist_ok=True)
    return folder


def _file_in_subfolder(raw: bytes) -> str:
    path = os.path.join(_folder_in_store(), "vasprun.xml")
    with open(path, "wb") as out:
        out.write(raw)
    return path


def _without_pdos() -> bytes:
    """The uniform run as LORBIT-less VASP writes it: no <partial> block."""
    text = _plain(UNIFORM)
    return text[:text.index(b"<partial>")] + text[text.index(b"</partial>") + len(b"</partial>"):]


def _other_kpoints() -> bytes:
    return b"k-path of another run\n10\nLine-mode\nreciprocal\n0 0 0 ! G\n0.5 0 0 ! X\n\n0.5 0 0 ! X\n0.5 0.5 0 ! M\n"


def _si_poscar() -> bytes:
    return b"Si\n1.0\n0 2.7 2.7\n2.7 0 2.7\n2.7 2.7 0\nSi\n2\ndirect\n0 0 0\n0.25 0.25 0.25\n"


@pytest.mark.parametrize(("name", "method", "build", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(variants, name, method, build, code):
    with pytest.raises(WorkerError) as info:
        call(method, build(variants))
    assert info.value.code == code, info.value.message
