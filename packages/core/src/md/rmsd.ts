/**
 * RMSD of a trajectory against a reference frame. Periodic jumps are undone first (each atom
 * follows its minimum-image step from frame to frame, in fractional coordinates so a changing
 * cell is followed too), as MDAnalysis's `NoJump` does. With `fit`, both frames are centred and
 * optimally rotated (Horn's quaternion form of the Kabsch fit: the RMSD comes from the largest
 * eigenvalue of a 4×4 matrix), equal to `mdtraj.rmsd` and MDAnalysis `rms.RMSD(superposition=True)`;
 * without it, the plain root-mean-square displacement.
 */
import { fail } from "../errors.ts";
import { cellGeometry } from "../geometry/neighbors.ts";
import type { Trajectory } from "../trajectory/trajectory.ts";

/**
 * Coordinates of `atoms` at `frames` (ascending or not) with periodic jumps undone, walking every
 * frame between the first and last asked for (a stride would miss jumps). F×n×3.
 */
export const unwrappedCoordinates = (
  traj: Trajectory,
  atoms: Int32Array,
  frames: readonly number[],
  unwrap = true,
): Float64Array => {
  const n = atoms.length;
  const out = new Float64Array(frames.length * 3 * n);
  const want = new Map<number, number[]>();
  frames.forEach((f, k) => {
    want.set(f, [...(want.get(f) ?? []), k]);
  });
  const put = (f: number, src: Float64Array): void => {
    for (const k of want.get(f) ?? []) out.set(src, k * 3 * n);
  };
  if (!unwrap || !traj.cells || !traj.pbc.every(Boolean)) {
    const buf = new Float64Array(3 * n);
    for (const f of new Set(frames)) {
      const c = traj.frameCoords(f);
      for (let k = 0; k < n; k++) {
        const i = 3 * (atoms[k] as number);
        buf[3 * k] = c[i] as number;
        buf[3 * k + 1] = c[i + 1] as number;
        buf[3 * k + 2] = c[i + 2] as number;
      }
      put(f, buf);
    }
    return out;
  }
  const first = Math.min(...frames);
  const last = Math.max(...frames);
  const prev = new Float64Array(3 * n); // wrapped fractional coordinates of the previous frame
  const acc = new Float64Array(3 * n); // unwrapped fractional coordinates
  const cart = new Float64Array(3 * n);
  for (let f = first; f <= last; f++) {
    const g = cellGeometry(traj.cell(f) as Float64Array);
    const inv = g.inverse;
    const m = g.matrix;
    const c = traj.frameCoords(f);
    for (let k = 0; k < n; k++) {
      const i = 3 * (atoms[k] as number);
      const x = c[i] as number;
      const y = c[i + 1] as number;
      const z = c[i + 2] as number;
      for (let d = 0; d < 3; d++) {
        const fr = x * (inv[d] as number) + y * (inv[3 + d] as number) + z * (inv[6 + d] as number);
        if (f === first) acc[3 * k + d] = fr;
        else {
          const step = fr - (prev[3 * k + d] as number);
          acc[3 * k + d] = (acc[3 * k + d] as number) + step - Math.round(step);
        }
        prev[3 * k + d] = fr;
      }
      const u = acc[3 * k] as number;
      const v = acc[3 * k + 1] as number;
      const w = acc[3 * k + 2] as number;
      cart[3 * k] = u * (m[0] as number) + v * (m[3] as number) + w * (m[6] as number);
      cart[3 * k + 1] = u * (m[1] as number) + v * (m[4] as number) + w * (m[7] as number);
      cart[3 * k + 2] = u * (m[2] as number) + v * (m[5] as number) + w * (m[8] as number);
    }
    if (want.has(f)) put(f, cart);
  }
  return out;
};

/** Subtract each frame's geometric centre in place (F×n×3). */
export const centreFrames = (xyz: Float64Array, n: number): void => {
  const frames = xyz.length / (3 * n);
  for (let f = 0; f < frames; f++) {
    const o = 3 * n * f;
    let cx = 0;
    let cy = 0;
    let cz = 0;
    for (let k = 0; k < n; k++) {
      cx += xyz[o + 3 * k] as number;
      cy += xyz[o + 3 * k + 1] as number;
      cz += xyz[o + 3 * k + 2] as number;
    }
    cx /= n;
    cy /= n;
    cz /= n;
    for (let k = 0; k < n; k++) {
      xyz[o + 3 * k] = (xyz[o + 3 * k] as number) - cx;
      xyz[o + 3 * k + 1] = (xyz[o + 3 * k + 1] as number) - cy;
      xyz[o + 3 * k + 2] = (xyz[o + 3 * k + 2] as number) - cz;
    }
  }
};

/** Largest eigenvalue of a symmetric 4×4 matrix (cyclic Jacobi rotations). */
const largestEigenvalue4 = (a: Float64Array): number => {
  for (let sweep = 0; sweep < 50; sweep++) {
    let off = 0;
    for (let p = 0; p < 4; p++) for (let q = p + 1; q < 4; q++) off += (a[4 * p + q] as number) ** 2;
    if (off < 1e-30) break;
    for (let p = 0; p < 4; p++)
      for (let q = p + 1; q < 4; q++) {
        const apq = a[4 * p + q] as number;
        if (Math.abs(apq) < 1e-300) continue;
        const app = a[5 * p] as number;
        const aqq = a[5 * q] as number;
        const theta = (aqq - app) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < 4; k++) {
          const akp = a[4 * k + p] as number;
          const akq = a[4 * k + q] as number;
          a[4 * k + p] = c * akp - s * akq;
          a[4 * k + q] = s * akp + c * akq;
        }
        for (let k = 0; k < 4; k++) {
          const apk = a[4 * p + k] as number;
          const aqk = a[4 * q + k] as number;
          a[4 * p + k] = c * apk - s * aqk;
          a[4 * q + k] = s * apk + c * aqk;
        }
      }
  }
  return Math.max(a[0] as number, a[5] as number, a[10] as number, a[15] as number);
};

const K = new Float64Array(16);

/** RMSD between two centred n-atom frames x[xo…] and y[yo…] after the optimal rotation. */
export const fittedRmsd = (x: Float64Array, xo: number, y: Float64Array, yo: number, n: number): number => {
  let sxx = 0;
  let sxy = 0;
  let sxz = 0;
  let syx = 0;
  let syy = 0;
  let syz = 0;
  let szx = 0;
  let szy = 0;
  let szz = 0;
  let g = 0;
  for (let k = 0; k < n; k++) {
    const x0 = x[xo + 3 * k] as number;
    const x1 = x[xo + 3 * k + 1] as number;
    const x2 = x[xo + 3 * k + 2] as number;
    const y0 = y[yo + 3 * k] as number;
    const y1 = y[yo + 3 * k + 1] as number;
    const y2 = y[yo + 3 * k + 2] as number;
    g += x0 * x0 + x1 * x1 + x2 * x2 + y0 * y0 + y1 * y1 + y2 * y2;
    sxx += x0 * y0;
    sxy += x0 * y1;
    sxz += x0 * y2;
    syx += x1 * y0;
    syy += x1 * y1;
    syz += x1 * y2;
    szx += x2 * y0;
    szy += x2 * y1;
    szz += x2 * y2;
  }
  K.set([
    sxx + syy + szz,
    syz - szy,
    szx - sxz,
    sxy - syx,
    syz - szy,
    sxx - syy - szz,
    sxy + syx,
    szx + sxz,
    szx - sxz,
    sxy + syx,
    -sxx + syy - szz,
    syz + szy,
    sxy - syx,
    szx + sxz,
    syz + szy,
    -sxx - syy + szz,
  ]);
  const lambda = largestEigenvalue4(K);
  return Math.sqrt(Math.max(0, (g - 2 * lambda) / n));
};

/** Plain RMSD between two n-atom frames. */
export const plainRmsd = (x: Float64Array, xo: number, y: Float64Array, yo: number, n: number): number => {
  let s = 0;
  for (let k = 0; k < 3 * n; k++) {
    const d = (x[xo + k] as number) - (y[yo + k] as number);
    s += d * d;
  }
  return Math.sqrt(s / n);
};

export interface RmsdOptions {
  atoms: Int32Array;
  frames: readonly number[];
  /** Frame index (in the whole trajectory) to compare against. */
  reference: number;
  fit: boolean;
  unwrap?: boolean;
}

export const rmsdSeries = (traj: Trajectory, opts: RmsdOptions): Float64Array => {
  if (!Number.isInteger(opts.reference) || opts.reference < 0 || opts.reference >= traj.nFrames)
    fail("INVALID_REFERENCE", `Reference frame ${opts.reference} is out of range (0–${traj.nFrames - 1})`, {
      reference: opts.reference,
      n_frames: traj.nFrames,
    });
  const n = opts.atoms.length;
  const xyz = unwrappedCoordinates(traj, opts.atoms, [opts.reference, ...opts.frames], opts.unwrap ?? true);
  if (opts.fit) centreFrames(xyz, n);
  const out = new Float64Array(opts.frames.length);
  for (let k = 0; k < opts.frames.length; k++)
    out[k] = opts.fit ? fittedRmsd(xyz, 3 * n * (k + 1), xyz, 0, n) : plainRmsd(xyz, 3 * n * (k + 1), xyz, 0, n);
  return out;
};
