"""Oracle for the adsorption tests and benchmark: pymatgen's AdsorbateSiteFinder run directly.

stdin: {"slabs": true} -> the test slabs (pymatgen dictionaries) with, per slab, the sites of
find_adsorption_sites on each surface and a CO placed by add_adsorbate at every top-surface site.
stdin: {"match": [[a, b], ...]} -> StructureMatcher.fit for each pair of structure dictionaries."""

import json
import sys
import warnings

warnings.simplefilter("ignore")

import numpy as np  # noqa: E402
from pymatgen.analysis.adsorption import AdsorbateSiteFinder  # noqa: E402
from pymatgen.analysis.structure_matcher import StructureMatcher  # noqa: E402
from pymatgen.core import Lattice, Molecule, Structure  # noqa: E402
from pymatgen.core.surface import SlabGenerator  # noqa: E402

HEIGHT = 1.5
CO = Molecule(["C", "O"], [[0, 0, 0], [0, 0, 1.128]])


def slabs():
    pt = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.924), ["Pt"], [[0, 0, 0]])
    cu = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.615), ["Cu"], [[0, 0, 0]])
    rutile = Structure.from_spacegroup("P4_2/mnm", Lattice.tetragonal(4.594, 2.959), ["Ti", "O"],
                                       [[0, 0, 0], [0.3048, 0.3048, 0]])
    out = {}
    for name, bulk, hkl in (("Pt(111)", pt, (1, 1, 1)), ("Cu(100)", cu, (1, 0, 0)),
                            ("TiO2(110)", rutile, (1, 1, 0)), ("Pt(211) stepped", pt, (2, 1, 1))):
        slab = SlabGenerator(bulk, hkl, 4, 10, center_slab=True, in_unit_planes=True).get_slabs()[0]
        out[name] = Structure.from_sites(slab)
    return out


def sites_of(slab, sign):
    m = slab.lattice.matrix
    n = np.cross(m[0], m[1])
    n /= np.linalg.norm(n)
    asf = AdsorbateSiteFinder(slab, mi_vec=list(sign * n))
    found = asf.find_adsorption_sites(distance=HEIGHT)
    return asf, {k: [list(map(float, p)) for p in found[k]] for k in ("ontop", "bridge", "hollow")}


def main():
    req = json.load(sys.stdin)
    if "match" in req:
        sm = StructureMatcher()
        print(json.dumps([bool(sm.fit(Structure.from_dict(a), Structure.from_dict(b))) for a, b in req["match"]]))
        return
    result = {}
    for name, slab in slabs().items():
        asf, top = sites_of(slab, 1.0)
        _, bottom = sites_of(slab, -1.0)
        placed = [AdsorbateSiteFinder(slab).add_adsorbate(CO, np.array(p)).as_dict()
                  for k in ("ontop", "bridge", "hollow") for p in top[k]]
        result[name] = {"slab": slab.as_dict(), "top": top, "bottom": bottom, "placed_co": placed}
    print(json.dumps(result))


main()
