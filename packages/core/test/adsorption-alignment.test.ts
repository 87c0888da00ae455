/**
 * Multidentate alignment (`neighbors` of placeAdsorbate) and place-dual's facing turn
 * (`turnToFace`), checked geometrically: every 1° turn about the normal of the final molecule is
 * tried by brute force here, and none may bring the binding atoms closer (summed in-plane distance
 * to their nearest neighbour positions) than the answer does.
 */
import { describe, expect, it } from "vitest";
import { fromDict, placeAdsorbate, type Structure, turnToFace, type Vec3 } from "../src/index.ts";

const A = 2.77; // Pt–Pt, Å
const SURFACE_Z = 5;
const HEIGHT = 1.8;
const lattice = [
  [3 * A, 0, 0],
  [1.5 * A, 1.5 * A * Math.sqrt(3), 0],
  [0, 0, 20],
];
/** In-plane position of hexagonal lattice point (i, j) at the surface height. */
const hex = (i: number, j: number, z = SURFACE_Z): Vec3 => [A * (i + j / 2), (A * j * Math.sqrt(3)) / 2, z];
/** A 3×3 Pt(111)-like monolayer, periodic in-plane. */
const SLAB = fromDict({
  lattice: { matrix: lattice },
  sites: [0, 1, 2].flatMap((i) => [0, 1, 2].map((j) => ({ species: [{ element: "Pt", occu: 1 }], xyz: hex(i, j) }))),
});

/** An arbitrary proper rotation (Euler z-y-z), so no molecule comes in aligned by accident. */
const turn = (v: Vec3, a = 0.7, b = 1.1, c = -0.4): Vec3 => {
  const rz = (t: number, [x, y, z]: Vec3): Vec3 => [Math.cos(t) * x - Math.sin(t) * y, Math.sin(t) * x + Math.cos(t) * y, z];
  const ry = (t: number, [x, y, z]: Vec3): Vec3 => [Math.cos(t) * x + Math.sin(t) * z, y, -Math.sin(t) * x + Math.cos(t) * z];
  return rz(a, ry(b, rz(c, v)));
};
const molecule = (atoms: Array<[string, number, number, number]>) =>
  fromDict({ sites: atoms.map(([element, x, y, z]) => ({ species: [{ element, occu: 1 }], xyz: turn([x, y, z]) })) });

// formate bound through both O (bidentate), and a C(O)3 tripod bound through three O (tridentate)
const FORMATE = molecule([
  ["O", -1.1, 0, 0],
  ["O", 1.1, 0, 0],
  ["C", 0, 0, 0.6],
  ["H", 0, 0, 1.7],
]);
const TRIPOD = molecule([
  ...[0, 1, 2].map((k): [string, number, number, number] => {
    const t = (2 * Math.PI * k) / 3;
    return ["O", (2.5 / Math.sqrt(3)) * Math.cos(t), (2.5 / Math.sqrt(3)) * Math.sin(t), 0];
  }),
  ["C", 0, 0, 0.8],
]);
// CH2–CHCl through both C: its centre of mass is off the C–C bisector, so only the orientation's
// levelling step (adsorption-levelling.test.ts) brings both C to one height before the alignment
const CHLOROETHYL = molecule([
  ["C", -0.77, 0, 0],
  ["C", 0.77, 0, 0],
  ["H", -1.2, 0.9, 0.5],
  ["H", -1.2, -0.9, 0.5],
  ["H", 1.2, -0.9, 0.6],
  ["Cl", 1.4, 0.5, 1.6],
]);

const atomsOf = (s: Structure, from: number): Vec3[] =>
  Array.from({ length: s.length - from }, (_, k) => [0, 1, 2].map((d) => s.cart[3 * (from + k) + d] as number) as Vec3);

/** Summed in-plane (xy: the normal is z) distance from each binding atom turned by `deg` about the binding centroid to its nearest neighbour. */
const cost = (binding: Vec3[], neighbors: Vec3[], deg: number): number => {
  const cx = binding.reduce((s, p) => s + p[0], 0) / binding.length;
  const cy = binding.reduce((s, p) => s + p[1], 0) / binding.length;
  const t = (deg * Math.PI) / 180;
  return binding.reduce((sum, [x, y]) => {
    const rx = cx + Math.cos(t) * (x - cx) - Math.sin(t) * (y - cy);
    const ry = cy + Math.sin(t) * (x - cx) + Math.cos(t) * (y - cy);
    return sum + Math.min(...neighbors.map((q) => Math.hypot(rx - q[0], ry - q[1])));
  }, 0);
};

const centroid = (ps: Vec3[]): Vec3 => [0, 1, 2].map((k) => ps.reduce((s, p) => s + p[k]!, 0) / ps.length) as Vec3;
const place = (mol: Structure, binding: number[], site: Vec3, neighbors?: Vec3[], autoRotate = true) =>
  placeAdsorbate(SLAB, mol, { binding, site, normal: [0, 0, 1], neighbors, autoRotate });

describe("multidentate alignment: the binding atoms turn onto their neighbour positions", () => {
  const bridge = [hex(1, 1), hex(2, 1)];
  const hollow = [hex(1, 1), hex(2, 1), hex(1, 2)];
  const rows: Array<[string, Structure, number[], Vec3[], number]> = [
    // in-plane distance per binding atom at the optimum: (2.77 − 2.2)/2 and (2.77 − 2.5)/√3
    ["formate (bidentate) over a bridge, 2 neighbours", FORMATE, [0, 1], bridge, 2 * 0.285],
    ["C(O)3 tripod (tridentate) over a hollow, 3 neighbours", TRIPOD, [0, 1, 2], hollow, (3 * 0.27) / Math.sqrt(3)],
    // (2.77 − 1.54)/2 per C
    ["chloroethyl (asymmetric bidentate) over a bridge, 2 neighbours", CHLOROETHYL, [0, 1], bridge, A - 1.54],
  ];
  it.each(rows)("%s", (_what, mol, binding, neighbors, optimum) => {
    const site: Vec3 = [...centroid(neighbors).slice(0, 2), SURFACE_Z + HEIGHT] as Vec3;
    const r = place(mol, binding, site, neighbors);
    const placed = atomsOf(r.structure, SLAB.length);
    const b = binding.map((i) => placed[i] as Vec3);
    expect(r.alignment).not.toBeNull();
    // the reported distance is the one of the answer, and no 1° turn of the answer does better
    expect(r.alignment!.inPlaneDistance).toBeCloseTo(cost(b, neighbors, 0), 9);
    for (let deg = 1; deg < 360; deg++) expect(cost(b, neighbors, 0)).toBeLessThanOrEqual(cost(b, neighbors, deg) + 1e-9);
    // within the 1° grid of the exact optimum (0.5° at the binding radius is under 0.02 Å)
    expect(r.alignment!.inPlaneDistance).toBeLessThan(optimum + 0.02);
    // each binding atom sits nearest its own neighbour: all different
    expect(new Set(r.alignment!.nearest).size).toBe(binding.length);
    // the binding centroid stays on the site, and the binding atoms are level (the orientation levels them)
    expect(
      centroid(b)
        .map((x, k) => x - site[k]!)
        .every((d) => Math.abs(d) < 1e-9),
    ).toBe(true);
    for (const p of b) expect(p[2]).toBeCloseTo(site[2], 9);
  });

  it("neighbour positions given as far periodic images align the same as the near ones", () => {
    const site: Vec3 = [...centroid(bridge).slice(0, 2), SURFACE_Z + HEIGHT] as Vec3;
    const far = [bridge[0]!.map((x, k) => x + lattice[0]![k]! - lattice[1]![k]!) as Vec3, bridge[1]!];
    const near = place(FORMATE, [0, 1], site, bridge);
    const viaImage = place(FORMATE, [0, 1], site, far);
    expect(viaImage.alignment?.rotationDeg).toBe(near.alignment?.rotationDeg);
    expect(Array.from(viaImage.structure.cart)).toEqual(Array.from(near.structure.cart));
  });

  it("a 1×1 cell's bridge names one atom twice (as /sites does): each O finds its own image of it", () => {
    const cell = fromDict({
      lattice: {
        matrix: [
          [A, 0, 0],
          [A / 2, (A * Math.sqrt(3)) / 2, 0],
          [0, 0, 20],
        ],
      },
      sites: [{ species: [{ element: "Pt", occu: 1 }], xyz: hex(0, 0) }],
    });
    const bridgeSite: Vec3 = [A / 2, 0, SURFACE_Z + HEIGHT];
    const r = placeAdsorbate(cell, FORMATE, {
      binding: [0, 1],
      site: bridgeSite,
      normal: [0, 0, 1],
      neighbors: [hex(0, 0), hex(0, 0)],
    });
    const b = [0, 1].map((i) => atomsOf(r.structure, 1)[i] as Vec3);
    // the two images the bridge joins, for the brute force
    const images = [hex(0, 0), hex(1, 0)];
    expect(r.alignment!.inPlaneDistance).toBeCloseTo(cost(b, images, 0), 9);
    expect(r.alignment!.inPlaneDistance).toBeLessThan(2 * 0.285 + 0.02);
    for (let deg = 1; deg < 360; deg++) expect(cost(b, images, 0)).toBeLessThanOrEqual(cost(b, images, deg) + 1e-9);
  });

  const ignored: Array<[string, Structure, number[], Vec3[] | undefined, boolean]> = [
    ["one binding atom", FORMATE, [0], bridge, true],
    ["fewer than two neighbours", FORMATE, [0, 1], [bridge[0]!], true],
    ["auto_rotate off", FORMATE, [0, 1], bridge, false],
  ];
  it.each(ignored)("ignored with %s: the same placement as without neighbours", (_what, mol, binding, neighbors, autoRotate) => {
    const site: Vec3 = [4, 2, SURFACE_Z + HEIGHT];
    const r = place(mol, binding, site, neighbors, autoRotate);
    const plain = place(mol, binding, site, undefined, autoRotate);
    expect(r.alignment).toBeNull();
    expect(Array.from(r.structure.cart)).toEqual(Array.from(plain.structure.cart));
  });
});

describe("turnToFace: adsorbate 2's first binding atom turned toward adsorbate 1's", () => {
  // an O on one site, and a bent "OH-like" pair on another: binding atom X, arm atom 1.9 Å off to its side
  const siteA: Vec3 = [0, 0, 10];
  const siteB: Vec3 = [4, 0, 10];
  const flat = (extra: Array<[string, Vec3]> = []) =>
    fromDict({
      sites: [["Pt", [0, 0, 0] as Vec3] as [string, Vec3], ...extra].map(([element, xyz]) => ({
        species: [{ element, occu: 1 }],
        xyz,
      })),
    });
  const arm = fromDict({
    sites: [
      { species: [{ element: "N", occu: 1 }], xyz: [0, 0, 0] },
      { species: [{ element: "H", occu: 1 }], xyz: [0, 1.9, 0.5] },
    ],
  });
  const o = fromDict({ sites: [{ species: [{ element: "O", occu: 1 }], xyz: [0, 0, 0] }] });
  const both = (slab: Structure) => {
    const first = placeAdsorbate(slab, o, { binding: [0], site: siteA, normal: [0, 0, 1], autoRotate: false });
    const second = placeAdsorbate(first.structure, arm, { binding: [0], site: siteB, normal: [0, 0, 1], autoRotate: false });
    return turnToFace(second.structure, {
      moving: slab.length + 1,
      pointer: slab.length + 1,
      axis: second.bindingPosition,
      normal: [0, 0, 1],
      target: siteA,
      clearance: 1.5,
    });
  };

  it("kept: the centroid → binding atom direction points at adsorbate 1 (the arm swings to the far side)", () => {
    const r = both(flat());
    expect(r.status).toBe("applied");
    expect(r.angleDeg).toBeCloseTo(-90, 9);
    const [x, h] = atomsOf(r.structure, 2);
    expect(x).toEqual(siteB.map((v) => expect.closeTo(v, 9)));
    expect(h).toEqual([5.9, 0, 10.5].map((v) => expect.closeTo(v, 9)));
  });

  it("refused: a slab atom where the arm would go leaves adsorbate 2 as placed, with the distance it would have had", () => {
    const slab = flat([["Pt", [6.9, 0, 10.5]]]);
    const r = both(slab);
    expect(r.status).toBe("refused_clearance");
    expect(r.minDistance).toBeCloseTo(1.0, 9);
    const [, h] = atomsOf(r.structure, 3);
    expect(h).toEqual([4, 1.9, 10.5].map((v) => expect.closeTo(v, 9)));
  });
});
