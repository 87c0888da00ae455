/**
 * Adsorbate placement: pymatgen's `AdsorbateSiteFinder.add_adsorbate` for any outward normal,
 * with an overlap check that counts periodic images and the least lift that clears it.
 *
 * The molecule is given in its own frame with the binding atoms at the bottom (pymatgen's
 * convention: the atoms of lowest z bind). Their centroid goes to `site + heightOffset·normal`; the
 * molecule's z turns along the normal and its x along the slab's a (made perpendicular to the
 * normal), which for a slab's top normal is pymatgen's `get_rot(slab).inverse`. `autoRotate` first
 * turns the molecule so its centre of mass lies straight above the binding centroid, whatever
 * orientation it came in.
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
}

export interface Placement {
  structure: Structure;
  /** Å the molecule was lifted along the normal to reach the clearance (0: none). */
  lift: number;
  /** Least adsorbate–slab distance, periodic images included, Å (Infinity for an empty slab). */
  minDistance: number;
  bindingPosition: Vec3;
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
    if (r > 1e-6) {
      const R = rotationTo(com.map((x) => x / r) as Vec3, [0, 0, 1]);
      local = local.map(
        (v) =>
          [0, 1, 2].map(
            (i) => (R[3 * i] as number) * v[0] + (R[3 * i + 1] as number) * v[1] + (R[3 * i + 2] as number) * v[2],
          ) as Vec3,
      );
    }
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
  return { structure, lift, minDistance, bindingPosition };
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
