/**
 * Adsorbate placement: pymatgen's `AdsorbateSiteFinder.add_adsorbate` for any outward normal,
 * with an overlap check that counts periodic images and the least lift that clears it.
 *
 * The molecule is given in its own frame with the binding atoms at the bottom (pymatgen's
 * convention: the atoms of lowest z bind). Their centroid goes to `site + heightOffset·normal`; the
 * molecule's z turns along the normal and its x along the slab's a (made perpendicular to the
 * normal), which for a slab's top normal is pymatgen's `get_rot(slab).inverse`. `autoRotate` first
 * turns the molecule so its centre of mass lies straight above the binding centroid, whatever
 * orientation it came in; then, with two binding atoms, turns it about the horizontal axis through
 * the binding centroid across their line until both are at one height, and with three or more,
 * turns the normal of their best-fit plane onto the surface normal (`levelBindingAtoms`; of the two
 * solutions of each, the one with the centre of mass higher).
 *
 * Multidentate alignment (`neighbors`): with at least two binding atoms, at least two neighbour
 * positions and `autoRotate`, the oriented molecule is then turned about the normal (through the
 * binding centroid) to the angle, among every 5° and then ±18° in 1° steps around the best of those,
 * that minimises the summed in-plane distance from each binding atom to its nearest neighbour.
 */

import { elementInfo } from "../elements.ts";
import { AtomStudioError } from "../errors.ts";
import { cross, dot, norm, type Vec3 } from "../lattice.ts";
import { Structure } from "../structure.ts";

export interface PlaceOptions {
  /** Binding atoms of the molecule, 0-based, at least one. */
  binding: readonly number[];
  /** Cartesian Å: where the binding centroid goes (before heightOffset). */
  site: Vec3;
  /** Outward normal; need not be unit length, must not be zero. */
  normal: Vec3;
  heightOffset?: number;
  autoRotate?: boolean;
  /** Least adsorbate–slab distance, Å (0: no check). */
  clearance?: number;
  /** Closer than clearance: lift along the normal (default) or throw ADSORBATE_OVERLAP. */
  onOverlap?: "lift" | "error";
  /** Most lift, Å, before ADSORBATE_OVERLAP. */
  maxLift?: number;
  /**
   * Cartesian Å: surface atoms around the site, for the multidentate alignment (used only with two
   * or more binding atoms, two or more neighbours and autoRotate). On a periodic slab a binding
   * atom's nearest neighbour counts the periodic images of every position.
   */
  neighbors?: readonly Vec3[];
}

/** The multidentate alignment that was applied: the turn about the normal and what it minimised. */
export interface NeighborAlignment {
  /** Degrees, right-handed about the normal, in [0, 360): the turn after the orientation. */
  rotationDeg: number;
  /** Å: summed in-plane distance from each binding atom to its nearest neighbour position, after the turn. */
  inPlaneDistance: number;
  /** For each binding atom (in the order given), the index of its nearest neighbour position (or of the position whose image that is). */
  nearest: number[];
}

export interface Placement {
  structure: Structure;
  /** Å the molecule was lifted along the normal to reach the clearance (0: none). */
  lift: number;
  /** Least adsorbate–slab distance, periodic images included, Å (Infinity for an empty slab). */
  minDistance: number;
  bindingPosition: Vec3;
  /** The multidentate alignment, or null when it did not apply (see PlaceOptions.neighbors). */
  alignment: NeighborAlignment | null;
}

const overlap = (message: string, details: Record<string, unknown>): never => {
  throw new AtomStudioError("ADSORBATE_OVERLAP", message, details, 400);
};

/** The smallest rotation taking unit vector u onto unit vector v, as a row-major 3×3. */
const rotationTo = (u: Vec3, v: Vec3): number[] => {
  const c = dot(u, v);
  if (c > 1 - 1e-12) return [1, 0, 0, 0, 1, 0, 0, 0, 1];
  if (c < -1 + 1e-12) {
    let axis = cross(u, [1, 0, 0]);
    if (norm(axis) < 1e-6) axis = cross(u, [0, 1, 0]);
    const n = norm(axis);
    const a = axis.map((x) => x / n);
    return [0, 1, 2].flatMap((i) => [0, 1, 2].map((j) => 2 * (a[i] as number) * (a[j] as number) - (i === j ? 1 : 0)));
  }
  const w = cross(u, v);
  const k = [0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0];
  const kk = [0, 1, 2].flatMap((i) =>
    [0, 1, 2].map((j) => [0, 1, 2].reduce((s, m) => s + (k[3 * i + m] as number) * (k[3 * m + j] as number), 0)),
  );
  return [0, 1, 2].flatMap((i) =>
    [0, 1, 2].map((j) => (i === j ? 1 : 0) + (k[3 * i + j] as number) + (kk[3 * i + j] as number) / (1 + c)),
  );
};

/** a + s·b */
const axpy = (a: Vec3, s: number, b: Vec3): Vec3 => [a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2]];
const sub = (a: Vec3, b: Vec3): Vec3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];

/** The image of q (over the lattice, when there is one) nearest to p. */
const nearestImage = (lattice: Structure["lattice"], p: Vec3, q: Vec3): Vec3 => {
  if (!lattice) return q;
  const fq = lattice.toFractional(q);
  const fp = lattice.toFractional(p);
  const base = [0, 1, 2].map((k) => (fq[k] as number) - Math.round((fq[k] as number) - (fp[k] as number))) as Vec3;
  let best = q;
  let bestD = Number.POSITIVE_INFINITY;
  // the rounded shift and its 26 neighbours: rounding in a skewed cell can miss the nearest by one
  for (let sa = -1; sa <= 1; sa++)
    for (let sb = -1; sb <= 1; sb++)
      for (let sg = -1; sg <= 1; sg++) {
        const c = lattice.toCartesian([base[0] + sa, base[1] + sb, base[2] + sg]);
        const d = (c[0] - p[0]) ** 2 + (c[1] - p[1]) ** 2 + (c[2] - p[2]) ** 2;
        if (d < bestD) {
          bestD = d;
          best = c;
        }
      }
  return best;
};

type XY = readonly [number, number];
/** A neighbour position (or a periodic image of it) in the plane, and which position it is. */
type Target = { xy: XY; index: number };

/** p and its 26 neighbouring lattice images (p alone without a lattice). */
const imagesAround = (lattice: Structure["lattice"], p: Vec3): Vec3[] => {
  if (!lattice) return [p];
  const [a, b, c] = lattice.matrix;
  const out: Vec3[] = [];
  for (let i = -1; i <= 1; i++)
    for (let j = -1; j <= 1; j++)
      for (let k = -1; k <= 1; k++) out.push([0, 1, 2].map((d) => p[d]! + i * a[d]! + j * b[d]! + k * c[d]!) as Vec3);
  return out;
};

/** Summed distance from each point turned by `radians` to its nearest target, and which target that is. */
const turnCost = (points: readonly XY[], targets: readonly Target[], radians: number): { cost: number; nearest: number[] } => {
  const c = Math.cos(radians);
  const s = Math.sin(radians);
  let cost = 0;
  const nearest: number[] = [];
  for (const [px, py] of points) {
    const rx = c * px - s * py;
    const ry = s * px + c * py;
    let d = Number.POSITIVE_INFINITY;
    let which = -1;
    for (const { xy, index } of targets) {
      const ex = rx - xy[0];
      const ey = ry - xy[1];
      const e = ex * ex + ey * ey;
      if (e < d) {
        d = e;
        which = index;
      }
    }
    cost += Math.sqrt(d);
    nearest.push(which);
  }
  return { cost, nearest };
};

/**
 * The turn about the normal that minimises turnCost: every 5°, then ±18° in 1° steps around the
 * best of those (the first angle wins a tie, so the answer is deterministic).
 */
const bestTurn = (points: readonly XY[], targets: readonly Target[]) => {
  let best = { degrees: 0, ...turnCost(points, targets, 0) };
  for (let deg = 5; deg < 360; deg += 5) {
    const t = turnCost(points, targets, (deg * Math.PI) / 180);
    if (t.cost < best.cost - 1e-12) best = { degrees: deg, ...t };
  }
  const coarse = best.degrees;
  for (let off = -18; off <= 18; off++) {
    if (off === 0) continue;
    const deg = (((coarse + off) % 360) + 360) % 360;
    const t = turnCost(points, targets, (deg * Math.PI) / 180);
    if (t.cost < best.cost - 1e-12) best = { degrees: deg, ...t };
  }
  return { ...best, radians: (best.degrees * Math.PI) / 180 };
};

/** Every vector turned by the row-major 3×3 R. */
const turnAll = (R: readonly number[], vs: readonly Vec3[]): Vec3[] =>
  vs.map((v) => [0, 1, 2].map((i) => R[3 * i]! * v[0] + R[3 * i + 1]! * v[1] + R[3 * i + 2]! * v[2]) as Vec3);

/** The right-handed rotation by `angle` radians about the unit axis u (Rodrigues), row-major 3×3. */
const rotationAbout = (u: Vec3, angle: number): number[] => {
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const k = [0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0];
  return [0, 1, 2].flatMap((i) => [0, 1, 2].map((j) => (i === j ? c : 0) + s * k[3 * i + j]! + (1 - c) * u[i]! * u[j]!));
};

/**
 * Eigenvalues (ascending) and unit eigenvectors of a symmetric 3×3 (row-major), by cyclic Jacobi
 * rotations: exact to rounding, which a best-fit plane levelled to 1e-9 Å needs.
 */
const symmetricEigen3 = (m: readonly number[]): Array<{ value: number; vector: Vec3 }> => {
  const a = [...m];
  const v = [1, 0, 0, 0, 1, 0, 0, 0, 1];
  const scale = a.reduce((s, x) => s + x * x, 0);
  for (let sweep = 0; sweep < 50; sweep++) {
    const off = a[1]! ** 2 + a[2]! ** 2 + a[5]! ** 2;
    if (off <= 1e-40 * scale) break;
    for (const [p, q] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ] as const) {
      const apq = a[3 * p + q]!;
      if (apq === 0) continue;
      const theta = (a[3 * q + q]! - a[3 * p + p]!) / (2 * apq);
      const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
      const c = 1 / Math.sqrt(t * t + 1);
      const s = t * c;
      // A ← Pᵀ A P and V ← V P, P the plane rotation that zeroes a[p][q]
      for (let k = 0; k < 3; k++) {
        const kp = a[3 * k + p]!;
        const kq = a[3 * k + q]!;
        a[3 * k + p] = c * kp - s * kq;
        a[3 * k + q] = s * kp + c * kq;
      }
      for (let k = 0; k < 3; k++) {
        const pk = a[3 * p + k]!;
        const qk = a[3 * q + k]!;
        a[3 * p + k] = c * pk - s * qk;
        a[3 * q + k] = s * pk + c * qk;
      }
      for (let k = 0; k < 3; k++) {
        const kp = v[3 * k + p]!;
        const kq = v[3 * k + q]!;
        v[3 * k + p] = c * kp - s * kq;
        v[3 * k + q] = s * kp + c * kq;
      }
    }
  }
  return [0, 1, 2]
    .map((j) => ({ value: a[4 * j]!, vector: [v[j]!, v[3 + j]!, v[6 + j]!] as Vec3 }))
    .sort((x, y) => x.value - y.value);
};

/** Heights (along the normal, the local z) within this many Å count as equal when choosing an orientation. */
const HEIGHT_TIE = 1e-9;

/**
 * Of rotations that each level the binding atoms, the one that keeps the molecule standing on
 * them: the centre of mass highest, then the unweighted centroid highest, then the smallest turn
 * (largest trace), so the choice is deterministic.
 */
const uprightOf = (candidates: readonly number[][], com: Vec3, centroid: Vec3): number[] => {
  const height = (R: readonly number[], p: Vec3) => R[6]! * p[0] + R[7]! * p[1] + R[8]! * p[2];
  const trace = (R: readonly number[]) => R[0]! + R[4]! + R[8]!;
  return candidates.reduce((best, R) => {
    const dc = height(R, com) - height(best, com);
    if (Math.abs(dc) > HEIGHT_TIE) return dc > 0 ? R : best;
    const du = height(R, centroid) - height(best, centroid);
    if (Math.abs(du) > HEIGHT_TIE) return du > 0 ? R : best;
    return trace(R) > trace(best) + 1e-12 ? R : best;
  });
};

/**
 * The second step of the orientation (after the centre of mass is turned above the binding
 * centroid, which is the origin of `local` and the local z the normal): with two distinct binding
 * atoms, turn about the axis through the origin perpendicular to the normal and to the line
 * joining them until both are at the same height; with three or more, turn so the normal of their
 * best-fit plane (least-squares, the smallest principal axis of their scatter) lies along the
 * normal. Each has two solutions (a half turn apart, which mirrors every height); the one that
 * keeps the molecule above its binding atoms is taken (`uprightOf`). Collinear binding atoms (three
 * or more on one line) have no plane, so their line is levelled as for two. The origin is on every
 * axis, so the binding centroid does not move.
 */
const levelBindingAtoms = (local: Vec3[], binding: readonly number[], masses: readonly number[]): Vec3[] => {
  if (binding.length < 2) return local;
  const total = masses.reduce((a, b) => a + b, 0);
  const com = [0, 1, 2].map((k) => local.reduce((s, v, i) => s + masses[i]! * v[k]!, 0) / total) as Vec3;
  const centroid = [0, 1, 2].map((k) => local.reduce((s, v) => s + v[k]!, 0) / local.length) as Vec3;
  const levelLine = (d: Vec3): Vec3[] => {
    const length = norm(d);
    if (length < 1e-9) return local;
    let h: Vec3 = [d[0], d[1], 0];
    if (norm(h) < 1e-9 * length) {
      // the line stands along the normal (the centre of mass is on it): tip it over across the plain
      // centroid's horizontal offset, so one of the two ways lifts that centroid (uprightOf takes
      // it), or along x when the centroid is on the normal too
      h = [centroid[0], centroid[1], 0];
      if (norm(h) < 1e-9) h = [1, 0, 0];
    }
    const hn = norm(h);
    const hUnit = h.map((x) => x / hn) as Vec3;
    const axis = cross([0, 0, 1], hUnit);
    // turning by θ about z × ĥ takes d's height to d_z·cosθ − (d·ĥ)·sinθ: zero at its elevation φ and φ + π
    const elevation = Math.atan2(d[2], dot(d, hUnit));
    const R = uprightOf([rotationAbout(axis, elevation), rotationAbout(axis, elevation + Math.PI)], com, centroid);
    return turnAll(R, local);
  };
  const points = binding.map((i) => local[i] as Vec3);
  if (points.length === 2) return levelLine(sub(points[1] as Vec3, points[0] as Vec3));
  const mean = [0, 1, 2].map((k) => points.reduce((s, p) => s + p[k]!, 0) / points.length) as Vec3;
  const scatter = [0, 1, 2].flatMap((i) =>
    [0, 1, 2].map((j) => points.reduce((s, p) => s + (p[i]! - mean[i]!) * (p[j]! - mean[j]!), 0)),
  );
  const [least, middle, most] = symmetricEigen3(scatter) as [
    { value: number; vector: Vec3 },
    { value: number; vector: Vec3 },
    { value: number; vector: Vec3 },
  ];
  if (most.value < 1e-18) return local; // all binding atoms in one point: nothing to level
  if (middle.value < 1e-10 * most.value) return levelLine(most.vector);
  const p = least.vector;
  const minus = p.map((x) => -x) as Vec3;
  return turnAll(uprightOf([rotationTo(p, [0, 0, 1]), rotationTo(minus, [0, 0, 1])], com, centroid), local);
};

const majorityMass = (s: Structure, i: number): number => {
  let best = s.species[i]?.[0];
  for (const e of s.species[i] ?? []) if (best && e.occu > best.occu) best = e;
  return elementInfo(best?.element ?? "")?.mass ?? 1;
};

/**
 * For each adsorbate atom and slab atom, the images to consider: Cartesian offsets (slab atom
 * image minus adsorbate atom) of the wrapped fractional difference and its 26 neighbours, the same
 * set pymatgen's `get_all_distances` minimises over. Calls `visit(d)` with d = slab image − atom.
 */
const forEachImage = (slab: Structure, p: Vec3, visit: (dx: number, dy: number, dz: number) => void): void => {
  const n = slab.length;
  const c = slab.cart;
  const lat = slab.lattice;
  if (!lat) {
    for (let j = 0; j < n; j++)
      visit((c[3 * j] as number) - p[0], (c[3 * j + 1] as number) - p[1], (c[3 * j + 2] as number) - p[2]);
    return;
  }
  const m = lat.matrix;
  const [m00, m01, m02] = m[0];
  const [m10, m11, m12] = m[1];
  const [m20, m21, m22] = m[2];
  const fp = lat.toFractional(p);
  const f = slab.frac;
  for (let j = 0; j < n; j++) {
    let a0 = (f[3 * j] as number) - fp[0];
    let b0 = (f[3 * j + 1] as number) - fp[1];
    let g0 = (f[3 * j + 2] as number) - fp[2];
    a0 -= Math.round(a0);
    b0 -= Math.round(b0);
    g0 -= Math.round(g0);
    for (let sa = -1; sa <= 1; sa++)
      for (let sb = -1; sb <= 1; sb++)
        for (let sg = -1; sg <= 1; sg++) {
          const a = a0 + sa;
          const b = b0 + sb;
          const g = g0 + sg;
          visit(a * m00 + b * m10 + g * m20, a * m01 + b * m11 + g * m21, a * m02 + b * m12 + g * m22);
        }
  }
};

const leastDistance = (slab: Structure, placed: Vec3[]): number => {
  let best = Number.POSITIVE_INFINITY;
  for (const p of placed)
    forEachImage(slab, p, (dx, dy, dz) => {
      const r = dx * dx + dy * dy + dz * dz;
      if (r < best) best = r;
    });
  return Math.sqrt(best);
};

/**
 * The least t ≥ 0 such that every adsorbate atom moved by t·normal is at least `clearance` from
 * every slab atom image: each pair forbids an open interval of t (where the moving atom is inside
 * the sphere), and the answer is the first t not inside any of them.
 */
const leastLift = (slab: Structure, placed: Vec3[], n: Vec3, clearance: number): number => {
  const c2 = clearance * clearance;
  const intervals: Array<[number, number]> = [];
  for (const p of placed)
    forEachImage(slab, p, (dx, dy, dz) => {
      // atom at p + t n, slab image at p + d: |t n - d|² < c² ⇔ t² - 2 t b + |d|² - c² < 0
      const b = dx * n[0] + dy * n[1] + dz * n[2];
      const perp2 = dx * dx + dy * dy + dz * dz - b * b;
      if (perp2 >= c2) return;
      const half = Math.sqrt(c2 - perp2);
      if (b + half > 0) intervals.push([b - half, b + half]);
    });
  intervals.sort((x, y) => x[0] - y[0]);
  let t = 0;
  for (const [lo, hi] of intervals) if (lo < t && t < hi) t = hi;
  return t;
};

export const placeAdsorbate = (slab: Structure, molecule: Structure, o: PlaceOptions): Placement => {
  const nMol = molecule.length;
  if (nMol === 0) throw new AtomStudioError("INVALID_STRUCTURE", "the adsorbate has no atoms", { field: "adsorbate" }, 400);
  if (o.binding.length === 0) throw new AtomStudioError("INVALID_BINDING_INDEX", "no binding atoms given", { indices: [] }, 400);
  const bad = o.binding.filter((i) => !Number.isInteger(i) || i < 0 || i >= nMol);
  if (bad.length)
    throw new AtomStudioError(
      "INVALID_BINDING_INDEX",
      `binding atom index ${bad[0]} is outside the adsorbate (0..${nMol - 1})`,
      { indices: bad, n_adsorbate_atoms: nMol },
      400,
    );
  const nLen = norm(o.normal);
  if (!(nLen > 1e-8)) throw new AtomStudioError("INVALID_ADSORPTION_PARAMETER", "the normal has zero length", {}, 400);
  const n = o.normal.map((x) => x / nLen) as Vec3;
  const mc = molecule.cart;
  const centre: Vec3 = [0, 0, 0];
  for (const i of o.binding)
    for (let k = 0; k < 3; k++) centre[k] = (centre[k] as number) + (mc[3 * i + k] as number) / o.binding.length;
  let local: Vec3[] = Array.from(
    { length: nMol },
    (_, i) => [0, 1, 2].map((k) => (mc[3 * i + k] as number) - (centre[k] as number)) as Vec3,
  );
  if ((o.autoRotate ?? true) && nMol > 1) {
    const masses = Array.from({ length: nMol }, (_, i) => majorityMass(molecule, i));
    const total = masses.reduce((a, b) => a + b, 0);
    const com = [0, 1, 2].map((k) => local.reduce((s, v, i) => s + (masses[i] as number) * (v[k] as number), 0) / total) as Vec3;
    const r = norm(com);
    if (r > 1e-6) local = turnAll(rotationTo(com.map((x) => x / r) as Vec3, [0, 0, 1]), local);
    local = levelBindingAtoms(local, [...new Set(o.binding)], masses);
  }
  // the frame: x along a made perpendicular to the normal, y = n × x, z = n
  const a: Vec3 = slab.lattice ? [...slab.lattice.matrix[0]] : [1, 0, 0];
  const an = dot(a, n);
  let x: Vec3 = [a[0] - an * n[0], a[1] - an * n[1], a[2] - an * n[2]];
  if (norm(x) < 1e-8) x = cross(n, Math.abs(n[1]) < 0.9 ? [0, 1, 0] : [1, 0, 0]);
  const xl = norm(x);
  x = x.map((v) => v / xl) as Vec3;
  const y = cross(n, x);
  const h = o.heightOffset ?? 0;
  const anchor = axpy(o.site, h, n);
  let alignment: NeighborAlignment | null = null;
  if ((o.autoRotate ?? true) && o.binding.length >= 2 && (o.neighbors?.length ?? 0) >= 2) {
    const bindingXY = o.binding.map((i) => [(local[i] as Vec3)[0], (local[i] as Vec3)[1]] as const);
    const reach = Math.max(...bindingXY.map(([u, v]) => Math.hypot(u, v)));
    // neighbours in the molecule's frame, in-plane only (the binding centroid is the origin), with
    // their periodic images: a site of a 1×1 cell touches one atom and its image (/sites repeats
    // the index), and each binding atom must find the image next to it. An image farther than
    // 2·reach beyond the nearest one can be nearest to no binding atom, so it is left out.
    const targets: Array<{ xy: XY; index: number }> = [];
    for (const [index, q] of (o.neighbors ?? []).entries()) {
      const near = nearestImage(slab.lattice, o.site, q);
      const images = imagesAround(slab.lattice, near).map((p) => {
        const d = sub(p, anchor);
        return [dot(d, x), dot(d, y)] as const;
      });
      const closest = Math.min(...images.map(([u, v]) => Math.hypot(u, v)));
      for (const xy of images) if (Math.hypot(xy[0], xy[1]) <= closest + 2 * reach + 1e-9) targets.push({ xy, index });
    }
    const best = bestTurn(bindingXY, targets);
    const c = Math.cos(best.radians);
    const s = Math.sin(best.radians);
    local = local.map((v) => [c * v[0] - s * v[1], s * v[0] + c * v[1], v[2]] as Vec3);
    alignment = { rotationDeg: best.degrees, inPlaneDistance: best.cost, nearest: best.nearest };
  }
  let placed = local.map((v) => axpy(axpy(axpy(anchor, v[0], x), v[1], y), v[2], n));

  const clearance = o.clearance ?? 0;
  let minDistance = leastDistance(slab, placed);
  let lift = 0;
  if (clearance > 0 && minDistance < clearance) {
    if ((o.onOverlap ?? "lift") === "error")
      overlap(
        `the adsorbate is ${minDistance.toFixed(3)} Å from the slab, closer than the clearance of ${clearance} Å (on_overlap: lift moves it up instead)`,
        { distance: minDistance, clearance },
      );
    lift = leastLift(slab, placed, n, clearance);
    const maxLift = o.maxLift ?? 10;
    if (lift > maxLift)
      overlap(
        `lifting the adsorbate by up to ${maxLift} Å along the normal does not clear ${clearance} Å from the slab (it needs ${lift.toFixed(3)} Å)`,
        {
          clearance,
          max_lift: maxLift,
          needed_lift: lift,
        },
      );
    placed = placed.map((p) => axpy(p, lift, n));
    minDistance = leastDistance(slab, placed);
  }

  const nSlab = slab.length;
  const cart = new Float64Array(3 * (nSlab + nMol));
  cart.set(slab.cart);
  for (const [i, p] of placed.entries()) cart.set(p, 3 * (nSlab + i));
  const structure = new Structure({
    lattice: slab.lattice,
    species: [...slab.species, ...molecule.species],
    cart,
    labels: [...slab.labels, ...molecule.labels],
    siteProperties: [...slab.siteProperties.map(() => ({})), ...molecule.siteProperties.map(() => ({}))],
    charge: slab.charge + molecule.charge,
  });
  let bindingPosition: Vec3 = [0, 0, 0];
  for (const i of o.binding) bindingPosition = axpy(bindingPosition, 1 / o.binding.length, placed[i] as Vec3);
  return { structure, lift, minDistance, bindingPosition, alignment };
};

/** The pair of sites whose distance (minimum image on a lattice) is closest to `target` within `tolerance`. */
export const closestSitePair = (
  lattice: Structure["lattice"],
  positions: readonly Vec3[],
  target: number,
  tolerance: number,
): { i: number; j: number; distance: number } | null => {
  let best: { i: number; j: number; distance: number; err: number } | null = null;
  for (let i = 0; i < positions.length; i++)
    for (let j = i + 1; j < positions.length; j++) {
      const d = pairDistance(lattice, positions[i] as Vec3, positions[j] as Vec3);
      const err = Math.abs(d - target);
      if (err <= tolerance && (!best || err < best.err - 1e-12)) best = { i, j, distance: d, err };
    }
  return best && { i: best.i, j: best.j, distance: best.distance };
};

/** Distance between two points, the shortest over lattice images when there is a lattice. */
export const pairDistance = (lattice: Structure["lattice"], p: Vec3, q: Vec3): number => {
  if (!lattice) return Math.hypot(q[0] - p[0], q[1] - p[1], q[2] - p[2]);
  const probe = new Structure({ lattice, species: [[{ element: "H", occu: 1 }]], cart: Float64Array.from(q) });
  return leastDistance(probe, [p]);
};

export interface FacingTurn {
  /**
   * `applied`: the turn is in `structure`; `refused_clearance`: it would bring the adsorbate closer
   * than the clearance to the rest, so `structure` is unchanged; `no_direction`: the adsorbate has
   * no in-plane direction to turn (its first binding atom lies over its centroid) or the target
   * lies straight over the axis, so nothing is turned.
   */
  status: "applied" | "refused_clearance" | "no_direction";
  /** Degrees, right-handed about the normal, in [−180, 180]: the turn applied or refused (0 for no_direction). */
  angleDeg: number;
  /** Å: least distance from the turned adsorbate to the other atoms, periodic images included (null for no_direction). */
  minDistance: number | null;
  structure: Structure;
}

/** In-plane directions shorter than this (Å) have no direction to turn. */
const FACING_MIN_LENGTH = 0.01;

/**
 * `/api/adsorption/place-dual` step 3: turn the adsorbate made of atoms `moving`.. (to the end of
 * `placed`) about the axis through `axis` along `normal` so that the in-plane direction from its
 * centroid to its atom `pointer` (its first binding atom) points at `target` (the other adsorbate's
 * first binding atom, its periodic image nearest the axis). The turn is kept only when afterwards
 * every atom of the adsorbate is at least `clearance` Å from every other atom (0: no check).
 */
export const turnToFace = (
  placed: Structure,
  o: { moving: number; pointer: number; axis: Vec3; normal: Vec3; target: Vec3; clearance: number },
): FacingTurn => {
  const nLen = norm(o.normal);
  const n = o.normal.map((v) => v / nLen) as Vec3;
  const inPlane = (v: Vec3): Vec3 => axpy(v, -dot(v, n), n);
  const at = (i: number): Vec3 => [
    placed.cart[3 * i] as number,
    placed.cart[3 * i + 1] as number,
    placed.cart[3 * i + 2] as number,
  ];
  const atoms = Array.from({ length: placed.length - o.moving }, (_, k) => at(o.moving + k));
  const centroid = atoms.reduce((c, p) => axpy(c, 1 / atoms.length, p), [0, 0, 0] as Vec3);
  const from = inPlane(sub(at(o.pointer), centroid));
  const to = inPlane(sub(nearestImage(placed.lattice, o.axis, o.target), o.axis));
  if (norm(from) < FACING_MIN_LENGTH || norm(to) < FACING_MIN_LENGTH)
    return { status: "no_direction", angleDeg: 0, minDistance: null, structure: placed };
  const angle = Math.atan2(dot(n, cross(from, to)), dot(from, to));
  // Rodrigues about the axis through o.axis along n
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const turned = atoms.map((p) => {
    const r = sub(p, o.axis);
    const k = cross(n, r);
    const along = dot(n, r) * (1 - c);
    return [0, 1, 2].map(
      (i) => (o.axis[i] as number) + (r[i] as number) * c + (k[i] as number) * s + (n[i] as number) * along,
    ) as Vec3;
  });
  const rest = new Structure({
    lattice: placed.lattice,
    species: placed.species.slice(0, o.moving),
    cart: placed.cart.slice(0, 3 * o.moving),
  });
  const minDistance = leastDistance(rest, turned);
  const angleDeg = (angle * 180) / Math.PI;
  if (o.clearance > 0 && minDistance < o.clearance)
    return { status: "refused_clearance", angleDeg, minDistance, structure: placed };
  const cart = Float64Array.from(placed.cart);
  for (const [k, p] of turned.entries()) cart.set(p, 3 * (o.moving + k));
  return { status: "applied", angleDeg, minDistance, structure: placed.with({ cart }) };
};
