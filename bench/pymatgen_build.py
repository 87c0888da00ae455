"""pymatgen / pymatgen-analysis-defects / ASE doing the work of each `/api/build` route, timed
in-process (best of `repeats`, after one warm-up), for bench/build.ts.

One JSON line in, one out, for as long as stdin is open (a long-lived process, as the service's
worker is; bench/reference.ts): {"hosts": {name: dict}, "cases": [{name, route, body}], "repeats": int}
-> [{"name", "seconds", "count"}]
"""

import itertools
import json
import random
import sys
import time

import numpy as np
from pymatgen.analysis.structure_matcher import StructureMatcher
from pymatgen.core import Structure



def strain(b):
    s0 = Structure.from_dict(b["structure"])
    n, m = b.get("n_steps", 1), b["magnitude"]
    values = np.linspace(-abs(m), abs(m), n) if n > 1 else [m]
    k = "abc".index(b.get("axis", "c"))
    out = []
    for v in values:
        s = s0.copy()
        vec = [0.0, 0.0, 0.0]
        vec[k] = v
        s.apply_strain(vec)
        out.append(s.as_dict())
    return out


def grouped(s0, assignments):
    structures = []
    for a in assignments:
        s = s0.copy()
        for i, el in a:
            s.replace(i, el)
        structures.append(s)
    groups = StructureMatcher().group_structures(structures)
    return [g[0].as_dict() for g in groups]


def doping(b):
    s0 = Structure.from_dict(b["structure"])
    pool = [i for i, site in enumerate(s0) if site.specie.symbol == b["host_element"]]
    return grouped(s0, [[(i, b["dopant"]) for i in c] for c in itertools.combinations(pool, b["concentration"])])


def substitution(b):
    s0 = Structure.from_dict(b["structure"])
    combos = itertools.product(*[g["replacement_elements"] for g in b["groups"]])
    return grouped(s0, [[(i, el) for g, el in zip(b["groups"], c) for i in g["target_indices"]] for c in combos])


def random_substitution(b):
    s0 = Structure.from_dict(b["structure"])
    pool = [i for i, site in enumerate(s0) if site.specie.symbol == b["host_element"]]
    rng = random.Random(b.get("seed", 0))
    matcher = StructureMatcher()
    kept = []
    need = sum(d["count"] for d in b["dopants"])
    for _ in range(50 * b["n_samples"]):
        if len(kept) == b["n_samples"]:
            break
        sites = rng.sample(pool, need)
        s = s0.copy()
        at = 0
        for d in b["dopants"]:
            for _ in range(d["count"]):
                s.replace(sites[at], d["element"])
                at += 1
        if not any(matcher.fit(s, k) for k in kept):
            kept.append(s)
    return [s.as_dict() for s in kept]


def defect(b):
    from pymatgen.analysis.defects.generators import VacancyGenerator, VoronoiInterstitialGenerator

    s0 = Structure.from_dict(b["structure"])
    if b.get("defect_type", "vacancy") == "vacancy":
        out = []
        for v in VacancyGenerator().generate(s0):
            s = s0.copy()
            s.remove_sites([v.defect_site_index])
            out.append(s.as_dict())
        return out
    out = []
    for d in VoronoiInterstitialGenerator().generate(s0, insert_species=[b["substitute_element"]]):
        s = s0.copy()
        s.append(b["substitute_element"], d.site.frac_coords)
        out.append(s.as_dict())
    return out


def intercalation(b):
    from pymatgen.analysis.defects.generators import VoronoiInterstitialGenerator

    s0 = Structure.from_dict(b["structure"])
    voids = list(VoronoiInterstitialGenerator().generate(s0, insert_species=[b["species"]]))
    cands = [np.mod(site.frac_coords, 1) for v in voids for site in v.equivalent_sites]
    cands.sort(key=lambda f: -s0.lattice.get_all_distances([f], s0.frac_coords).min())
    placed = []
    for f in cands:
        if len(placed) == b["n_intercalants"]:
            break
        if placed and s0.lattice.get_all_distances([f], placed).min() < 2.0:
            continue
        placed.append(f)
    s = s0.copy()
    for f in placed:
        s.append(b["species"], f)
    return [s.as_dict()]


def nanoparticle(b):
    from ase.cluster import Icosahedron, wulff_construction
    from pymatgen.io.ase import AseAtomsAdaptor

    if b["shape"] == "icosahedron":
        atoms = Icosahedron(b["element"], b["shells"])
    else:
        atoms = wulff_construction(b["element"], [(1, 1, 1), (1, 0, 0), (1, 1, 0)], [1.0, 1.1, 1.2], b["size"], "fcc",
                                   rounding="closest")
    atoms.center(vacuum=10.0)
    atoms.pbc = True
    return [AseAtomsAdaptor.get_structure(atoms).as_dict()]


ROUTES = {"strain": strain, "doping": doping, "substitution": substitution, "random-substitution": random_substitution,
          "defect": defect, "intercalation": intercalation, "nanoparticle": nanoparticle}
def measure(args):
    out = []
    for c in args["cases"]:
        body = dict(c["body"])
        if isinstance(body.get("structure"), str) and c["route"] != "nanoparticle":
            body["structure"] = args["hosts"][body["structure"]]
        f = ROUTES[c["route"]]
        result = f(body)  # warm-up (imports, caches)
        best = float("inf")
        for _ in range(args["repeats"]):
            t = time.perf_counter()
            result = f(body)
            best = min(best, time.perf_counter() - t)
        out.append({"name": c["name"], "seconds": best, "count": len(result)})
    return out


for line in sys.stdin:
    if line.strip():
        print(json.dumps(measure(json.loads(line))), flush=True)
