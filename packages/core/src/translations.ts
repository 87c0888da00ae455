/**
 * The pure translations of a periodic structure and the primitive cell they define.
 *
 * Symmetry finders (spglib, moyo) start by reducing a cell to its primitive cell, and moyo's
 * search costs grow steeply with supercells (a 500-atom fcc supercell took 110 s here, 1 s for
 * the 108-atom one). This does the same reduction in O(N·k): candidates are the offsets from one
 * atom of the rarest type to the others of that type, atoms are found through a spatial hash, and
 * the translation group is closed as generators are found, so candidates already in the group
 * need no check. The result has the same space group as the input (translations are exactly what
 * the finder would divide out first).
 */
import { dot, type Mat3, type Vec3 } from "./lattice.ts";

/** Row vector times matrix: fractional to Cartesian with a lattice, or between bases. */
const mul = (v: readonly number[], m: Mat3): Vec3 => {
  const x = v[0] as number,
    y = v[1] as number,
    z = v[2] as number;
  return [
    x * m[0][0] + y * m[1][0] + z * m[2][0],
    x * m[0][1] + y * m[1][1] + z * m[2][1],
    x * m[0][2] + y * m[1][2] + z * m[2][2],
  ];
};

/** Fractional points (mod 1) with a type, found within a Cartesian tolerance through a grid. */
class PointSet {
  readonly #m: Mat3;
  readonly #tol2: number;
  readonly #bins: [number, number, number];
  readonly #grid = new Map<number, number[]>();
  readonly pts: number[] = [];
  readonly types: number[] = [];

  constructor(m: Mat3, inv: Mat3, tol: number, expected: number) {
    this.#m = m;
    this.#tol2 = tol * tol;
    const target = Math.max(1, Math.ceil(Math.cbrt(expected)));
    // A bin must be at least the tolerance wide along each axis, so neighbours are enough.
    const along = (a: 0 | 1 | 2): number => {
      const reach = tol * Math.hypot(inv[0][a], inv[1][a], inv[2][a]);
      return Math.max(1, Math.min(target, Math.floor(1 / Math.max(reach, 1e-12))));
    };
    this.#bins = [along(0), along(1), along(2)];
  }

  #key(i: number, j: number, k: number): number {
    const [a, b, c] = this.#bins;
    return ((((i % a) + a) % a) * b + (((j % b) + b) % b)) * c + (((k % c) + c) % c);
  }

  #cell(x: number, y: number, z: number): [number, number, number] {
    const [a, b, c] = this.#bins;
    return [Math.floor((x - Math.floor(x)) * a), Math.floor((y - Math.floor(y)) * b), Math.floor((z - Math.floor(z)) * c)];
  }

  add(x: number, y: number, z: number, type = 0): void {
    const idx = this.types.length;
    this.pts.push(x, y, z);
    this.types.push(type);
    const [i, j, k] = this.#cell(x, y, z);
    const key = this.#key(i, j, k);
    const list = this.#grid.get(key);
    if (list) list.push(idx);
    else this.#grid.set(key, [idx]);
  }

  /** Index of a point of `type` within the tolerance of (x, y, z) modulo whole cells, or -1. */
  find(x: number, y: number, z: number, type = 0): number {
    const [ci, cj, ck] = this.#cell(x, y, z);
    const m = this.#m;
    const seen = new Set<number>();
    for (let di = -1; di <= 1; di++)
      for (let dj = -1; dj <= 1; dj++)
        for (let dk = -1; dk <= 1; dk++) {
          const key = this.#key(ci + di, cj + dj, ck + dk);
          if (seen.has(key)) continue; // fewer than 3 bins along an axis: neighbours repeat
          seen.add(key);
          const list = this.#grid.get(key);
          if (!list) continue;
          for (const p of list) {
            if (this.types[p] !== type) continue;
            let dx = (this.pts[3 * p] as number) - x;
            let dy = (this.pts[3 * p + 1] as number) - y;
            let dz = (this.pts[3 * p + 2] as number) - z;
            dx -= Math.round(dx);
            dy -= Math.round(dy);
            dz -= Math.round(dz);
            const cx = dx * m[0][0] + dy * m[1][0] + dz * m[2][0];
            const cy = dx * m[0][1] + dy * m[1][1] + dz * m[2][1];
            const cz = dx * m[0][2] + dy * m[1][2] + dz * m[2][2];
            if (cx * cx + cy * cy + cz * cz <= this.#tol2) return p;
          }
        }
    return -1;
  }

  get size(): number {
    return this.types.length;
  }
}

const det3 = (r: readonly (readonly number[])[]): number => {
  const [a, b, c] = r as [number[], number[], number[]];
  return (
    (a[0] as number) * ((b[1] as number) * (c[2] as number) - (b[2] as number) * (c[1] as number)) -
    (a[1] as number) * ((b[0] as number) * (c[2] as number) - (b[2] as number) * (c[0] as number)) +
    (a[2] as number) * ((b[0] as number) * (c[1] as number) - (b[1] as number) * (c[0] as number))
  );
};

const inverse3 = (r: Mat3): Mat3 => {
  const d = det3(r);
  const [a, b, c] = r;
  return [
    [(b[1] * c[2] - b[2] * c[1]) / d, (a[2] * c[1] - a[1] * c[2]) / d, (a[1] * b[2] - a[2] * b[1]) / d],
    [(b[2] * c[0] - b[0] * c[2]) / d, (a[0] * c[2] - a[2] * c[0]) / d, (a[2] * b[0] - a[0] * b[2]) / d],
    [(b[0] * c[1] - b[1] * c[0]) / d, (a[1] * c[0] - a[0] * c[1]) / d, (a[0] * b[1] - a[1] * b[0]) / d],
  ];
};

export interface PrimitiveByTranslations {
  /** Rows are the primitive lattice vectors (Cartesian). */
  matrix: Mat3;
  /** Fractional coordinates in the primitive cell, 3 per site. */
  frac: Float64Array;
  types: number[];
  /** Number of pure translations (including the identity): N / N_primitive. */
  nTranslations: number;
}

/**
 * The primitive cell under pure translations, or null when the cell is already primitive (or the
 * translations found are not consistent at this tolerance; the caller then analyses the input).
 */
export const primitiveByTranslations = (
  m: Mat3,
  frac: Float64Array,
  types: readonly number[],
  tol: number,
): PrimitiveByTranslations | null => {
  const n = types.length;
  if (n < 2) return null;
  const inv = inverse3(m);
  const atoms = new PointSet(m, inv, tol, n);
  for (let i = 0; i < n; i++) atoms.add(frac[3 * i] as number, frac[3 * i + 1] as number, frac[3 * i + 2] as number, types[i]);

  const count = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const t = types[i] as number;
    const l = count.get(t);
    if (l) l.push(i);
    else count.set(t, [i]);
  }
  const anchorAtoms = [...count.values()].reduce((a, b) => (b.length < a.length ? b : a));
  if (anchorAtoms.length < 2) return null;
  const a0 = anchorAtoms[0] as number;

  /**
   * The translation refined to the mean displacement over every atom it maps, or null when some
   * atom has no image. Refining keeps k·t inside the tolerance when the group is closed: with
   * thermal noise each single-atom offset is off by up to twice the displacement.
   */
  const maps = (tx: number, ty: number, tz: number): Vec3 | null => {
    let sx = 0,
      sy = 0,
      sz = 0;
    for (let i = 0; i < n; i++) {
      const x = (frac[3 * i] as number) + tx,
        y = (frac[3 * i + 1] as number) + ty,
        z = (frac[3 * i + 2] as number) + tz;
      const j = atoms.find(x, y, z, types[i]);
      if (j < 0) return null;
      const dx = (atoms.pts[3 * j] as number) - x,
        dy = (atoms.pts[3 * j + 1] as number) - y,
        dz = (atoms.pts[3 * j + 2] as number) - z;
      sx += dx - Math.round(dx);
      sy += dy - Math.round(dy);
      sz += dz - Math.round(dz);
    }
    return [tx + sx / n, ty + sy / n, tz + sz / n];
  };

  // The translation group modulo whole cells, closed under addition as generators are found.
  const group = new PointSet(m, inv, tol, anchorAtoms.length);
  group.add(0, 0, 0);
  const limit = anchorAtoms.length;
  for (const j of anchorAtoms) {
    if (j === a0) continue;
    const cx = (frac[3 * j] as number) - (frac[3 * a0] as number);
    const cy = (frac[3 * j + 1] as number) - (frac[3 * a0 + 1] as number);
    const cz = (frac[3 * j + 2] as number) - (frac[3 * a0 + 2] as number);
    if (group.find(cx, cy, cz) >= 0) continue;
    const t = maps(cx, cy, cz);
    if (!t) continue;
    const [tx, ty, tz] = t;
    // Add G + k·t for k = 1, 2, … until k·t falls back into G.
    const base = group.pts.slice();
    let [kx, ky, kz] = [tx, ty, tz];
    while (group.find(kx, ky, kz) < 0) {
      for (let g = 0; g < base.length; g += 3) {
        const x = (base[g] as number) + kx;
        const y = (base[g + 1] as number) + ky;
        const z = (base[g + 2] as number) + kz;
        group.add(x - Math.floor(x), y - Math.floor(y), z - Math.floor(z));
      }
      if (group.size > limit) return null; // inconsistent at this tolerance
      [kx, ky, kz] = [kx + tx, ky + ty, kz + tz];
    }
  }
  const order = group.size;
  if (order < 2 || n % order !== 0) return null;

  // A basis of the translation lattice: three of its shortest vectors with covolume 1/order.
  const vecs: Array<{ f: [number, number, number]; len: number }> = [];
  const addVec = (x: number, y: number, z: number) => {
    const f: [number, number, number] = [x - Math.round(x), y - Math.round(y), z - Math.round(z)];
    if (f[0] === 0 && f[1] === 0 && f[2] === 0) f.splice(0, 3, x, y, z);
    const c = mul(f, m);
    vecs.push({ f, len: Math.sqrt(dot(c, c)) });
  };
  for (let g = 3; g < group.pts.length; g += 3)
    addVec(group.pts[g] as number, group.pts[g + 1] as number, group.pts[g + 2] as number);
  addVec(1, 0, 0);
  addVec(0, 1, 0);
  addVec(0, 0, 1);
  vecs.sort((p, q) => p.len - q.len);
  const short = vecs.slice(0, 40);
  const target = 1 / order;
  let basis: Mat3 | null = null;
  search: for (let i = 0; i < short.length; i++)
    for (let j = i + 1; j < short.length; j++)
      for (let k = j + 1; k < short.length; k++) {
        const rows = [short[i]?.f, short[j]?.f, short[k]?.f] as Mat3;
        const d = det3(rows);
        if (Math.abs(Math.abs(d) - target) < 1e-6 * target) {
          basis = d > 0 ? rows : [rows[0], rows[1], [-rows[2][0], -rows[2][1], -rows[2][2]]];
          break search;
        }
      }
  if (!basis) return null;

  const matrix: Mat3 = [mul(basis[0], m), mul(basis[1], m), mul(basis[2], m)];
  const binv = inverse3(basis);
  const primInv = inverse3(matrix);
  const kept = new PointSet(matrix, primInv, tol, n / order);
  const outFrac: number[] = [];
  const outTypes: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = mul([frac[3 * i] as number, frac[3 * i + 1] as number, frac[3 * i + 2] as number], binv);
    const w: Vec3 = [p[0] - Math.floor(p[0]), p[1] - Math.floor(p[1]), p[2] - Math.floor(p[2])];
    const t = types[i] as number;
    if (kept.find(w[0], w[1], w[2], t) >= 0) continue;
    kept.add(w[0], w[1], w[2], t);
    outFrac.push(...w);
    outTypes.push(t);
  }
  if (outTypes.length * order !== n) return null;
  return { matrix, frac: Float64Array.from(outFrac), types: outTypes, nTranslations: order };
};
