"""`bands`: a band structure from vasprun.xml (+ line-mode KPOINTS), by pymatgen's
`Vasprun.get_band_structure` and `BandStructure.get_band_gap` (the oracle of the tests)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from ._common import check_cancel, orbital_columns, parse, pymatgen, site_indices, spin_arrays, structure_dict

METHOD = "bands"
# k-points of a line-mode KPOINTS are matched to the run's k-points within this (fractional)
MATCH_TOL = 1e-4


def _vasprun(ctx, sha: str, path: str, projected: bool):
    from pymatgen.io.vasp.outputs import BSVasprun

    # A projected parse also serves unprojected requests; it is kept under its own key.
    if not projected and ("bsvasprun", sha, True) in ctx.parsed:
        return ctx.cached(("bsvasprun", sha, True), lambda: None)
    return ctx.cached(
        ("bsvasprun", sha, projected),
        lambda: parse("vasprun", lambda: BSVasprun(path, parse_projected_eigen=projected, parse_potcar_file=False)),
    )


def _kpoints(ctx, sha: str, path: str):
    from pymatgen.io.vasp.inputs import Kpoints

    return ctx.cached(("kpoints", sha), lambda: parse("kpoints", lambda: Kpoints.from_file(path)))


def _check_pairing(vrun, kpoints) -> None:
    """A line-mode KPOINTS must describe this run: same number of points, labels on its k-points."""
    from pymatgen.io.vasp.inputs import Kpoints

    if kpoints.style != Kpoints.supported_modes.Line_mode or not any(kpoints.labels or []):
        raise WorkerError("NO_KPATH_LABELS", "the KPOINTS file is not a line-mode path with labels; "
                          "give the line-mode KPOINTS of the band-structure run", {"style": str(kpoints.style)})
    actual = np.array(vrun.actual_kpoints)
    weights = np.array(vrun.actual_kpoints_weights)
    line = actual[np.isclose(weights, 0.0)] if (vrun.parameters.get("LHFCALC") or np.any(weights == 0)) else actual
    n_expected = int(kpoints.num_kpts) * (len(kpoints.kpts) // 2)
    mismatch = len(line) != n_expected
    if not mismatch:
        for label_k in kpoints.kpts:
            if not np.any(np.all(np.abs(line - np.asarray(label_k)) < MATCH_TOL, axis=1)):
                mismatch = True
                break
    if mismatch:
        raise WorkerError("STRUCTURE_MISMATCH", "the KPOINTS file does not belong to this run: "
                          f"it describes {n_expected} k-points along its path, the run has {len(line)} "
                          "(or the path's corners are not among the run's k-points)",
                          {"kpoints_points": n_expected, "run_points": len(line)})


def _efermi(vrun, choice) -> float:
    if choice in (None, "smart"):
        return float(vrun.calculate_efermi())
    if choice == "vasprun":
        return float(vrun.efermi)
    return float(choice)


def _ticks(bs) -> list[dict[str, Any]]:
    """Labelled ticks, as pymatgen's BSPlotter draws them: a jump between branches shows `A|B`."""
    ticks: list[dict[str, Any]] = []
    for i, k in enumerate(bs.kpoints):
        if k.label is None:
            continue
        d = float(bs.distance[i])
        if ticks and abs(ticks[-1]["distance"] - d) < 1e-9:
            if ticks[-1]["label"] != k.label and k.label not in ticks[-1]["label"].split("|"):
                ticks[-1]["label"] += f"|{k.label}"
            continue
        ticks.append({"distance": d, "label": k.label, "index": i})
    return ticks


def _path_distances(vrun) -> list[float]:
    # Without a KPOINTS path: cumulative Cartesian length along the run's k-points (1/Angstrom).
    rec = vrun.final_structure.lattice.reciprocal_lattice
    cart = rec.get_cartesian_coords(np.array(vrun.actual_kpoints))
    steps = np.linalg.norm(np.diff(cart, axis=0), axis=1)
    return [0.0, *np.cumsum(steps).tolist()]


def _edge(e: dict[str, Any], efermi: float) -> dict[str, Any] | None:
    if e.get("energy") is None:
        return None
    return {
        "energy_ev": float(e["energy"]) - efermi,
        "kpoint_index": [int(i) for i in e["kpoint_index"]],
        "band_index": {("up" if int(s) == 1 else "down"): [int(b) for b in v] for s, v in e["band_index"].items()},
        "kpoint": [float(x) for x in e["kpoint"].frac_coords],
        "label": e["kpoint"].label,
    }


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    pymatgen()
    files = ctx.files(params, ("vasprun", "kpoints"))
    if "vasprun" not in files:
        raise WorkerError("MALFORMED_REQUEST", "vasprun is required", {"fields": ["vasprun"]})
    projections = params.get("projections") or []
    warnings: list[str] = []
    sha, path = files["vasprun"]
    vrun = _vasprun(ctx, sha, path, bool(projections))
    check_cancel(cancel)
    if vrun.eigenvalues is None:
        raise WorkerError("INVALID_FILE", "vasprun has no eigenvalues", {"file": "vasprun"})
    efermi_choice = params.get("efermi", "smart")
    kpoints = None
    if "kpoints" in files:
        kpoints = _kpoints(ctx, *files["kpoints"])
        _check_pairing(vrun, kpoints)
    key = ("bandstructure", sha, bool(projections), files.get("kpoints", (None,))[0], str(efermi_choice))
    e_fermi = _efermi(vrun, efermi_choice)

    def make_bs():
        if kpoints is not None:
            return parse("vasprun", lambda: vrun.get_band_structure(files["kpoints"][1], efermi=e_fermi, line_mode=True))
        return parse("vasprun", lambda: vrun.get_band_structure(kpoints_filename=None, efermi=e_fermi))

    bs = ctx.cached(key, make_bs)
    check_cancel(cancel)
    if kpoints is None:
        warnings.append("no KPOINTS given: the path has no high-symmetry labels (send the line-mode KPOINTS)")
        distances = _path_distances(vrun)
        ticks: list[dict[str, Any]] = []
        branches: list[dict[str, Any]] = [{"start_index": 0, "end_index": len(distances) - 1, "name": ""}]
    else:
        distances = [float(d) for d in bs.distance]
        ticks = _ticks(bs)
        branches = [{"start_index": int(b["start_index"]), "end_index": int(b["end_index"]), "name": b["name"]}
                    for b in bs.branches]

    emin = float(params.get("emin", -10))
    emax = float(params.get("emax", 10))

    lo = np.min([bs.bands[s].min(axis=1) for s in bs.bands], axis=0) - e_fermi
    hi = np.max([bs.bands[s].max(axis=1) for s in bs.bands], axis=0) - e_fermi
    shown = np.nonzero((hi >= emin) & (lo <= emax))[0]
    bands = spin_arrays(bs.bands, lambda a: (a[shown] - e_fermi).tolist())

    out: dict[str, Any] = {
        "efermi_ev": e_fermi,
        "efermi_vasprun_ev": float(vrun.efermi),
        "nbands": int(bs.nb_bands),
        "nkpts": len(bs.kpoints),
        "band_indices": shown.tolist(),
        **ctx.cached(key + ("summary",), lambda: _summary(bs, vrun, e_fermi)),
        "kpath": {"distances": distances, "ticks": ticks, "branches": branches},
        "bands": bands,
        "warnings": warnings,
    }
    if projections:
        if not bs.projections:
            warnings.append("the file has no projected eigenvalues (LORBIT was not set): projections are left out")
        else:
            out["projections"] = _projections(bs, projections, shown, vrun.final_structure)
    return out


def _summary(bs, vrun, e_fermi: float) -> dict[str, Any]:
    """What does not depend on the request's window: computed once per band structure (pymatgen's
    band-edge search walks every band and k-point in Python)."""
    gap = bs.get_band_gap()
    is_metal = bool(bs.is_metal())
    vbm, cbm = bs.get_vbm(), bs.get_cbm()
    return {
        "is_spin_polarized": bool(bs.is_spin_polarized),
        "is_metal": is_metal,
        "band_gap": {
            "energy_ev": float(gap["energy"]),
            "direct": bool(gap["direct"]),
            "transition": gap["transition"],
            "vbm": None if is_metal else _edge(vbm, e_fermi),
            "cbm": None if is_metal else _edge(cbm, e_fermi),
        },
        "structure": structure_dict(vrun.final_structure),
    }


def _projections(bs, groups, shown, structure) -> list[dict[str, Any]]:
    from pymatgen.electronic_structure.core import Orbital

    first = next(iter(bs.projections.values()))  # (nbands, nkpts, norb, nions)
    names = [Orbital(i).name for i in range(first.shape[2])]
    out = []
    for n, g in enumerate(groups):
        label = g.get("label") or f"group {n}"
        sites = site_indices(structure, g.get("sites"), g.get("elements"), f"projections[{n}]")
        cols = orbital_columns(g.get("orbitals") or [], names, f"projections[{n}]")
        out.append({"label": label, "sites": sites, "orbitals": [names[c] for c in cols],
                    **spin_arrays(bs.projections, lambda a: a[shown][:, :, cols][:, :, :, sites].sum(axis=(2, 3)).tolist())})
    return out
