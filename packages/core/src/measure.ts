/**
 * Distances, angles and dihedrals between sites, periodic images respected: each bond of the
 * chain i–j–k–l goes to the nearest image of the next site (pymatgen's `get_distance` nearest
 * image, chained), so a measurement across a cell face reads what the viewer shows.
 */
import { fail } from "./errors.ts";
import type { Structure } from "./structure.ts";

export type Vec = [number, number, number];

export interface Measurement {
  /** Site indices, in the order picked. */
  sites: number[];
  kind: "distance" | "angle" | "dihedral";
  /** Ångström for a distance, degrees otherwise. */
  value: number;
  /** Cartesian positions of the chain's atoms (the images the value was measured between). */
  points: Vec[];
}

const sub = (a: Vec, b: Vec): Vec => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const dot = (a: Vec, b: Vec): number => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a: Vec, b: Vec): Vec => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const norm = (a: Vec): number => Math.sqrt(dot(a, a));
const DEG = 180 / Math.PI;

const position = (s: Structure, i: number): Vec => [
  s.cart[3 * i] as number,
  s.cart[3 * i + 1] as number,
  s.cart[3 * i + 2] as number,
];

/**
 * The shortest vector from site i to an image of site j (plain difference for molecules and for
 * non-periodic directions). The fractional difference is wrapped to [-0.5, 0.5) and the 27
 * neighbouring images are compared, as pymatgen's `pbc_shortest_vectors` does.
 */
export const minimumImageVector = (s: Structure, i: number, j: number): Vec => {
  const d = sub(position(s, j), position(s, i));
  const lat = s.lattice;
  if (!lat) return d;
  const inv = lat.inverse;
  const m = lat.matrix;
  const f: Vec = [0, 0, 0];
  for (let c = 0; c < 3; c++) {
    const x = d[0] * (inv[0][c] as number) + d[1] * (inv[1][c] as number) + d[2] * (inv[2][c] as number);
    f[c] = lat.pbc[c] ? x - Math.round(x) : x;
  }
  let best: Vec = d;
  let bestLen = Number.POSITIVE_INFINITY;
  const range = (c: number) => (lat.pbc[c] ? [-1, 0, 1] : [0]);
  for (const a of range(0))
    for (const b of range(1))
      for (const c of range(2)) {
        const g: Vec = [f[0] + a, f[1] + b, f[2] + c];
        const v: Vec = [
          g[0] * m[0][0] + g[1] * m[1][0] + g[2] * m[2][0],
          g[0] * m[0][1] + g[1] * m[1][1] + g[2] * m[2][1],
          g[0] * m[0][2] + g[1] * m[1][2] + g[2] * m[2][2],
        ];
        const len = dot(v, v);
        if (len < bestLen - 1e-12) {
          bestLen = len;
          best = v;
        }
      }
  return best;
};

/** Positions of the chain of sites, each the nearest image of the one before. */
export const imageChain = (s: Structure, sites: readonly number[]): Vec[] => {
  for (const i of sites)
    if (!Number.isInteger(i) || i < 0 || i >= s.length)
      fail("INVALID_INDEX", `Site index ${i} is out of range (0–${s.length - 1})`);
  const out: Vec[] = [];
  sites.forEach((site, n) => {
    if (n === 0) out.push(position(s, site));
    else {
      const v = minimumImageVector(s, sites[n - 1] as number, site);
      const p = out[n - 1] as Vec;
      out.push([p[0] + v[0], p[1] + v[1], p[2] + v[2]]);
    }
  });
  return out;
};

/** Angle at b between a and c, degrees. */
export const angleOf = (a: Vec, b: Vec, c: Vec): number => {
  const u = sub(a, b);
  const v = sub(c, b);
  const cos = dot(u, v) / (norm(u) * norm(v));
  return Math.acos(Math.max(-1, Math.min(1, cos))) * DEG;
};

/** Dihedral angle a–b–c–d in degrees, in (-180, 180], with pymatgen's sign convention. */
export const dihedralOf = (a: Vec, b: Vec, c: Vec, d: Vec): number => {
  const v1 = sub(c, d);
  const v2 = sub(b, c);
  const v3 = sub(a, b);
  const v23 = cross(v2, v3);
  const v12 = cross(v1, v2);
  return Math.atan2(norm(v2) * dot(v1, v23), dot(v12, v23)) * DEG;
};

/** Distance (2 sites), angle (3) or dihedral (4) along the chain of picked sites. */
export const measure = (s: Structure, sites: readonly number[]): Measurement => {
  if (sites.length < 2 || sites.length > 4)
    fail("INVALID_INDEX", `A measurement takes 2, 3 or 4 sites, not ${sites.length}`, { n_sites: sites.length });
  const points = imageChain(s, sites);
  const [a, b, c, d] = points as [Vec, Vec, Vec?, Vec?];
  if (sites.length === 2) return { sites: [...sites], kind: "distance", value: norm(sub(b, a)), points };
  if (sites.length === 3) return { sites: [...sites], kind: "angle", value: angleOf(a, b, c as Vec), points };
  return { sites: [...sites], kind: "dihedral", value: dihedralOf(a, b, c as Vec, d as Vec), points };
};
