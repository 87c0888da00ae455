"""MDAnalysis (and scikit-learn) doing in-process what the /api/md routes do, timed.

stdin: {path, n_atoms, r_max, n_bins, cluster_step}; stdout: seconds per task.
"""
import json
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.analysis import rdf, rms  # noqa: E402
from MDAnalysis.analysis.hydrogenbonds.hbond_analysis import HydrogenBondAnalysis  # noqa: E402

cfg = json.load(sys.stdin)
out = {}


def load():
    u = mda.Universe(cfg["path"], format="LAMMPSDUMP", lammps_coordinate_convention="unscaled")
    u.add_TopologyAttr("elements", ["O" if t == "1" else "H" for t in u.atoms.types])
    return u


t = time.perf_counter()
u = load()
u.transfer_to_memory()
out["read"] = time.perf_counter() - t
out["read_bytes"] = int(u.trajectory.coordinate_array.nbytes)

t = time.perf_counter()
u = load()
O = u.select_atoms("element O")
r = rdf.InterRDF(O, O, nbins=cfg["n_bins"], range=(0, cfg["r_max"]), exclusion_block=(1, 1)).run()
out["rdf"] = time.perf_counter() - t
out["rdf_peak"] = float(r.results.bins[np.argmax(r.results.rdf)])

t = time.perf_counter()
u = load()
from MDAnalysis.transformations.nojump import NoJump  # noqa: E402

u.trajectory.add_transformations(NoJump())
R = rms.RMSD(u.atoms, u.atoms, ref_frame=0).run()
out["rmsd"] = time.perf_counter() - t

t = time.perf_counter()
u = load()
h = HydrogenBondAnalysis(u, donors_sel="element O", hydrogens_sel="element H", acceptors_sel="element O",
                         d_a_cutoff=3.0, d_h_a_angle_cutoff=150, d_h_cutoff=1.2).run()
out["hbonds"] = time.perf_counter() - t

t = time.perf_counter()
u = load()
from MDAnalysis.analysis.diffusionmap import DistanceMatrix  # noqa: E402
from sklearn.cluster import AgglomerativeClustering  # noqa: E402

dm = DistanceMatrix(u, select="all", step=cfg["cluster_step"]).run()
AgglomerativeClustering(n_clusters=3, metric="precomputed", linkage="average").fit(dm.results.dist_matrix)
out["clustering"] = time.perf_counter() - t

t = time.perf_counter()
u = load()
from sklearn.cluster import HDBSCAN  # noqa: E402

dm = DistanceMatrix(u, select="all", step=cfg["cluster_step"]).run()
HDBSCAN(min_cluster_size=5, metric="precomputed", copy=True).fit(dm.results.dist_matrix)
out["hdbscan"] = time.perf_counter() - t
print(json.dumps(out))
