"""`cohp`: crystal orbital Hamilton populations (or COOP / COBI) from LOBSTER's COHPCAR, with
ICOHP from ICOHPLIST, by pymatgen's `Cohpcar` / `Icohplist` and, for the summary, lobsterpy."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from ...errors import WorkerError
from ..store import unavailable
from ._common import check_cancel, parse, pymatgen, spin_arrays

METHOD = "cohp"
# "No.3:Na1[3s]->Cl2[3p_x](2.845)" or "No.3:Na1->Cl2(2.845)" in COHPCAR's header
BOND_LINE = re.compile(r"^No\.(\d+):([A-Za-z]+)(\d+)(?:\[[^\]]*\])?->([A-Za-z]+)(\d+)(?:\[[^\]]*\])?\(")
SIGN = {
    "cohp": "series are -COHP (bonding positive, antibonding negative); icohp_ev is as LOBSTER writes it (negative: bonding)",
    "coop": "series are COOP (bonding positive); icohp_ev is the ICOOP as LOBSTER writes it (positive: bonding)",
    "cobi": "series are COBI (bonding positive); icohp_ev is the ICOBI as LOBSTER writes it (positive: bonding)",
}


def _kind(params: dict[str, Any]) -> str:
    kind = params.get("kind") or "auto"
    if kind != "auto":
        return kind
    name = ((params.get("files") or {}).get("cohpcar") or {}).get("filename") or ""
    upper = name.upper()
    return "coop" if "COOP" in upper else "cobi" if "COBI" in upper else "cohp"


def _atoms(path: str) -> dict[str, tuple[str, str]]:
    """Atom names of each bond label, from the file's header (pymatgen keeps only site indices)."""
    out: dict[str, tuple[str, str]] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f):
            if n > 2 and not line.startswith(("No.", "Average")):
                break
            m = BOND_LINE.match(line)
            if m and m.group(1) not in out:
                out[m.group(1)] = (m.group(2) + m.group(3), m.group(4) + m.group(5))
    return out


def run(params: dict[str, Any], ctx, cancel) -> dict[str, Any]:
    pymatgen()
    from pymatgen.io.lobster import Cohpcar, Icohplist

    files = ctx.files(params, ("cohpcar", "icohplist", "structure", "charge"))
    if "cohpcar" not in files:
        raise WorkerError("MALFORMED_REQUEST", "cohpcar is required", {"fields": ["cohpcar"]})
    kind = _kind(params)
    flags = {"are_coops": kind == "coop", "are_cobis": kind == "cobi"}
    sha, path = files["cohpcar"]
    cohpcar = ctx.cached(("cohpcar", sha, kind), lambda: parse("cohpcar", lambda: Cohpcar(filename=path, **flags)))
    atoms = ctx.cached(("cohpcar-atoms", sha), lambda: _atoms(path))
    check_cancel(cancel)
    icohplist = None
    if "icohplist" in files:
        isha, ipath = files["icohplist"]
        icohplist = ctx.cached(("icohplist", isha, kind), lambda: parse("icohplist", lambda: Icohplist(filename=ipath, **flags)))
    structure = None
    if "structure" in files:
        from pymatgen.io.vasp.inputs import Poscar

        ssha, spath = files["structure"]
        structure = ctx.cached(("poscar", ssha), lambda: parse("structure", lambda: Poscar.from_file(spath).structure))

    labels = [k for k in cohpcar.cohp_data if k != "average"]
    _check_structure(structure, cohpcar, atoms, labels)
    if icohplist is not None:
        missing = [k for k in labels if k not in icohplist.icohplist]
        if missing or len(icohplist.icohplist) != len(labels):
            raise WorkerError("STRUCTURE_MISMATCH", "the ICOHPLIST does not belong to this COHPCAR (its bond labels differ)",
                              {"cohpcar_bonds": len(labels), "icohplist_bonds": len(icohplist.icohplist)})

    chosen = params.get("bonds") or labels
    unknown = [b for b in chosen if b not in cohpcar.cohp_data or b == "average"]
    if unknown:
        raise WorkerError("UNKNOWN_BOND_LABEL", f"bond label {unknown[0]!r} is not in the COHPCAR (labels 1..{len(labels)})",
                          {"labels": unknown, "available": labels[:200]})

    efermi = float(cohpcar.efermi)
    energies = np.asarray(cohpcar.energies) - efermi
    emin = float(params.get("emin", -10))
    emax = float(params.get("emax", 10))
    window = np.nonzero((energies >= emin) & (energies <= emax))[0]
    sign = -1.0 if kind == "cohp" else 1.0

    def series(d: dict) -> dict[str, Any]:
        return spin_arrays(d, lambda a: (sign * np.asarray(a)[window]).tolist())

    bonds = []
    for label in labels:
        data = cohpcar.cohp_data[label]
        i, j = (int(s) for s in data["sites"])
        names = atoms.get(label)
        bond: dict[str, Any] = {
            "label": label,
            "sites": [i, j],
            "atoms": list(names) if names else None,
            "elements": [re.sub(r"\d+$", "", n) for n in names] if names else
            ([structure[i].specie.symbol, structure[j].specie.symbol] if structure is not None else None),
            "distance_ang": float(data["length"]),
        }
        if icohplist is not None:
            entry = icohplist.icohplist[label]
            bond["icohp_ev"] = float(sum(entry["icohp"].values()))
            bond["icohp_by_spin"] = {("up" if int(s) == 1 else "down"): float(v) for s, v in entry["icohp"].items()}
            bond["translation"] = [int(t) for t in entry.get("translation") or []] or None
            bond["icohp_source"] = "ICOHPLIST"
        elif data.get("ICOHP"):
            # the integrated column of COHPCAR, read at the Fermi level
            bond["icohp_ev"] = float(sum(np.interp(0.0, np.asarray(cohpcar.energies) - efermi, np.asarray(v))
                                         for v in data["ICOHP"].values()))
            bond["icohp_source"] = "COHPCAR (interpolated at E_F)"
        bonds.append(bond)

    out: dict[str, Any] = {
        "kind": kind,
        "sign_convention": SIGN[kind],
        "efermi_ev": efermi,
        "is_spin_polarized": bool(cohpcar.is_spin_polarized),
        "energies": energies[window].tolist(),
        "bonds": bonds,
        "series": [],
        "average": series(cohpcar.cohp_data["average"]["COHP"]),
        "warnings": [],
    }
    for label in chosen:
        entry: dict[str, Any] = {"label": label, **series(cohpcar.cohp_data[label]["COHP"])}
        if params.get("orbital_resolved"):
            orb = (cohpcar.orb_res_cohp or {}).get(label)
            if not orb:
                out["warnings"].append(f"bond {label}: the file has no orbital-resolved data")
            else:
                entry["orbitals"] = [{"label": name, **series(o["COHP"])} for name, o in orb.items()]
        out["series"].append(entry)
    if params.get("sum_bonds"):
        summed: dict = {}
        for label in chosen:
            for spin, arr in cohpcar.cohp_data[label]["COHP"].items():
                summed[spin] = summed[spin] + np.asarray(arr) if spin in summed else np.array(arr, dtype=float)
        out["summed"] = {"labels": list(chosen), **series(summed)}
        if icohplist is not None:
            out["summed"]["icohp_ev"] = float(sum(b["icohp_ev"] for b in bonds if b["label"] in chosen))
    if structure is not None:
        out["structure"] = structure.as_dict()
    if params.get("summary"):
        check_cancel(cancel)
        out["summary"] = _summary(ctx, files, structure, icohplist, kind, flags)
    return out


def _check_structure(structure, cohpcar, atoms, labels) -> None:
    if structure is None:
        return
    n = len(structure)
    for label in labels:
        i, j = cohpcar.cohp_data[label]["sites"]
        names = atoms.get(label)
        bad = max(i, j) >= n
        if not bad and names:
            bad = any(re.sub(r"\d+$", "", name) != structure[s].specie.symbol for name, s in zip(names, (i, j)))
        if bad:
            raise WorkerError("STRUCTURE_MISMATCH", f"the structure does not match the COHPCAR (bond {label})",
                              {"label": label, "n_sites": n})


def _summary(ctx, files, structure, icohplist, kind, flags) -> dict[str, Any]:
    if structure is None or icohplist is None:
        raise WorkerError("MISSING_FILE", "summary needs the structure (CONTCAR) and the ICOHPLIST as well as the COHPCAR",
                          {"needs": ["structure", "icohplist"]})
    try:
        from lobsterpy.coxx.describe import Description
        from lobsterpy.coxx.analyze import Analysis
    except ImportError as exc:
        raise unavailable("lobsterpy", exc) from None
    from pymatgen.electronic_structure.cohp import CompleteCohp

    key = ("lobsterpy", files["cohpcar"][0], files["icohplist"][0], files["structure"][0],
           files.get("charge", (None,))[0], kind)

    def make():
        # pymatgen tells structure formats by file name: give it the stored file as a POSCAR
        folder = os.path.join(ctx.store.root, f"{files['structure'][0]}.d")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        poscar = os.path.join(folder, "POSCAR")
        if not os.path.exists(poscar):
            os.symlink(files["structure"][1], poscar)
        complete = parse("cohpcar", lambda: CompleteCohp.from_file("lobster", filename=files["cohpcar"][1],
                                                                   structure_file=poscar, **flags))
        charges = {}
        if "charge" in files:
            from pymatgen.io.lobster import Charge

            charges = {"charge_obj": parse("charge", lambda: Charge(filename=files["charge"][1]))}
        analysis = parse("summary", lambda: Analysis(
            structure=structure, icoxxlist_obj=icohplist, completecoxx_obj=complete, which_bonds="all",
            # without CHARGE.lobster lobsterpy takes bond-valence charges
            type_charge="Mulliken" if charges else "Valences", **charges, **flags))
        return analysis, Description(analysis)

    analysis, description = ctx.cached(key, make)
    cba = analysis.condensed_bonding_analysis
    return {"text": description.text, "condensed_bonding_analysis": _plain(cba)}


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)
