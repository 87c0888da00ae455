"""`hetero_batch_build`: registry candidates: one slab-mode match built with several in-plane
film shifts, each written as a file (cif, poscar, xyz or extxyz) with a manifest."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from ...errors import WorkerError
from . import _hetero as h
from .hetero_build import build_slab_mode

METHOD = "hetero_batch_build"
MAX_CANDIDATES = 100
EXTENSIONS = {"cif": "cif", "poscar": "vasp", "xyz": "xyz", "extxyz": "extxyz"}


def _write(structure, fmt: str) -> str:
    if fmt == "cif":
        from pymatgen.io.cif import CifWriter

        return str(CifWriter(structure))
    if fmt == "poscar":
        from pymatgen.io.vasp import Poscar

        return Poscar(structure).get_str()
    from pymatgen.io.ase import AseAtomsAdaptor

    atoms = AseAtomsAdaptor.get_atoms(structure)
    buf = io.StringIO()
    if fmt == "xyz":
        from ase.io import write

        write(buf, atoms, format="xyz")
    else:
        from ase.io import write

        atoms.info.clear()
        write(buf, atoms, format="extxyz")
    return buf.getvalue()


def _shifts(p: dict[str, Any], base, n_sub: int) -> list[tuple[str, float, float]]:
    m = base.lattice.matrix
    la, lb = np.linalg.norm(m[0]), np.linalg.norm(m[1])
    if p["step_angstrom"] > 0:
        step = p["step_angstrom"]
        na, nb = max(1, int(la // step)), max(1, int(lb // step))
        if na * nb > MAX_CANDIDATES:
            raise WorkerError("TOO_MANY_STRUCTURES", f"step {step} Å gives {na * nb} candidates (at most "
                              f"{MAX_CANDIDATES}); use a larger step", {"n_candidates": na * nb})
        return [(f"s{i * step:.2f}_{j * step:.2f}", i * step / la, j * step / lb) for i in range(na) for j in range(nb)]
    if p["n_shift"] > 0:
        n = p["n_shift"]
        return [(f"s{i / n:.2f}_{j / n:.2f}", i / n, j / n) for i in range(n) for j in range(n)]
    # Auto: the film's first atom placed over each distinct top-layer substrate atom
    normal = h.surface_normal(base.lattice)
    xyz = base.cart_coords
    heights = xyz @ normal
    top = [i for i in range(n_sub) if heights[i] > heights[:n_sub].max() - 0.5]
    first_film = xyz[n_sub]
    out = [("baseline", 0.0, 0.0)]
    for i in top:
        d = base.lattice.get_fractional_coords(xyz[i] - first_film)
        fa, fb = float(d[0] % 1.0), float(d[1] % 1.0)
        near = any(min(abs(fa - a) % 1.0, 1 - abs(fa - a) % 1.0) < 0.02
                   and min(abs(fb - b) % 1.0, 1 - abs(fb - b) % 1.0) < 0.02 for _, a, b in out)
        if not near:
            out.append((f"{base[i].specie.symbol}_{fa:.3f}_{fb:.3f}", fa, fb))
    return out[:MAX_CANDIDATES]


@h.guarded
def run(params: dict[str, Any], context, cancel) -> dict[str, Any]:
    h.pymatgen()
    p = params
    fmt = p["fmt"]
    if fmt not in EXTENSIONS:
        raise WorkerError("INVALID_FORMAT", f"fmt must be one of {', '.join(EXTENSIONS)}", {"fmt": fmt})
    substrate = h.structure(p["substrate"], "substrate")
    film = h.structure(p["film"], "film")
    base, n_sub, n_film, f_sl, s_sl = build_slab_mode(substrate, film, p["match"], p["gap"], p["vacuum"], cancel=cancel)
    shifts = _shifts(p, base, n_sub)
    h.check_atoms(len(base) * len(shifts), "the candidates together")
    vm, _ = h.match_strain(f_sl, s_sl)
    files, manifest = [], []
    for label, fa, fb in shifts:
        h.check_cancel(cancel)
        s, *_ = build_slab_mode(substrate, film, p["match"], p["gap"], p["vacuum"], (fa, fb), cancel)
        if p["target_z"] > 0:
            normal = h.surface_normal(s.lattice)
            heights = s.cart_coords @ normal
            if p["target_z"] < heights.max() - heights.min():
                raise WorkerError("INVALID_VACUUM", f"target_z {p['target_z']} Å is below the stack's height "
                                  f"{heights.max() - heights.min():.3f} Å", {"target_z": p["target_z"]})
            from pymatgen.core import Lattice, Structure

            m = s.lattice.matrix
            xyz = s.cart_coords - (heights.min() - (p["target_z"] - (heights.max() - heights.min())) / 2) * normal
            s = Structure(Lattice([m[0], m[1], normal * p["target_z"]]), s.species, xyz, coords_are_cartesian=True,
                          site_properties=s.site_properties)
        name = f"hetero_{label}.{EXTENSIONS[fmt]}"
        files.append({"filename": name, "content": _write(s, fmt), "structure": h.structure_json(s)})
        manifest.append({"filename": name, "shift_a": round(fa, 4), "shift_b": round(fb, 4), "n_atoms": len(s),
                         "match_area": h.area(s.lattice), "strain": 100.0 * vm})
    return {"candidates": files, "manifest": manifest, "n_candidates": len(files), "fmt": fmt,
            "message": f"{len(files)} registry candidate(s) as {fmt}"}
