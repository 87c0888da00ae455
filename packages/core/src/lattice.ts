import { fail } from "./errors.ts";

export type Vec3 = [number, number, number];
export type Mat3 = [Vec3, Vec3, Vec3];

const RAD = Math.PI / 180;

/**
 * A periodic lattice; rows of `matrix` are the lattice vectors a, b, c (pymatgen convention).
 * Immutable: derived quantities are computed once.
 */
export class Lattice {
  readonly matrix: Mat3;
  readonly pbc: [boolean, boolean, boolean];
  /** Inverse of `matrix`; fractional = cartesian · inverse. */
  readonly inverse: Mat3;
  readonly volume: number;

  constructor(matrix: Mat3, pbc: [boolean, boolean, boolean] = [true, true, true]) {
    for (const row of matrix)
      for (const v of row) if (!Number.isFinite(v)) fail("INVALID_STRUCTURE", "Lattice matrix has a non-finite entry");
    this.matrix = matrix.map((r) => [r[0], r[1], r[2]]) as Mat3;
    this.pbc = [pbc[0], pbc[1], pbc[2]];
    const [a, b, c] = this.matrix;
    // Vectors whose length underflows to 0 or overflows make every derived quantity NaN
    // (found by fuzzing: a 1e-207 Angstrom vector passed the relative volume check).
    for (const row of this.matrix) {
      const len = norm(row);
      if (!(len > 1e-8 && Number.isFinite(len)))
        fail("INVALID_STRUCTURE", "Lattice vector of zero length or beyond the floating-point range", { length: len });
    }
    const det = a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]);
    const scale = Math.max(1e-300, norm(a) * norm(b) * norm(c));
    if (!(Math.abs(det) / scale > 1e-10)) fail("INVALID_STRUCTURE", "Lattice matrix is singular (zero volume)", { volume: det });
    this.volume = Math.abs(det);
    const inv = 1 / det;
    this.inverse = [
      [(b[1] * c[2] - b[2] * c[1]) * inv, (a[2] * c[1] - a[1] * c[2]) * inv, (a[1] * b[2] - a[2] * b[1]) * inv],
      [(b[2] * c[0] - b[0] * c[2]) * inv, (a[0] * c[2] - a[2] * c[0]) * inv, (a[2] * b[0] - a[0] * b[2]) * inv],
      [(b[0] * c[1] - b[1] * c[0]) * inv, (a[1] * c[0] - a[0] * c[1]) * inv, (a[0] * b[1] - a[1] * b[0]) * inv],
    ];
  }

  /** pymatgen's `Lattice.from_parameters` orientation (c along z, a in the xz plane). */
  static fromParameters(a: number, b: number, c: number, alpha: number, beta: number, gamma: number): Lattice {
    const [ca, cb, cg] = [Math.cos(alpha * RAD), Math.cos(beta * RAD), Math.cos(gamma * RAD)];
    const [sa, sb] = [Math.sin(alpha * RAD), Math.sin(beta * RAD)];
    const val = Math.min(1, Math.max(-1, (ca * cb - cg) / (sa * sb)));
    const gammaStar = Math.acos(val);
    return new Lattice([
      [a * sb, 0, a * cb],
      [-b * sa * Math.cos(gammaStar), b * sa * Math.sin(gammaStar), b * ca],
      [0, 0, c],
    ]);
  }

  get lengths(): Vec3 {
    return [norm(this.matrix[0]), norm(this.matrix[1]), norm(this.matrix[2])];
  }

  /** alpha, beta, gamma in degrees, computed as pymatgen does (clipped arccos). */
  get angles(): Vec3 {
    const m = this.matrix;
    const l = this.lengths;
    const out: number[] = [];
    for (let d = 0; d < 3; d++) {
      const j = (d + 1) % 3;
      const k = (d + 2) % 3;
      const cos = Math.min(1, Math.max(-1, dot(m[j] as Vec3, m[k] as Vec3) / ((l[j] as number) * (l[k] as number))));
      out.push(Math.acos(cos) / RAD);
    }
    return out as Vec3;
  }

  /** Cartesian coordinates (row vector) of fractional `f`. */
  toCartesian(f: ArrayLike<number>, out: Vec3 = [0, 0, 0]): Vec3 {
    const m = this.matrix;
    const x = f[0] as number,
      y = f[1] as number,
      z = f[2] as number;
    out[0] = x * m[0][0] + y * m[1][0] + z * m[2][0];
    out[1] = x * m[0][1] + y * m[1][1] + z * m[2][1];
    out[2] = x * m[0][2] + y * m[1][2] + z * m[2][2];
    return out;
  }

  toFractional(c: ArrayLike<number>, out: Vec3 = [0, 0, 0]): Vec3 {
    const m = this.inverse;
    const x = c[0] as number,
      y = c[1] as number,
      z = c[2] as number;
    out[0] = x * m[0][0] + y * m[1][0] + z * m[2][0];
    out[1] = x * m[0][1] + y * m[1][1] + z * m[2][1];
    out[2] = x * m[0][2] + y * m[1][2] + z * m[2][2];
    return out;
  }

  /** A new lattice whose vectors are `scale` (integer matrix) times these: rows of S·M. */
  scaled(scale: Mat3): Lattice {
    const m = this.matrix;
    const row = (s: Vec3): Vec3 => [
      s[0] * m[0][0] + s[1] * m[1][0] + s[2] * m[2][0],
      s[0] * m[0][1] + s[1] * m[1][1] + s[2] * m[2][1],
      s[0] * m[0][2] + s[1] * m[1][2] + s[2] * m[2][2],
    ];
    const rows: Mat3 = [row(scale[0]), row(scale[1]), row(scale[2])];
    return new Lattice(rows, this.pbc);
  }
}

export const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number =>
  (a[0] as number) * (b[0] as number) + (a[1] as number) * (b[1] as number) + (a[2] as number) * (b[2] as number);
export const norm = (a: ArrayLike<number>): number => Math.sqrt(dot(a, a));
export const cross = (a: ArrayLike<number>, b: ArrayLike<number>): Vec3 => {
  const [a0, a1, a2] = [a[0] as number, a[1] as number, a[2] as number];
  const [b0, b1, b2] = [b[0] as number, b[1] as number, b[2] as number];
  return [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0];
};
