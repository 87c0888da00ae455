/**
 * The orientation of `placeAdsorbate` with `autoRotate` (the molecule turned to stand on its
 * binding atoms), checked geometrically on molecules given in arbitrary orientations: with two
 * binding atoms both end at the same height, with three or more the best-fit plane of the binding
 * atoms (numpy's SVD of the placed atoms, the oracle) is parallel to the surface, and in both the
 * molecule stays above its binding atoms. One binding atom and `autoRotate: false` keep today's
 * placement (centre of mass straight above; given orientation).
 */
import { runPython } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { elementInfo, fromDict, placeAdsorbate, type Structure, type Vec3 } from "../src/index.ts";

const SURFACE_Z = 5;
const SITE: Vec3 = [4.1, 3.7, SURFACE_Z + 1.8];
/** A square Pt monolayer, periodic in-plane, far enough below the site that no lift happens. */
const SLAB = fromDict({
  lattice: {
    matrix: [
      [8, 0, 0],
      [0, 8, 0],
      [0, 0, 30],
    ],
  },
  sites: [0, 1].flatMap((i) => [0, 1].map((j) => ({ species: [{ element: "Pt", occu: 1 }], xyz: [4 * i, 4 * j, SURFACE_Z] }))),
});

/** An arbitrary proper rotation (Euler z-y-z), so no molecule comes in levelled by accident. */
const turn = (v: Vec3, a = 0.7, b = 1.1, c = -0.4): Vec3 => {
  const rz = (t: number, [x, y, z]: Vec3): Vec3 => [Math.cos(t) * x - Math.sin(t) * y, Math.sin(t) * x + Math.cos(t) * y, z];
  const ry = (t: number, [x, y, z]: Vec3): Vec3 => [Math.cos(t) * x + Math.sin(t) * z, y, -Math.sin(t) * x + Math.cos(t) * z];
  return rz(a, ry(b, rz(c, v)));
};
type Atom = [string, number, number, number];
/** A molecule written in its adsorbed pose (binding atoms low, the rest above), then turned by `turn`. */
const molecule = (atoms: Atom[], angles: [number, number, number] = [0.7, 1.1, -0.4]) =>
  fromDict({ sites: atoms.map(([element, x, y, z]) => ({ species: [{ element, occu: 1 }], xyz: turn([x, y, z], ...angles) })) });

const atomsOf = (s: Structure, from: number): Vec3[] =>
  Array.from({ length: s.length - from }, (_, k) => [0, 1, 2].map((d) => s.cart[3 * (from + k) + d] as number) as Vec3);
const mean = (ps: Vec3[], w: number[] = ps.map(() => 1)): Vec3 => {
  const total = w.reduce((a, b) => a + b, 0);
  return [0, 1, 2].map((k) => ps.reduce((s, p, i) => s + w[i]! * p[k]!, 0) / total) as Vec3;
};
const massesOf = (m: Structure) => m.species.map((sp) => elementInfo(sp[0]!.element)!.mass);
const place = (m: Structure, binding: number[], autoRotate = true) =>
  atomsOf(placeAdsorbate(SLAB, m, { binding, site: SITE, normal: [0, 0, 1], autoRotate, clearance: 0 }).structure, SLAB.length);
const rigid = (before: Vec3[], after: Vec3[]) => {
  for (let i = 0; i < before.length; i++)
    for (let j = i + 1; j < before.length; j++) {
      const d = (p: Vec3[]) => Math.hypot(...[0, 1, 2].map((k) => p[i]![k]! - p[j]![k]!));
      expect(d(after)).toBeCloseTo(d(before), 9);
    }
};

// formate HCOO⁻ through both O (symmetric about the O–O bisector)
const FORMATE: Atom[] = [
  ["O", -1.1, 0, 0],
  ["O", 1.1, 0, 0],
  ["C", 0, 0, 0.6],
  ["H", 0, 0, 1.7],
];
// 1-chloroethylidene-like di-σ C2: CH2–CHCl through both C, the Cl pulling the centre of mass off the
// C–C bisector, so turning the centre of mass above the binding centroid alone leaves the C–C tilted
const CHLOROETHYL: Atom[] = [
  ["C", -0.77, 0, 0],
  ["C", 0.77, 0, 0],
  ["H", -1.2, 0.9, 0.5],
  ["H", -1.2, -0.9, 0.5],
  ["H", 1.2, -0.9, 0.6],
  ["Cl", 1.4, 0.5, 1.6],
];
// NH3 flipped: bound through its three H, N above
const NH3_FLIPPED: Atom[] = [
  ...[0, 1, 2].map((k): Atom => ["H", 0.94 * Math.cos((2 * Math.PI * k) / 3), 0.94 * Math.sin((2 * Math.PI * k) / 3), 0]),
  ["N", 0, 0, 0.38],
];
// an asymmetric tripod: O, O, N at a scalene triangle, C above off their centre, Cl off to one side
const TRIPOD: Atom[] = [
  ["O", 1.4, 0, 0],
  ["O", -0.6, 1.3, 0],
  ["N", -0.9, -1.1, 0],
  ["C", 0.3, 0.2, 1.1],
  ["Cl", 1.5, 0.8, 1.9],
];
// four binding atoms that are not coplanar (a puckered ring bound through every atom): only a best fit exists
const PUCKERED: Atom[] = [
  ["O", 1.3, 0, 0.12],
  ["O", 0, 1.2, -0.1],
  ["N", -1.4, 0.1, 0.15],
  ["O", 0.1, -1.3, -0.08],
  ["C", 0.3, 0.2, 1.2],
  ["Br", 0.9, -0.4, 2.3],
];
// three collinear binding atoms (O–C–O laid along the surface) have no plane: their line is levelled
const COLLINEAR: Atom[] = [
  ["O", -1.16, 0, 0],
  ["C", 0, 0, 0],
  ["O", 1.16, 0, 0],
  ["K", 0.6, 0, 2.5],
];

describe("two binding atoms: turned about the axis perpendicular to the normal and their line until level", () => {
  const rows: Array<[string, Atom[], number[]]> = [
    ["formate through both O", FORMATE, [0, 1]],
    ["chloroethyl through both C (asymmetric: the centre of mass is off the C–C bisector)", CHLOROETHYL, [0, 1]],
    ["chloroethyl, binding atoms listed the other way round", CHLOROETHYL, [1, 0]],
    ["formate given upside down (binding atoms on top)", FORMATE.map(([e, x, y, z]): Atom => [e, x, y, -z]), [0, 1]],
  ];
  it.each(rows)("%s", (_what, atoms, binding) => {
    const m = molecule(atoms);
    const placed = place(m, binding);
    const [b0, b1] = binding.map((i) => placed[i]!) as [Vec3, Vec3];
    // level, and their centroid on the site
    expect(Math.abs(b0[2] - b1[2])).toBeLessThan(1e-9);
    expect(mean([b0, b1]).every((x, k) => Math.abs(x - SITE[k]!) < 1e-9)).toBe(true);
    // the rest of the molecule above the binding atoms
    for (const [i, p] of placed.entries()) if (!binding.includes(i)) expect(p[2]).toBeGreaterThan(SITE[2] + 0.1);
    // of the levelled poses (any turn about the binding line), the one with the centre of mass
    // straight above the line: its offset from the line, the part across it, points along +normal
    const com = mean(placed, massesOf(m));
    const line = [0, 1, 2].map((k) => b1[k]! - b0[k]!) as Vec3;
    const ll = Math.hypot(...line);
    const w = [0, 1, 2].map((k) => com[k]! - SITE[k]!) as Vec3;
    const along = (w[0] * line[0] + w[1] * line[1] + w[2] * line[2]) / (ll * ll);
    const across = w.map((x, k) => x - along * line[k]!);
    expect(Math.hypot(across[0]!, across[1]!)).toBeLessThan(1e-9);
    expect(across[2]).toBeGreaterThan(0.1);
    rigid(atomsOf(m, 0), placed);
  });

  it("N2O through both N (linear: the centre of mass on the N–N line, which step 1 stands on end) lies flat", () => {
    const placed = place(
      molecule([
        ["N", 0, 0, 0],
        ["N", 1.13, 0, 0],
        ["O", 2.32, 0, 0],
      ]),
      [0, 1],
    );
    for (const p of placed) expect(Math.abs(p[2] - SITE[2])).toBeLessThan(1e-9);
  });

  it("the asymmetric row exercises the levelling: its centre of mass ends off the vertical through the binding centroid", () => {
    const com = mean(place(molecule(CHLOROETHYL), [0, 1]), massesOf(molecule(CHLOROETHYL)));
    expect(Math.hypot(com[0] - SITE[0], com[1] - SITE[1])).toBeGreaterThan(0.1);
  });
});

describe("three or more binding atoms: their best-fit plane (SVD) turned parallel to the surface", () => {
  const rows: Array<[string, Atom[], number[]]> = [
    ["NH3 flipped, bound through its three H", NH3_FLIPPED, [0, 1, 2]],
    ["an asymmetric tripod (O, O, N)", TRIPOD, [0, 1, 2]],
    ["four binding atoms off one plane (best fit only)", PUCKERED, [0, 1, 2, 3]],
    ["the tripod given upside down", TRIPOD.map(([e, x, y, z]): Atom => [e, x, -y, -z]), [0, 1, 2]],
  ];
  const placements = rows.map(([, atoms, binding]) => {
    const m = molecule(atoms);
    return { m, binding, placed: place(m, binding) };
  });
  let planeNormals: Vec3[] = [];
  beforeAll(async () => {
    // the oracle: numpy's SVD of the placed binding atoms, centred; the last right singular vector is the plane normal
    planeNormals = await runPython<Vec3[]>(
      "import json,sys,numpy as np\n" +
        "sets=json.load(sys.stdin)\n" +
        "out=[]\n" +
        "for p in sets:\n" +
        "  a=np.array(p); a=a-a.mean(axis=0)\n" +
        "  out.append(np.linalg.svd(a)[2][-1].tolist())\n" +
        "print(json.dumps(out))\n",
      placements.map(({ placed, binding }) => binding.map((i) => placed[i])),
    );
  }, 60_000);

  it.each(rows.map((r, k) => [...r, k] as const))("%s", (_what, _atoms, binding, k) => {
    const { m, placed } = placements[k]!;
    const b = binding.map((i) => placed[i]!);
    // numpy's plane normal is ±z: no in-plane part
    const pn = planeNormals[k]!;
    expect(Math.hypot(pn[0], pn[1])).toBeLessThan(1e-9);
    if (binding.length === 3) for (const p of b) expect(Math.abs(p[2] - SITE[2])).toBeLessThan(1e-9);
    expect(mean(b).every((x, i) => Math.abs(x - SITE[i]!) < 1e-9)).toBe(true);
    // the sign: the molecule above its binding atoms, not hanging below them
    expect(mean(placed, massesOf(m))[2]).toBeGreaterThan(SITE[2] + 0.1);
    for (const [i, p] of placed.entries()) if (!binding.includes(i)) expect(p[2]).toBeGreaterThan(SITE[2] + 0.1);
    rigid(atomsOf(m, 0), placed);
  });

  it("three collinear binding atoms have no plane: their line is levelled as two atoms' would be", () => {
    const placed = place(molecule(COLLINEAR), [0, 1, 2]);
    for (const i of [0, 1, 2]) expect(Math.abs(placed[i]![2] - SITE[2])).toBeLessThan(1e-9);
    expect(placed[3]![2]).toBeGreaterThan(SITE[2] + 0.1);
  });
});

describe("unchanged: one binding atom, and auto_rotate false", () => {
  it("one binding atom: the smallest turn that puts the centre of mass straight above it (as before)", () => {
    const m = molecule(CHLOROETHYL);
    const placed = place(m, [5]);
    // the expected pose built here: Rodrigues about com × z by the angle between them, then moved onto the site
    const given = atomsOf(m, 0);
    const com = mean(given, massesOf(m));
    const v = com.map((x, k) => x - given[5]![k]!) as Vec3;
    const r = Math.hypot(...v);
    const axisRaw: Vec3 = [v[1], -v[0], 0]; // v × z
    const s = Math.hypot(...axisRaw);
    const u = axisRaw.map((x) => x / s) as Vec3;
    const angle = Math.atan2(s, v[2]);
    const rot = (p: Vec3): Vec3 => {
      const c = Math.cos(angle);
      const d = u[0] * p[0] + u[1] * p[1] + u[2] * p[2];
      const x: Vec3 = [u[1] * p[2] - u[2] * p[1], u[2] * p[0] - u[0] * p[2], u[0] * p[1] - u[1] * p[0]];
      return [0, 1, 2].map((k) => p[k]! * c + x[k]! * Math.sin(angle) + u[k]! * d * (1 - c)) as Vec3;
    };
    for (const [i, p] of given.entries()) {
      const want = rot(p.map((x, k) => x - given[5]![k]!) as Vec3).map((x, k) => x + SITE[k]!);
      expect(placed[i]!.map((x, k) => x - want[k]!).every((d) => Math.abs(d) < 1e-9)).toBe(true);
    }
    const placedCom = mean(placed, massesOf(m));
    expect(Math.hypot(placedCom[0] - SITE[0], placedCom[1] - SITE[1])).toBeLessThan(1e-9);
    expect(placedCom[2] - SITE[2]).toBeCloseTo(r, 9);
  });

  const given: Array<[string, Atom[], number[]]> = [
    ["two binding atoms", CHLOROETHYL, [0, 1]],
    ["three binding atoms", TRIPOD, [0, 1, 2]],
  ];
  it.each(given)("auto_rotate false, %s: the orientation given, only moved onto the site", (_what, atoms, binding) => {
    const m = molecule(atoms);
    const before = atomsOf(m, 0);
    const c = mean(binding.map((i) => before[i]!));
    const placed = place(m, binding, false);
    for (const [i, p] of placed.entries())
      expect(p.map((x, k) => x - (before[i]![k]! - c[k]! + SITE[k]!)).every((d) => Math.abs(d) < 1e-12)).toBe(true);
  });
});
