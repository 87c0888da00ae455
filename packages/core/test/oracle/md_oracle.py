"""Oracles for trajectory reading and MD analysis, run on the same files and frames as the TS core.

stdin: a list of tasks {kind, ...}; stdout: a list of results, one per task.
Readers: ASE (XDATCAR, extended XYZ, LAMMPS dumps) and MDAnalysis (PDB, LAMMPS dumps).
Analysis: mdtraj (RDF, fitted RMSD), numpy brute force (RDF counts, H-bonds, both in float64 with
27 images), MDAnalysis HydrogenBondAnalysis, scipy linkage/fcluster, scikit-learn DBSCAN/KMeans.
"""
import itertools
import json
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")


def frac_from_origin(a):
    if abs(np.linalg.det(a.cell.array)) < 1e-9:
        return None
    return ((a.get_positions() - a.get_celldisp().reshape(3)) @ np.linalg.inv(a.cell.array)).tolist()


def read_ase(t):
    from ase.io import read

    frames = read(t["path"], index=":", format=t["format"], **t.get("kwargs", {}))
    return {
        "n_frames": len(frames),
        "elements": frames[0].get_chemical_symbols(),
        "coords": [a.get_positions().tolist() for a in frames],
        # Relative to the box origin (LAMMPS xlo, ylo, zlo), which ASE keeps as celldisp.
        "frac": [frac_from_origin(a) for a in frames],
        "cells": [a.cell.array.tolist() for a in frames],
    }


def read_mda(t):
    import MDAnalysis as mda

    kw = {"format": t["format"]} if t.get("format") else {}
    u = mda.Universe(t["path"], **kw)
    coords, dims = [], []
    for ts in u.trajectory:
        coords.append(ts.positions.astype(float).tolist())
        dims.append(None if ts.dimensions is None else ts.dimensions.astype(float).tolist())
    return {"n_frames": len(coords), "coords": coords, "dims": dims}


def images(cell):
    return np.array([np.array(s) @ cell for s in itertools.product((-1, 0, 1), repeat=3)])


def min_image(vec, cell):
    """Minimum-image vectors of (..., 3) displacements: wrap fractionally, then try 27 images."""
    inv = np.linalg.inv(cell)
    f = vec @ inv
    f -= np.round(f)
    v = f @ cell
    cand = v[..., None, :] + images(cell)
    d2 = (cand**2).sum(-1)
    k = d2.argmin(-1)
    return np.take_along_axis(cand, k[..., None, None], -2)[..., 0, :]


def rdf_brute(t):
    xyz = np.array(t["coords"])
    cells = np.array(t["cells"])
    a, b = np.array(t["a"]), np.array(t["b"])
    counts = np.zeros(t["n_bins"])
    for f in range(len(xyz)):
        d = min_image(xyz[f][b][None, :, :] - xyz[f][a][:, None, :], cells[f])
        r = np.sqrt((d**2).sum(-1))
        same = a[:, None] == b[None, :]
        r = r[~same]
        r = r[r < t["r_max"]]
        k = np.minimum(np.floor(r * t["n_bins"] / t["r_max"]).astype(int), t["n_bins"] - 1)
        counts += np.bincount(k, minlength=t["n_bins"])
    return {"counts": counts.tolist()}


def rdf_mdtraj(t):
    import mdtraj as md

    xyz = np.array(t["coords"]) / 10.0
    cells = np.array(t["cells"]) / 10.0
    top = md.Topology()
    ch = top.add_chain()
    for i, el in enumerate(t["elements"]):
        res = top.add_residue("R", ch)
        top.add_atom(el, md.element.get_by_symbol(el), res)
    traj = md.Trajectory(xyz, top)
    traj.unitcell_vectors = cells
    a, b = t["a"], t["b"]
    if a == b:
        pairs = np.array([(i, j) for k, i in enumerate(a) for j in a[k + 1 :]])
    else:
        pairs = np.array([(i, j) for i in a for j in b if i != j])
    r, g = md.compute_rdf(traj, pairs, r_range=(0, t["r_max"] / 10.0), n_bins=t["n_bins"])
    return {"r": (r * 10).tolist(), "g": g.tolist()}


def rmsd_mdtraj(t):
    import mdtraj as md

    xyz = np.array(t["coords"]) / 10.0
    top = md.Topology()
    ch = top.add_chain()
    res = top.add_residue("R", ch)
    for el in t["elements"]:
        top.add_atom(el, md.element.get_by_symbol(el), res)
    traj = md.Trajectory(xyz, top)
    r = md.rmsd(traj, traj, frame=t["reference"], atom_indices=t["atoms"])
    return {"rmsd": (r * 10).tolist()}


def rmsd_closed_form(t):
    """Unwrap in fractional coordinates frame by frame, then the plain RMSD to the reference."""
    xyz = np.array(t["coords"])[:, t["atoms"]]
    cells = np.array(t["cells"])
    frac = np.einsum("fni,fij->fnj", xyz, np.linalg.inv(cells))
    step = np.diff(frac, axis=0)
    step -= np.round(step)
    un = np.concatenate([frac[:1], frac[:1] + np.cumsum(step, axis=0)])
    cart = np.einsum("fni,fij->fnj", un, cells)
    ref = cart[t["reference"]]
    return {"rmsd": np.sqrt(((cart - ref) ** 2).sum(-1).mean(-1)).tolist()}


def hbonds_brute(t):
    xyz = np.array(t["coords"])
    cells = np.array(t["cells"])
    D, H, A = t["donors"], t["hydrogens"], t["acceptors"]
    out = []
    for f in t["frames"]:
        # D-H pairs found again in every frame (MDAnalysis's update_selections=True).
        pairs = [(d, h) for d in D for h in H
                 if d != h and np.linalg.norm(min_image(xyz[f][h] - xyz[f][d], cells[f])) < t["dh"]]
        bonds = []
        for d, h in pairs:
            dh = min_image(xyz[f][h] - xyz[f][d], cells[f])
            for a in A:
                if a == d:
                    continue
                da = min_image(xyz[f][a] - xyz[f][d], cells[f])
                r = np.linalg.norm(da)
                if not (1.0 < r <= t["da"]):
                    continue
                u, v = -dh, da - dh
                ang = np.degrees(np.arccos(np.clip(u @ v / np.linalg.norm(u) / np.linalg.norm(v), -1, 1)))
                if ang >= t["angle"]:
                    bonds.append([f, d, h, a])
        out.append(bonds)
    return {"bonds": out}


def hbonds_mda(t):
    import MDAnalysis as mda
    from MDAnalysis.analysis.hydrogenbonds.hbond_analysis import HydrogenBondAnalysis

    from MDAnalysis.coordinates.memory import MemoryReader

    # Built in memory from the frames (its PDB reader cannot split END-separated models).
    xyz = np.array(t["coords"], dtype=np.float32)
    u = mda.Universe.empty(xyz.shape[1], trajectory=True)
    u.add_TopologyAttr("elements", t["elements"])
    from MDAnalysis.lib.mdamath import triclinic_box

    c = np.array(t["cells"][0])
    dims = triclinic_box(c[0], c[1], c[2]).astype(np.float32)
    u.load_new(xyz, format=MemoryReader, dimensions=np.tile(dims, (len(xyz), 1)))
    h = HydrogenBondAnalysis(u, donors_sel="element O", hydrogens_sel="element H", acceptors_sel="element O",
                             d_a_cutoff=3.0, d_h_a_angle_cutoff=150, d_h_cutoff=1.2)
    h.run()
    return {"counts": h.count_by_time().tolist()}


def cluster(t):
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    from sklearn.cluster import DBSCAN, KMeans
    from sklearn.metrics import adjusted_rand_score

    out = {}
    if "dist" in t:
        D = np.array(t["dist"])
        Z = linkage(squareform(D, checks=False), method=t["method"])
        lab = fcluster(Z, t["k"], criterion="maxclust")
        out["labels"] = lab.tolist()
        out["Z"] = Z.tolist()
        out["ari"] = adjusted_rand_score(lab, t["ours"])
        if "eps" in t:
            db = DBSCAN(eps=t["eps"], min_samples=t["min_samples"], metric="precomputed").fit(D).labels_
            out["dbscan"] = db.tolist()
            out["dbscan_ari"] = adjusted_rand_score(db, t["ours_dbscan"])
    if "x" in t:
        km = KMeans(n_clusters=t["k"], n_init=10, random_state=0).fit(np.array(t["x"])).labels_
        out["kmeans_ari"] = adjusted_rand_score(km, t["ours_kmeans"])
    return out


KINDS = {
    "read_ase": read_ase,
    "read_mda": read_mda,
    "rdf_brute": rdf_brute,
    "rdf_mdtraj": rdf_mdtraj,
    "rmsd_mdtraj": rmsd_mdtraj,
    "rmsd_closed_form": rmsd_closed_form,
    "hbonds_brute": hbonds_brute,
    "hbonds_mda": hbonds_mda,
    "cluster": cluster,
}

print(json.dumps([KINDS[t["kind"]](t) for t in json.load(sys.stdin)]))
