/**
 * Structure equivalence as pymatgen's `StructureMatcher(ltol, stol, angle_tol=5,
 * primitive_cell=False, scale=False, attempt_supercell=False)` decides it, for the slab
 * generator's de-duplication of terminations: same composition and site count, a unimodular
 * re-basing of one lattice whose lengths agree within `ltol` (relative) and angles within
 * `angleTol` degrees, and a translation after which every site has a partner of the same species
 * with a root-mean-square distance (after removing the mean shift, in units of the mean
 * atomic spacing (V/n)^(1/3)) below `stol`.
 */

import { composition, reducedFormula } from "../composition.ts";
import { Lattice, type Mat3, type Vec3 } from "../lattice.ts";
import { inv3, mul3, rowAngles, rowLengths } from "../linalg.ts";
import { type Cell, speciesStrings } from "./cell.ts";

export interface MatchTolerances {
  ltol: number;
  stol: number;
  angleTol: number;
}

const DEFAULT_TOL: MatchTolerances = { ltol: 0.1, stol: 0.1, angleTol: 5 };

const angleDeg = (u: Vec3, v: Vec3, lu: number, lv: number): number => {
  const c = Math.min(1, Math.max(-1, (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (lu * lv)));
  return (Math.acos(c) * 180) / Math.PI;
};

/** Terminations of one surface share their lattices: the mappings are computed once per pair. */
const mappingCache = new Map<string, Mat3[]>();
const MAPPING_CACHE_LIMIT = 256;

/** Integer bases of `l2`'s lattice whose rows match `l1`'s lengths and angles (pymatgen's find_all_mappings). */
const latticeMappings = (l1: Mat3, l2: Mat3, tol: MatchTolerances): Mat3[] => {
  const key = JSON.stringify([l1, l2, tol]);
  let hit = mappingCache.get(key);
  if (!hit) {
    hit = computeLatticeMappings(l1, l2, tol);
    if (mappingCache.size >= MAPPING_CACHE_LIMIT) mappingCache.clear();
    mappingCache.set(key, hit);
  }
  return hit;
};

const computeLatticeMappings = (l1: Mat3, l2: Mat3, tol: MatchTolerances): Mat3[] => {
  const lengths = rowLengths(l1);
  const [alpha, beta, gamma] = rowAngles(l1);
  const rmax = Math.max(...lengths) * (1 + tol.ltol);
  const inv = inv3(l2);
  // Reciprocal row norms bound the integer range that can reach radius rmax.
  const range = [0, 1, 2].map((k) => Math.ceil(rmax * Math.hypot(inv[0][k]!, inv[1][k]!, inv[2][k]!)));
  type Cand = { n: Vec3; v: Vec3; l: number };
  const cands: [Cand[], Cand[], Cand[]] = [[], [], []];
  const [r0, r1, r2] = range as [number, number, number];
  for (let i = -r0; i <= r0; i++)
    for (let j = -r1; j <= r1; j++)
      for (let k = -r2; k <= r2; k++) {
        if (i === 0 && j === 0 && k === 0) continue;
        const v: Vec3 = [0, 0, 0];
        for (let d = 0; d < 3; d++) v[d] = i * l2[0][d]! + j * l2[1][d]! + k * l2[2][d]!;
        const l = Math.hypot(v[0], v[1], v[2]);
        if (l > rmax) continue;
        for (let d = 0; d < 3; d++) {
          const r = l / (lengths[d] as number);
          if (r < 1 + tol.ltol && r > 1 / (1 + tol.ltol)) cands[d]!.push({ n: [i, j, k], v, l });
        }
      }
  const out: Mat3[] = [];
  const [ca, cb, cc] = cands;
  for (const a of ca)
    for (const b of cb) {
      if (Math.abs(angleDeg(a.v, b.v, a.l, b.l) - gamma) > tol.angleTol) continue;
      for (const c of cc) {
        if (Math.abs(angleDeg(b.v, c.v, b.l, c.l) - alpha) > tol.angleTol) continue;
        if (Math.abs(angleDeg(a.v, c.v, a.l, c.l) - beta) > tol.angleTol) continue;
        const n: Mat3 = [a.n, b.n, c.n];
        const det =
          n[0][0] * (n[1][1] * n[2][2] - n[1][2] * n[2][1]) -
          n[0][1] * (n[1][0] * n[2][2] - n[1][2] * n[2][0]) +
          n[0][2] * (n[1][0] * n[2][1] - n[1][1] * n[2][0]);
        if (Math.abs(Math.abs(det) - 1) < 0.5) out.push(n);
      }
    }
  // Mappings closest to the identity first: equivalent slabs usually match on one of them.
  const offIdentity = (n: Mat3): number =>
    n.reduce((s, row, i) => s + row.reduce((t, x, j) => t + Math.abs(x - (i === j ? 1 : 0)), 0), 0);
  return out
    .map((n) => [offIdentity(n), n] as const)
    .sort((x, y) => x[0] - y[0])
    .map(([, n]) => n);
};

const wrap = (x: number): number => x - Math.floor(x);

/** First index of sorted `a` whose value is >= x. */
const lowerBound = (a: Float64Array, x: number): number => {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((a[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};

/**
 * Necessary condition for a match of two slabs: when the in-plane vectors are much shorter than
 * the cell height, every lattice mapping keeps the surface plane and sends c to ±c plus an
 * in-plane vector, so fractional c coordinates map as z -> ±z + t. The per-species multisets of
 * z must then agree up to that map within the distance tolerance. Cheap, and it rejects almost
 * every pair of different terminations before the full search.
 */
const zProfilesCompatible = (s1: Cell, s2: Cell, names1: string[], names2: string[], tol: MatchTolerances): number[] | null => {
  const [la, lb] = rowLengths(s1.m);
  const [[a00, a01, a02], [a10, a11, a12]] = s1.m;
  const area = Math.hypot(a01 * a12 - a02 * a11, a02 * a10 - a00 * a12, a00 * a11 - a01 * a10);
  const volume = Math.abs(
    a00 * (a11 * s1.m[2][2] - a12 * s1.m[2][1]) -
      a01 * (a10 * s1.m[2][2] - a12 * s1.m[2][0]) +
      a02 * (a10 * s1.m[2][1] - a11 * s1.m[2][0]),
  );
  const height = volume / area;
  // Lattice vectors with a c component are at least `height` long: they cannot stand in for a or b.
  if (!(Math.max(la, lb) * (1 + tol.ltol) ** 2 < height)) return null;
  const n = names1.length;
  // Generous bound: the full test uses 2·stol/normalization in the averaged lattice.
  const ztol = (3 * tol.stol * (volume / n) ** (1 / 3)) / height;
  const groups1 = new Map<string, number[]>();
  const groups2 = new Map<string, number[]>();
  for (let i = 0; i < n; i++) {
    const g1 = groups1.get(names1[i] as string);
    const z1 = wrap(s1.frac[3 * i + 2] as number);
    if (g1) g1.push(z1);
    else groups1.set(names1[i] as string, [z1]);
    const g2 = groups2.get(names2[i] as string);
    const z2 = s2.frac[3 * i + 2] as number;
    if (g2) g2.push(z2);
    else groups2.set(names2[i] as string, [z2]);
  }
  const species = [...groups1.keys()].sort((x, y) => (groups1.get(x)?.length ?? 0) - (groups1.get(y)?.length ?? 0));
  const anchorSpecies = species[0] as string;
  const signs: number[] = [];
  for (const sign of [1, -1]) {
    const z2s = new Map([...groups2].map(([k, zs]) => [k, zs.map((z) => wrap(sign * z))]));
    const a0 = (z2s.get(anchorSpecies) as number[])[0] as number;
    for (const target of groups1.get(anchorSpecies) as number[]) {
      const shift = target - a0;
      let ok = true;
      for (const sp of species) {
        const zs1 = groups1.get(sp) as number[];
        // Partner existence only (no one-to-one assignment): a sound necessary condition.
        for (const z of z2s.get(sp) as number[]) {
          const zz = z + shift;
          let found = false;
          for (const z1 of zs1) {
            const d = z1 - zz;
            if (Math.abs(d - Math.round(d)) <= ztol) {
              found = true;
              break;
            }
          }
          if (!found) {
            ok = false;
            break;
          }
        }
        if (!ok) break;
      }
      if (ok) {
        signs.push(sign);
        break;
      }
    }
  }
  return signs;
};

/** True when `s2` is equivalent to `s1` within the tolerances. */
export const cellsMatch = (s1: Cell, s2: Cell, tol: MatchTolerances = DEFAULT_TOL): boolean => {
  const n = s1.species.length;
  if (n !== s2.species.length) return false;
  if (n === 0) return true;
  const names1 = speciesStrings(s1);
  const names2 = speciesStrings(s2);
  const count = new Map<string, number>();
  for (const s of names1) count.set(s, (count.get(s) ?? 0) + 1);
  const count2 = new Map<string, number>();
  for (const s of names2) count2.set(s, (count2.get(s) ?? 0) + 1);
  for (const [k, v] of count) if (count2.get(k) !== v) return false;
  // Indices of s1 sites by species.
  const bySpecies = new Map<string, number[]>();
  names1.forEach((s, i) => {
    const list = bySpecies.get(s);
    if (list) list.push(i);
    else bySpecies.set(s, [i]);
  });
  // Translation anchor: the first s2 site of the rarest species.
  let anchor = 0;
  for (let j = 0; j < n; j++)
    if ((count.get(names2[j] as string) as number) < (count.get(names2[anchor] as string) as number)) anchor = j;
  const anchorTargets = bySpecies.get(names2[anchor] as string) as number[];

  const signs = zProfilesCompatible(s1, s2, names1, names2, tol);
  if (signs && signs.length === 0) return false;
  const f1 = s1.frac;
  const l1p = [...rowLengths(s1.m), ...rowAngles(s1.m)];
  // Sites of s2 in order of species rarity: a wrong translation fails on the first few.
  const jOrder = [...Array(n).keys()].sort(
    (a, b) => (count.get(names2[a] as string) as number) - (count.get(names2[b] as string) as number) || a - b,
  );
  // Per species, s1's sites sorted by wrapped fractional c coordinate.
  const sortedBySpecies = new Map<string, [Float64Array, Int32Array]>();
  for (const [sp, list] of bySpecies) {
    const ordered = [...list].sort((a, b) => wrap(f1[3 * a + 2] as number) - wrap(f1[3 * b + 2] as number));
    sortedBySpecies.set(sp, [Float64Array.from(ordered, (i) => wrap(f1[3 * i + 2] as number)), Int32Array.from(ordered)]);
  }
  const sortedZ = jOrder.map((j) => (sortedBySpecies.get(names2[j] as string) as [Float64Array, Int32Array])[0]);
  const sortedIdx = jOrder.map((j) => (sortedBySpecies.get(names2[j] as string) as [Float64Array, Int32Array])[1]);
  const f2 = new Float64Array(3 * n);
  const used = new Uint8Array(n);
  const shifts = new Float64Array(3 * n);
  for (const nmat of latticeMappings(s1.m, s2.m, tol)) {
    // Only mappings that send c the way the z profiles allow (see zProfilesCompatible).
    if (signs && !signs.includes(nmat[2][2])) continue;
    // s2 expressed in the new basis: f' = f2 · N^-1.
    const ninv = inv3(nmat);
    for (let j = 0; j < n; j++)
      for (let k = 0; k < 3; k++)
        f2[3 * j + k] =
          (s2.frac[3 * j] as number) * ninv[0][k]! +
          (s2.frac[3 * j + 1] as number) * ninv[1][k]! +
          (s2.frac[3 * j + 2] as number) * ninv[2][k]!;
    // Distances in the average of the two lattices' parameters, as pymatgen measures them.
    const nl = mul3(nmat, s2.m);
    const p2 = [...rowLengths(nl), ...rowAngles(nl)];
    const avg = p2.map((x, k) => (x + (l1p[k] as number)) / 2) as [number, number, number, number, number, number];
    const avgLattice = Lattice.fromParameters(...avg);
    const [[a00, a01, a02], [a10, a11, a12], [a20, a21, a22]] = avgLattice.matrix;
    const area = Math.hypot(a01 * a12 - a02 * a11, a02 * a10 - a00 * a12, a00 * a11 - a01 * a10);
    const heightC = avgLattice.volume / area;
    const normalization = (n / avgLattice.volume) ** (1 / 3);
    const maxDist = (2 * tol.stol) / normalization;
    const maxDist2 = maxDist * maxDist;
    // The slab's c is long: a partner must lie within this window of fractional height.
    const zWindow = maxDist / heightC + 1e-12;
    for (const target of anchorTargets) {
      const tx = (f1[3 * target] as number) - (f2[3 * anchor] as number);
      const ty = (f1[3 * target + 1] as number) - (f2[3 * anchor + 1] as number);
      const tz = (f1[3 * target + 2] as number) - (f2[3 * anchor + 2] as number);
      used.fill(0);
      let ok = true;
      for (let q = 0; q < n && ok; q++) {
        const j = jOrder[q] as number;
        const gx = (f2[3 * j] as number) + tx;
        const gy = (f2[3 * j + 1] as number) + ty;
        const gz = (f2[3 * j + 2] as number) + tz;
        let best = -1;
        let bestD2 = maxDist2;
        let bx = 0;
        let by = 0;
        let bz = 0;
        // Candidates of the right species within the height window, from the z-sorted list.
        const zs = sortedZ[q] as Float64Array;
        const ids = sortedIdx[q] as Int32Array;
        const z0 = gz - Math.floor(gz);
        const lo = z0 - zWindow;
        const hi = z0 + zWindow;
        const visit = (from: number, to: number): void => {
          let p = lowerBound(zs, from);
          for (; p < zs.length && (zs[p] as number) <= to; p++) {
            const i = ids[p] as number;
            if (used[i]) continue;
            let dz = (f1[3 * i + 2] as number) - gz;
            dz -= Math.round(dz);
            let dx = (f1[3 * i] as number) - gx;
            dx -= Math.round(dx);
            let dy = (f1[3 * i + 1] as number) - gy;
            dy -= Math.round(dy);
            // Nearest in-plane image (skewed surface cells).
            for (let a = -1; a <= 1; a++)
              for (let b = -1; b <= 1; b++) {
                const fa = dx + a;
                const fb = dy + b;
                const vx = fa * a00 + fb * a10 + dz * a20;
                const vy = fa * a01 + fb * a11 + dz * a21;
                const vz = fa * a02 + fb * a12 + dz * a22;
                const d2 = vx * vx + vy * vy + vz * vz;
                if (d2 < bestD2) {
                  bestD2 = d2;
                  best = i;
                  bx = vx;
                  by = vy;
                  bz = vz;
                }
              }
          }
        };
        visit(Math.max(0, lo), Math.min(1, hi));
        if (lo < 0) visit(lo + 1, 1);
        if (hi >= 1) visit(0, hi - 1);
        if (best < 0) ok = false;
        else {
          used[best] = 1;
          shifts[3 * q] = bx;
          shifts[3 * q + 1] = by;
          shifts[3 * q + 2] = bz;
        }
      }
      if (!ok) continue;
      let mx = 0;
      let my = 0;
      let mz = 0;
      for (let q = 0; q < n; q++) {
        mx += shifts[3 * q] as number;
        my += shifts[3 * q + 1] as number;
        mz += shifts[3 * q + 2] as number;
      }
      mx /= n;
      my /= n;
      mz /= n;
      let sum = 0;
      for (let q = 0; q < n; q++)
        sum +=
          ((shifts[3 * q] as number) - mx) ** 2 +
          ((shifts[3 * q + 1] as number) - my) ** 2 +
          ((shifts[3 * q + 2] as number) - mz) ** 2;
      const rms = Math.sqrt(sum / n) * normalization;
      if (rms < tol.stol) return true;
    }
  }
  return false;
};

/**
 * pymatgen's `StructureMatcher.group_structures`: pre-grouped by reduced formula (groups in
 * sorted formula order), then the first unmatched structure of each pre-group collects
 * everything that fits it. Returns groups of indices into `cells`.
 */
export const groupCells = (cells: readonly Cell[], tol: MatchTolerances = DEFAULT_TOL): number[][] => {
  const keys = cells.map((c) => reducedFormula(composition(c.species)));
  const order = [...cells.keys()].sort((a, b) => {
    const x = keys[a] as string;
    const y = keys[b] as string;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  const out: number[][] = [];
  let start = 0;
  while (start < order.length) {
    let end = start;
    while (end < order.length && keys[order[end] as number] === keys[order[start] as number]) end++;
    let unmatched = order.slice(start, end);
    while (unmatched.length) {
      const [ref, ...rest] = unmatched as [number, ...number[]];
      const matches = rest.filter((i) => cellsMatch(cells[ref] as Cell, cells[i] as Cell, tol));
      out.push([ref, ...matches]);
      unmatched = rest.filter((i) => !matches.includes(i));
    }
    start = end;
  }
  return out;
};
