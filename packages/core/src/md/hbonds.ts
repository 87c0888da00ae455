/**
 * Hydrogen bonds per frame by the geometric criterion of MDAnalysis's `HydrogenBondAnalysis`:
 * donor–hydrogen pairs are the D–H pairs within `dhCutoff` (1.2 Å), found again in every frame
 * (its default `update_selections=True`, so a proton that moves to another donor is followed);
 * a bond D–H···A exists when A ≠ D, 1 Å < |D−A| ≤ `daCutoff` (3.0 Å) and the angle D–H–A is at
 * least `angleCutoff` (150°). Distances and angles use the minimum image in any cell.
 */
import { forEachPairWithin } from "../geometry/neighbors.ts";
import type { Trajectory } from "../trajectory/trajectory.ts";

export interface HbondOptions {
  donors: Int32Array;
  hydrogens: Int32Array;
  acceptors: Int32Array;
  frames: readonly number[];
  dhCutoff?: number;
  daCutoff?: number;
  angleCutoff?: number;
  /** Most bonds listed (counts are always complete). */
  maxListed?: number;
}

export interface HbondResult {
  counts: Int32Array;
  /** Listed bonds, flat: frame, donor, hydrogen, acceptor (indices) … */
  bonds: Int32Array;
  /** D–A distance (Å) and D–H–A angle (degrees) of each listed bond. */
  distances: Float64Array;
  angles: Float64Array;
  truncated: boolean;
  /** Donor–hydrogen pairs of the first analysed frame, flat [d, h, …]. */
  pairs: Int32Array;
}

const MIN_DA = 1.0;

export const hydrogenBonds = (traj: Trajectory, opts: HbondOptions): HbondResult => {
  const dh = opts.dhCutoff ?? 1.2;
  const da = opts.daCutoff ?? 3.0;
  const cosMax = Math.cos(((opts.angleCutoff ?? 150) * Math.PI) / 180);
  const maxListed = opts.maxListed ?? 100_000;
  const cellOk = traj.cells && traj.pbc.every(Boolean);
  // D–H pairs of a frame.
  let pairD: number[] = [];
  let pairH: number[] = [];
  let firstPairs: Int32Array | null = null;
  const findPairs = (c: Float64Array, cell: Float64Array | null): void => {
    pairD = [];
    pairH = [];
    forEachPairWithin(c, cell, dh, opts.donors, opts.hydrogens, (d, h) => {
      pairD.push(d);
      pairH.push(h);
    });
    if (!firstPairs) {
      firstPairs = new Int32Array(2 * pairD.length);
      pairD.forEach((d, k) => {
        (firstPairs as Int32Array)[2 * k] = d;
        (firstPairs as Int32Array)[2 * k + 1] = pairH[k] as number;
      });
    }
  };
  const counts = new Int32Array(opts.frames.length);
  const bonds: number[] = [];
  const dist: number[] = [];
  const ang: number[] = [];
  let truncated = false;
  // Acceptors near each donor, per frame: vectors D→A.
  const near = new Map<number, number[]>();
  opts.frames.forEach((f, fi) => {
    const c = traj.frameCoords(f);
    const cell = cellOk ? traj.cell(f) : null;
    findPairs(c, cell);
    const donorsWithH = Int32Array.from(new Set(pairD));
    near.clear();
    forEachPairWithin(c, cell, da + 1e-9, donorsWithH, opts.acceptors, (d, a, x, y, z, r2) => {
      if (r2 <= MIN_DA * MIN_DA || r2 > da * da) return;
      let list = near.get(d);
      if (!list) {
        list = [];
        near.set(d, list);
      }
      list.push(a, x, y, z);
    });
    let count = 0;
    for (let p = 0; p < pairD.length; p++) {
      const d = pairD[p] as number;
      const list = near.get(d);
      if (!list) continue;
      const h = pairH[p] as number;
      // D→H by the minimum image: the pair was within 1.2 Å, so the wrapped difference is it.
      let hx = (c[3 * h] as number) - (c[3 * d] as number);
      let hy = (c[3 * h + 1] as number) - (c[3 * d + 1] as number);
      let hz = (c[3 * h + 2] as number) - (c[3 * d + 2] as number);
      if (cell) [hx, hy, hz] = shortVector(cell, hx, hy, hz);
      for (let q = 0; q < list.length; q += 4) {
        const a = list[q] as number;
        if (a === h) continue;
        const ax = list[q + 1] as number;
        const ay = list[q + 2] as number;
        const az = list[q + 3] as number;
        // Angle at H between H→D and H→A.
        const ux = -hx;
        const uy = -hy;
        const uz = -hz;
        const vx = ax - hx;
        const vy = ay - hy;
        const vz = az - hz;
        const cos = (ux * vx + uy * vy + uz * vz) / Math.sqrt((ux * ux + uy * uy + uz * uz) * (vx * vx + vy * vy + vz * vz));
        if (cos <= cosMax + 1e-12) {
          count++;
          if (bonds.length / 4 < maxListed) {
            bonds.push(f, d, h, a);
            dist.push(Math.sqrt(ax * ax + ay * ay + az * az));
            ang.push((Math.acos(Math.max(-1, Math.min(1, cos))) * 180) / Math.PI);
          } else truncated = true;
        }
      }
    }
    counts[fi] = count;
  });
  return {
    counts,
    bonds: Int32Array.from(bonds),
    distances: Float64Array.from(dist),
    angles: Float64Array.from(ang),
    truncated,
    pairs: firstPairs ?? new Int32Array(0),
  };
};

/** A short vector wrapped into the minimum image (valid for lengths under half the cell width). */
const shortVector = (cell: ArrayLike<number>, x: number, y: number, z: number): [number, number, number] => {
  const m = cell;
  // Solve f = r · M⁻¹ through Cramer's rule on the rows of M.
  const [a0, a1, a2, b0, b1, b2, c0, c1, c2] = Array.from({ length: 9 }, (_, k) => m[k] as number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const det = a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0);
  let u = (x * (b1 * c2 - b2 * c1) + y * (b2 * c0 - b0 * c2) + z * (b0 * c1 - b1 * c0)) / det;
  let v = (x * (c1 * a2 - c2 * a1) + y * (c2 * a0 - c0 * a2) + z * (c0 * a1 - c1 * a0)) / det;
  let w = (x * (a1 * b2 - a2 * b1) + y * (a2 * b0 - a0 * b2) + z * (a0 * b1 - a1 * b0)) / det;
  u -= Math.round(u);
  v -= Math.round(v);
  w -= Math.round(w);
  return [u * a0 + v * b0 + w * c0, u * a1 + v * b1 + w * c1, u * a2 + v * b2 + w * c2];
};
