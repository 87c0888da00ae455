/**
 * Periodic neighbour search with cell lists: every pair (i from A, j from B, i ≠ j) closer than
 * a cutoff, by the minimum image in any (triclinic) cell. Bins are laid out along the fractional
 * axes, each at least one cutoff wide measured perpendicular to its faces, so the 27 surrounding
 * bins hold every neighbour. The cutoff must not exceed half the smallest perpendicular width:
 * then a vector shorter than the cutoff has every fractional component inside (−½, ½), so
 * wrapping the fractional difference to the nearest integer gives the minimum image exactly.
 * Without a cell the same search runs on a Cartesian grid. Pure functions over typed arrays, so
 * they can run in a worker thread.
 */
import { fail } from "../errors.ts";

/** Row-major 3×3 cell (rows a, b, c) with its inverse and perpendicular widths. */
export interface CellGeometry {
  matrix: Float64Array;
  inverse: Float64Array;
  /** Distance between opposite faces along each axis: V / |b×c|, V / |c×a|, V / |a×b|. */
  widths: [number, number, number];
  volume: number;
}

export const cellGeometry = (cell: ArrayLike<number>): CellGeometry => {
  const m = Float64Array.from({ length: 9 }, (_, k) => cell[k] as number);
  const [a0, a1, a2, b0, b1, b2, c0, c1, c2] = m as unknown as number[] as [
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
  const bc = [b1 * c2 - b2 * c1, b2 * c0 - b0 * c2, b0 * c1 - b1 * c0];
  const ca = [c1 * a2 - c2 * a1, c2 * a0 - c0 * a2, c0 * a1 - c1 * a0];
  const ab = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0];
  const det = a0 * (bc[0] as number) + a1 * (bc[1] as number) + a2 * (bc[2] as number);
  if (!(Math.abs(det) > 1e-12)) fail("INVALID_CELL", "The cell has zero volume");
  const volume = Math.abs(det);
  const len = (v: number[]) => Math.hypot(v[0] as number, v[1] as number, v[2] as number);
  // fractional = cart · inverse, inverse columns are the reciprocal vectors bc/det, ca/det, ab/det.
  const inverse = new Float64Array([
    (bc[0] as number) / det,
    (ca[0] as number) / det,
    (ab[0] as number) / det,
    (bc[1] as number) / det,
    (ca[1] as number) / det,
    (ab[1] as number) / det,
    (bc[2] as number) / det,
    (ca[2] as number) / det,
    (ab[2] as number) / det,
  ]);
  return { matrix: m, inverse, widths: [volume / len(bc), volume / len(ca), volume / len(ab)], volume };
};

/** Half the smallest perpendicular width: the largest cutoff with a unique minimum image. */
export const maxMinimumImageCutoff = (cell: ArrayLike<number>): number => Math.min(...cellGeometry(cell).widths) / 2;

/** Called for each pair within the cutoff with the minimum-image vector from i to j and its squared length. */
export type PairVisitor = (i: number, j: number, dx: number, dy: number, dz: number, r2: number) => void;

const MAX_BINS_PER_ATOM = 2;

/** Fractional coordinates of `idx` atoms wrapped into [0, 1). */
const wrappedFrac = (coords: Float64Array, idx: Int32Array, inv: Float64Array): Float64Array => {
  const out = new Float64Array(3 * idx.length);
  for (let k = 0; k < idx.length; k++) {
    const i = 3 * (idx[k] as number);
    const x = coords[i] as number;
    const y = coords[i + 1] as number;
    const z = coords[i + 2] as number;
    for (let d = 0; d < 3; d++) {
      let f = x * (inv[d] as number) + y * (inv[3 + d] as number) + z * (inv[6 + d] as number);
      f -= Math.floor(f);
      if (f >= 1) f = 0;
      out[3 * k + d] = f;
    }
  }
  return out;
};

interface Grid {
  n: [number, number, number];
  start: Int32Array;
  members: Int32Array;
}

const buildGrid = (binOf: Int32Array, nBins: number, n: [number, number, number]): Grid => {
  const start = new Int32Array(nBins + 1);
  for (let k = 0; k < binOf.length; k++) start[(binOf[k] as number) + 1] = (start[(binOf[k] as number) + 1] as number) + 1;
  for (let b = 0; b < nBins; b++) start[b + 1] = (start[b + 1] as number) + (start[b] as number);
  const fill = start.slice(0, nBins);
  const members = new Int32Array(binOf.length);
  for (let k = 0; k < binOf.length; k++) {
    const b = binOf[k] as number;
    members[fill[b] as number] = k;
    fill[b] = (fill[b] as number) + 1;
  }
  return { n, start, members };
};

/** Bins per axis: at least one cutoff wide, and not many more bins than atoms. */
const binCounts = (extent: [number, number, number], cutoff: number, atoms: number): [number, number, number] => {
  const n = extent.map((w) => Math.max(1, Math.floor(w / cutoff))) as [number, number, number];
  const cap = MAX_BINS_PER_ATOM * atoms + 27;
  while (n[0] * n[1] * n[2] > cap) {
    const k = n[0] >= n[1] && n[0] >= n[2] ? 0 : n[1] >= n[2] ? 1 : 2;
    n[k] = Math.max(1, Math.floor(n[k] / 2));
  }
  return n;
};

/** Neighbour bin offsets along one axis, each bin once (2 bins: the other one; 1 bin: itself). */
const offsets = (n: number, periodic: boolean): number[] =>
  periodic ? (n >= 3 ? [-1, 0, 1] : n === 2 ? [0, 1] : [0]) : [-1, 0, 1];

/**
 * Visit every pair i ∈ a, j ∈ b, i ≠ j, with |r_j − r_i| < cutoff (minimum image when `cell` is
 * given). `coords` is one frame (N×3). Each ordered pair is visited once.
 */
export const forEachPairWithin = (
  coords: Float64Array,
  cell: ArrayLike<number> | null,
  cutoff: number,
  a: Int32Array,
  b: Int32Array,
  visit: PairVisitor,
): void => {
  if (!(cutoff > 0)) fail("INVALID_CUTOFF", `The cutoff must be positive, not ${cutoff}`);
  if (a.length === 0 || b.length === 0) return;
  const c2 = cutoff * cutoff;
  if (cell) {
    const g = cellGeometry(cell);
    const wmin = Math.min(...g.widths);
    if (cutoff > wmin / 2 + 1e-9)
      fail("CUTOFF_TOO_LARGE", `The cutoff ${cutoff} Å exceeds half the smallest cell width (${(wmin / 2).toFixed(4)} Å)`, {
        cutoff,
        max_cutoff: wmin / 2,
      });
    const m = g.matrix;
    const fb = wrappedFrac(coords, b, g.inverse);
    const fa = wrappedFrac(coords, a, g.inverse);
    const n = binCounts(g.widths, cutoff, b.length);
    const [nx, ny, nz] = n;
    const binOf = new Int32Array(b.length);
    for (let k = 0; k < b.length; k++)
      binOf[k] =
        (Math.min(nx - 1, Math.floor((fb[3 * k] as number) * nx)) * ny +
          Math.min(ny - 1, Math.floor((fb[3 * k + 1] as number) * ny))) *
          nz +
        Math.min(nz - 1, Math.floor((fb[3 * k + 2] as number) * nz));
    const grid = buildGrid(binOf, nx * ny * nz, n);
    const ox = offsets(nx, true);
    const oy = offsets(ny, true);
    const oz = offsets(nz, true);
    const [m0, m1, m2, m3, m4, m5, m6, m7, m8] = m as unknown as number[] as [
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
    for (let ka = 0; ka < a.length; ka++) {
      const i = a[ka] as number;
      const ax = fa[3 * ka] as number;
      const ay = fa[3 * ka + 1] as number;
      const az = fa[3 * ka + 2] as number;
      const bx = Math.min(nx - 1, Math.floor(ax * nx));
      const by = Math.min(ny - 1, Math.floor(ay * ny));
      const bz = Math.min(nz - 1, Math.floor(az * nz));
      for (const dx of ox) {
        const cx = (bx + dx + nx) % nx;
        for (const dy of oy) {
          const cy = (by + dy + ny) % ny;
          for (const dz of oz) {
            const bin = (cx * ny + cy) * nz + ((bz + dz + nz) % nz);
            const end = grid.start[bin + 1] as number;
            for (let p = grid.start[bin] as number; p < end; p++) {
              const kb = grid.members[p] as number;
              const j = b[kb] as number;
              if (j === i) continue;
              let u = (fb[3 * kb] as number) - ax;
              let v = (fb[3 * kb + 1] as number) - ay;
              let w = (fb[3 * kb + 2] as number) - az;
              u -= Math.round(u);
              v -= Math.round(v);
              w -= Math.round(w);
              const x = u * m0 + v * m3 + w * m6;
              const y = u * m1 + v * m4 + w * m7;
              const z = u * m2 + v * m5 + w * m8;
              const r2 = x * x + y * y + z * z;
              if (r2 < c2) visit(i, j, x, y, z, r2);
            }
          }
        }
      }
    }
    return;
  }
  // No cell: a Cartesian grid over the bounding box of b.
  const lo = [Infinity, Infinity, Infinity];
  const hi = [-Infinity, -Infinity, -Infinity];
  for (let k = 0; k < b.length; k++)
    for (let d = 0; d < 3; d++) {
      const v = coords[3 * (b[k] as number) + d] as number;
      if (v < (lo[d] as number)) lo[d] = v;
      if (v > (hi[d] as number)) hi[d] = v;
    }
  const ext = [0, 1, 2].map((d) => (hi[d] as number) - (lo[d] as number) + 1e-9) as [number, number, number];
  const n = binCounts(ext, cutoff, b.length);
  const size = ext.map((e, d) => e / n[d as 0 | 1 | 2]);
  const [nx, ny, nz] = n;
  const cellIndex = (v: number, d: number): number => Math.floor((v - (lo[d] as number)) / (size[d] as number));
  const binOf = new Int32Array(b.length);
  for (let k = 0; k < b.length; k++) {
    const o = 3 * (b[k] as number);
    const ix = Math.min(nx - 1, cellIndex(coords[o] as number, 0));
    const iy = Math.min(ny - 1, cellIndex(coords[o + 1] as number, 1));
    const iz = Math.min(nz - 1, cellIndex(coords[o + 2] as number, 2));
    binOf[k] = (ix * ny + iy) * nz + iz;
  }
  const grid = buildGrid(binOf, nx * ny * nz, n);
  for (let ka = 0; ka < a.length; ka++) {
    const i = a[ka] as number;
    const px = coords[3 * i] as number;
    const py = coords[3 * i + 1] as number;
    const pz = coords[3 * i + 2] as number;
    const bx = cellIndex(px, 0);
    const by = cellIndex(py, 1);
    const bz = cellIndex(pz, 2);
    for (let cx = Math.max(0, bx - 1); cx <= Math.min(nx - 1, bx + 1); cx++)
      for (let cy = Math.max(0, by - 1); cy <= Math.min(ny - 1, by + 1); cy++)
        for (let cz = Math.max(0, bz - 1); cz <= Math.min(nz - 1, bz + 1); cz++) {
          const bin = (cx * ny + cy) * nz + cz;
          const end = grid.start[bin + 1] as number;
          for (let p = grid.start[bin] as number; p < end; p++) {
            const j = b[grid.members[p] as number] as number;
            if (j === i) continue;
            const x = (coords[3 * j] as number) - px;
            const y = (coords[3 * j + 1] as number) - py;
            const z = (coords[3 * j + 2] as number) - pz;
            const r2 = x * x + y * y + z * z;
            if (r2 < c2) visit(i, j, x, y, z, r2);
          }
        }
  }
};

/** The minimum-image vector from p to q in a cell (any size of displacement; 27 images searched after wrapping). */
export const minimumImage = (g: CellGeometry, dx: number, dy: number, dz: number, out: Float64Array): number => {
  const inv = g.inverse;
  const m = g.matrix;
  const f = [0, 0, 0];
  for (let d = 0; d < 3; d++) {
    const v = dx * (inv[d] as number) + dy * (inv[3 + d] as number) + dz * (inv[6 + d] as number);
    f[d] = v - Math.round(v);
  }
  let best = Infinity;
  for (let i = -1; i <= 1; i++)
    for (let j = -1; j <= 1; j++)
      for (let k = -1; k <= 1; k++) {
        const u = (f[0] as number) + i;
        const v = (f[1] as number) + j;
        const w = (f[2] as number) + k;
        const x = u * (m[0] as number) + v * (m[3] as number) + w * (m[6] as number);
        const y = u * (m[1] as number) + v * (m[4] as number) + w * (m[7] as number);
        const z = u * (m[2] as number) + v * (m[5] as number) + w * (m[8] as number);
        const r2 = x * x + y * y + z * z;
        if (r2 < best) {
          best = r2;
          out[0] = x;
          out[1] = y;
          out[2] = z;
        }
      }
  return Math.sqrt(best);
};
