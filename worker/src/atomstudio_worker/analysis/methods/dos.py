"""`dos`: total and projected densities of states from vasprun.xml by pymatgen's `CompleteDos`
(smearing, element/site/orbital sums, gap, and the band-centre family with an energy range)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import WorkerError
from ._common import check_cancel, orbital_columns, parse, pymatgen, site_indices, spin_arrays

METHOD = "dos"
MOMENTS = ("center", "width", "skewness", "kurtosis", "filling", "upper_edge")


def _vasprun(ctx, sha: str, path: str):
    from pymatgen.io.vasp.outputs import Vasprun

    def make():
        v = parse("vasprun", lambda: Vasprun(path, parse_dos=True, parse_eigen=True, parse_projected_eigen=False,
                                             parse_potcar_file=False))
        if v.complete_dos is None or len(v.tdos.energies) == 0:
            raise WorkerError("INVALID_FILE", "vasprun has no density of states", {"file": "vasprun"})
        return v

    return ctx.cached(("vasprun-dos", sha), make)


def _efermi(vrun, choice) -> float:
    if choice in (None, "vasprun"):
        return float(vrun.efermi)
    if choice == "smart":
        return float(vrun.calculate_efermi())
    return float(choice)


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    pymatgen()
    from pymatgen.electronic_structure.core import Orbital, OrbitalType, Spin
    from pymatgen.electronic_structure.dos import CompleteDos

    files = ctx.files(params, ("vasprun",))
    if "vasprun" not in files:
        raise WorkerError("MALFORMED_REQUEST", "vasprun is required", {"fields": ["vasprun"]})
    vrun = _vasprun(ctx, *files["vasprun"])
    check_cancel(cancel)
    cdos: CompleteDos = vrun.complete_dos
    structure = cdos.structure
    efermi = _efermi(vrun, params.get("efermi", "vasprun"))
    sigma = float(params.get("sigma_ev") or 0)
    per_atom = params.get("normalize") == "per_atom"
    scale = 1.0 / len(structure) if per_atom else 1.0
    energies = cdos.energies - efermi
    emin = float(params.get("emin", -10))
    emax = float(params.get("emax", 10))
    window = np.nonzero((energies >= emin) & (energies <= emax))[0]

    def densities(dos_like) -> dict[str, Any]:
        d = dos_like.get_smeared_densities(sigma) if sigma > 0 else dos_like.densities
        return spin_arrays(d, lambda a: (np.asarray(a)[window] * scale).tolist())

    out: dict[str, Any] = {
        "efermi_ev": efermi,
        "is_spin_polarized": Spin.down in cdos.densities,
        "n_atoms": len(structure),
        "nelect": vrun.parameters.get("NELECT"),
        "energies": energies[window].tolist(),
        "total": densities(cdos),
        "series": [],
        "structure": structure.as_dict(),
        "warnings": [],
    }
    cbm, vbm = cdos.get_cbm_vbm()
    out["gap"] = {"energy_ev": float(cdos.get_gap()), "vbm_ev": float(vbm) - efermi, "cbm_ev": float(cbm) - efermi}

    if params.get("mode") == "projected":
        if not cdos.pdos:
            raise WorkerError("NO_PROJECTIONS", "the file has no projected DOS (run VASP with LORBIT = 11)")
        check_cancel(cancel)
        groups = params.get("groups")
        if not groups:
            out["series"] = [{"label": el.symbol, "elements": [el.symbol], **densities(d)}
                             for el, d in cdos.get_element_dos().items()]
        else:
            out["series"] = [_group(cdos, structure, g, n, densities) for n, g in enumerate(groups)]

    band_center = params.get("band_center")
    if band_center:
        if not cdos.pdos:
            raise WorkerError("NO_PROJECTIONS", "the band centre needs a projected DOS (run VASP with LORBIT = 11)")
        band = OrbitalType[band_center.get("band", "d")]
        elements = band_center.get("elements")
        sites = band_center.get("sites")
        site_objs = [structure[i] for i in site_indices(structure, sites, None, "band_center")] if sites else None
        if elements:
            site_indices(structure, None, elements, "band_center")
        erange = band_center.get("erange")
        erange = tuple(erange) if erange else None
        spin = {"up": Spin.up, "down": Spin.down}.get(band_center.get("spin") or "")
        kw = {"band": band, "elements": elements, "sites": site_objs, "spin": spin}
        with np.errstate(all="ignore"):
            values = {
                "center": cdos.get_band_center(erange=erange, **kw),
                "width": cdos.get_band_width(erange=erange, **kw),
                "skewness": cdos.get_band_skewness(erange=erange, **kw),
                "kurtosis": cdos.get_band_kurtosis(erange=erange, **kw),
                "filling": cdos.get_band_filling(**kw),
                "upper_edge": cdos.get_upper_band_edge(erange=erange, **kw),
            }
        out["band_center"] = {"band": band.name, "erange": list(erange) if erange else None,
                              **{f"{k}_ev" if k not in ("skewness", "kurtosis", "filling") else k: _finite(v)
                                 for k, v in values.items()}}
        if not all(np.isfinite(v) for v in values.values()):
            out["warnings"].append(f"the {band.name} projection is empty in this range: some moments are undefined (null)")
    del Orbital
    return out


def _finite(v) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def _group(cdos, structure, g: dict[str, Any], n: int, densities) -> dict[str, Any]:
    from pymatgen.electronic_structure.core import Spin
    from pymatgen.electronic_structure.dos import Dos

    what = f"groups[{n}]"
    sites = site_indices(structure, g.get("sites"), g.get("elements"), what)
    first = cdos.pdos[structure[0]]
    available = [o.name for o in first]
    cols = orbital_columns(g.get("orbitals") or [], available, what)
    orbitals = [list(first)[c] for c in cols]
    total: dict[Spin, np.ndarray] = {}
    for i in sites:
        site_pdos = cdos.pdos[structure[i]]
        for orb in orbitals:
            for spin, arr in site_pdos[orb].items():
                total[spin] = total[spin] + arr if spin in total else np.array(arr, dtype=float)
    if not total:
        total = {s: np.zeros_like(a) for s, a in cdos.densities.items()}
    label = g.get("label") or f"group {n}"
    return {"label": label, "sites": sites, "orbitals": [o.name for o in orbitals],
            **densities(Dos(cdos.efermi, cdos.energies, total))}
