/**
 * Core adsorbate placement against pymatgen's `AdsorbateSiteFinder.add_adsorbate` run directly
 * (same slab dictionaries, same molecules, same points), and the overlap check's exact lift.
 */
import { runPython } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { fromDict, placeAdsorbate, type Vec3 } from "../src/index.ts";

const ORACLE = `
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
from pymatgen.analysis.adsorption import AdsorbateSiteFinder
from pymatgen.core import Lattice, Molecule, Structure
from pymatgen.core.surface import SlabGenerator
a = json.load(sys.stdin)
pt = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.924), ["Pt"], [[0, 0, 0]])
rut = Structure.from_spacegroup("P4_2/mnm", Lattice.tetragonal(4.594, 2.959), ["Ti", "O"], [[0, 0, 0], [0.3048, 0.3048, 0]])
out = []
for bulk, hkl in ((pt, (1, 1, 1)), (rut, (1, 1, 0)), (pt, (2, 1, 1))):
    slab = Structure.from_sites(SlabGenerator(bulk, hkl, 4, 10, center_slab=True, in_unit_planes=True).get_slabs()[0])
    for name, mol in a["molecules"].items():
        m = Molecule([s[0] for s in mol], [s[1:] for s in mol])
        for p in a["points"]:
            placed = AdsorbateSiteFinder(slab).add_adsorbate(m, np.array(p))
            out.append({"slab": slab.as_dict(), "molecule": name, "point": p, "xyz": placed.cart_coords.tolist()})
print(json.dumps(out))
`;

// binding atoms at the lowest z (pymatgen's rule), molecules in arbitrary in-plane orientations
const MOLECULES: Record<string, Array<[string, number, number, number]>> = {
  CO: [
    ["C", 0.1, -0.2, 0.3],
    ["O", 0.5, 0.4, 1.3],
  ],
  H2O: [
    ["O", 0, 0, 0],
    ["H", 0.757, 0.1, 0.586],
    ["H", -0.757, -0.2, 0.586],
  ],
  CH3: [
    ["C", 0.2, 0.1, -0.1],
    ["H", 1.2, 0.1, 0.3],
    ["H", -0.3, 0.97, 0.3],
    ["H", -0.3, -0.77, 0.3],
  ],
};
const POINTS: Vec3[] = [
  [0, 0, 30],
  [1.3, -0.7, 28.2],
  [-2.5, 4.1, 31.7],
];

interface Row {
  slab: Record<string, unknown>;
  molecule: string;
  point: Vec3;
  xyz: number[][];
}

describe("placeAdsorbate equals pymatgen's add_adsorbate", () => {
  let rows: Row[];
  beforeAll(async () => {
    rows = await runPython<Row[]>(ORACLE, { molecules: MOLECULES, points: POINTS });
  }, 120_000);

  it("Pt(111), TiO2(110), Pt(211) × CO, H2O, CH3 × three points: every coordinate within 1e-9 Å", () => {
    expect(rows.length).toBe(27);
    for (const r of rows) {
      const slab = fromDict(r.slab);
      const atoms = MOLECULES[r.molecule]!;
      const mol = fromDict({ sites: atoms.map(([element, x, y, z]) => ({ species: [{ element, occu: 1 }], xyz: [x, y, z] })) });
      const [p, q] = slab.lattice!.matrix;
      const normal: Vec3 = [p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]];
      const out = placeAdsorbate(slab, mol, { binding: [0], site: r.point, normal, autoRotate: false });
      for (const [i, xyz] of r.xyz.entries())
        for (let k = 0; k < 3; k++)
          expect(Math.abs((out.structure.cart[3 * i + k] as number) - (xyz[k] as number))).toBeLessThan(1e-9);
    }
  });

  it("the lift is the least that clears: after it the closest atom sits at the clearance, 1e-6 Å less does not clear", () => {
    const slab = fromDict(rows[0]!.slab);
    const co = fromDict({
      sites: [
        { species: [{ element: "C", occu: 1 }], xyz: [0, 0, 0] },
        { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 1.128] },
      ],
    });
    const [p, q] = slab.lattice!.matrix;
    const n: Vec3 = [p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]];
    const top = Array.from({ length: slab.length }, (_, i) => i).reduce((m, i) => {
      const h = (j: number) => [0, 1, 2].reduce((s, k) => s + (slab.cart[3 * j + k] as number) * n[k]!, 0);
      return h(i) > h(m) ? i : m;
    }, 0);
    const site: Vec3 = [slab.cart[3 * top] as number, slab.cart[3 * top + 1] as number, slab.cart[3 * top + 2] as number];
    const lifted = placeAdsorbate(slab, co, { binding: [0], site, normal: n, clearance: 2.1, autoRotate: false });
    expect(lifted.lift).toBeGreaterThan(1.5);
    expect(lifted.minDistance).toBeCloseTo(2.1, 9);
    const unit = Math.hypot(...n);
    const less = placeAdsorbate(slab, co, {
      binding: [0],
      site: site.map((x, k) => x + ((lifted.lift - 1e-6) * n[k]!) / unit) as Vec3,
      normal: n,
      autoRotate: false,
    });
    expect(less.minDistance).toBeLessThan(2.1);
    expect(() => placeAdsorbate(slab, co, { binding: [0], site, normal: n, clearance: 2.1, onOverlap: "error" })).toThrow(
      /closer than the clearance/,
    );
  });
});
