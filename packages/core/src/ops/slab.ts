/**
 * Surface slabs with the semantics of pymatgen's `SlabGenerator(...).get_slabs()`:
 *
 * 1. Oriented unit cell (OUC): two in-plane lattice vectors from the Miller index, the third
 *    chosen among small integer combinations (up to `max_normal_search`) as parallel to the
 *    surface normal as possible; the bulk is re-expressed in that cell and wrapped.
 * 2. Terminations: fractional c coordinates of the OUC clustered by single linkage (periodic
 *    distance along the normal, cut at `ftol` = 0.1 Angstrom); a termination lies midway between
 *    consecutive plane clusters.
 * 3. For each termination: stack whole OUCs (thickness in hkl planes when `thickness` has no
 *    fractional part, else Angstrom; vacuum in Angstrom), centre, reduce to a primitive surface
 *    cell where the OUC allows it, and reorient (pymatgen's `Lattice.from_parameters`).
 * 4. Equivalent terminations are merged (StructureMatcher semantics); with `symmetrize`, atoms
 *    are stripped from one face until both faces are equivalent (inversion, or a symmetry
 *    operation flipping c), then merged again.
 *
 * Where the service takes vacuum in Angstrom and thickness in layers, pymatgen's
 * `in_unit_planes=True` would read the vacuum in planes too; here the vacuum is always Angstrom.
 */
import { composition, formula, weight } from "../composition.ts";
import { fail } from "../errors.ts";
import { cross, Lattice, type Mat3, norm, type Vec3 } from "../lattice.ts";
import { det3, gcd, inv3, isClose, lcm, rowAngles, rowLengths } from "../linalg.ts";
import { type SiteSpecies, Structure } from "../structure.ts";
import { symmetryDataset } from "../symmetry.ts";
import { checkAtomLimit, requireLattice } from "./build.ts";
import { type Cell, pickSites, speciesStrings } from "./cell.ts";
import { groupCells } from "./match.ts";
import { primitiveCell } from "./primitive.ts";

export interface SlabOptions {
  miller: readonly number[];
  /** Number of hkl planes when it has no fractional part, otherwise Angstrom. */
  thickness: number;
  /** Angstrom; default 15. */
  vacuum?: number;
  center_slab?: boolean;
  primitive?: boolean;
  /** Largest index for the search of the out-of-plane vector; null: use the bulk vector with the largest normal component. */
  max_normal_search?: number | null;
  symmetrize?: boolean;
  termination_index?: number;
}

export interface SlabResultCore {
  structure: Structure;
  nTerminations: number;
  terminationIndex: number;
  /** Extent of the atoms along the surface normal, Angstrom. */
  thicknessAngstroms: number;
  /** Height of the cell along the normal minus the atomic extent, Angstrom. */
  vacuumAngstroms: number;
  /** |a × b| of the slab cell, square Angstrom. */
  surfaceArea: number;
  formula: string;
}

/** pymatgen's defaults for `get_slabs`: plane clustering and primitive/matching tolerances. */
const FTOL = 0.1;
const TOL = 0.1;
/** `Slab.is_symmetric` analyses with this symprec. */
const SYMMETRIC_SYMPREC = 0.1;

/**
 * Largest |h|, |k|, |l| accepted. Vicinal surfaces studied in practice stay within it (Pt(997),
 * Au(788), Si(557)); larger indices give oriented cells with thousands of planes, hence as many
 * terminations, each a full slab to build and compare: Cu(19 17 13) ran for 50 s before any cap.
 */
export const MAX_MILLER_INDEX = 10;
/**
 * Largest `max_normal_search`. The search visits (2n+1)^3 vectors; pymatgen's documentation says
 * a value up to the largest Miller index is usually enough, so the cap is the Miller cap.
 */
export const MAX_NORMAL_SEARCH = MAX_MILLER_INDEX;
/**
 * Atoms in all the slabs built before terminations are merged (one slab per termination, as
 * pymatgen's `get_slabs` builds them). Each is under the 10,000-atom cap on its own, but a
 * high-index oriented cell has a termination per plane: Cu(10 9 7) with max_normal_search 10 is
 * 2,300 terminations of 9,200 atoms. Checked before any slab is built.
 */
export const MAX_SLAB_TOTAL_ATOMS = 500_000;

const reduceVector = (v: readonly number[]): number[] => {
  const d = Math.abs(v.reduce((g, x) => gcd(g, x), 0));
  return v.map((x) => Math.trunc(x / d));
};

/** Integer lattice points inside the supercell `s` (pymatgen's lattice_points_in_supercell), as fractions of it. */
const latticePointsInSupercell = (s: Mat3): Vec3[] => {
  const mins = [0, 0, 0];
  const maxs = [0, 0, 0];
  for (let corner = 0; corner < 8; corner++) {
    const d = [(corner >> 2) & 1, (corner >> 1) & 1, corner & 1];
    for (let k = 0; k < 3; k++) {
      const v = (d[0] as number) * s[0][k]! + (d[1] as number) * s[1][k]! + (d[2] as number) * s[2][k]!;
      mins[k] = Math.min(mins[k] as number, v);
      maxs[k] = Math.max(maxs[k] as number, v);
    }
  }
  const inv = inv3(s);
  const out: Vec3[] = [];
  for (let a = mins[0] as number; a <= (maxs[0] as number); a++)
    for (let b = mins[1] as number; b <= (maxs[1] as number); b++)
      for (let c = mins[2] as number; c <= (maxs[2] as number); c++) {
        const f: Vec3 = [0, 0, 0];
        for (let k = 0; k < 3; k++) f[k] = a * inv[0][k]! + b * inv[1][k]! + c * inv[2][k]!;
        if (f.every((x) => Math.abs(x) < 1 - 1e-10 && x >= -1e-10)) out.push(f);
      }
  const expected = Math.round(Math.abs(det3(s)));
  if (out.length !== expected) throw new Error(`lattice points in supercell: found ${out.length}, expected ${expected}`);
  return out;
};

interface OrientedCell {
  ouc: Cell;
  miller: number[];
  projHeight: number;
  /** Interplanar spacing of the (reduced) Miller planes in the bulk. */
  dhkl: number;
  primCache: Map<string, Cell>;
}

/** The oriented cell's geometry, known before any atom is placed (so its size can be checked first). */
interface OrientedBasis {
  /** Integer rows: the oriented cell in units of the bulk lattice. */
  scale: Mat3;
  miller: number[];
  normal: Vec3;
  /** How many bulk cells the oriented cell holds (|det scale|). */
  nCells: number;
  projHeight: number;
  dhkl: number;
}

const orientedBasis = (lattice: Lattice, millerIn: readonly number[], maxNormalSearch: number | null): OrientedBasis => {
  const miller = reduceVector(millerIn);
  const m = lattice.matrix;
  const inv = lattice.inverse;
  // Reciprocal (crystallographic) vector h·b*, b*_i being the columns of M^-1.
  const recip: Vec3 = [0, 0, 0];
  for (let j = 0; j < 3; j++)
    recip[j] = inv[j]![0] * (miller[0] as number) + inv[j]![1] * (miller[1] as number) + inv[j]![2] * (miller[2] as number);
  const recipNorm = norm(recip);
  const normal: Vec3 = [recip[0] / recipNorm, recip[1] / recipNorm, recip[2] / recipNorm];
  const abc = lattice.lengths;

  const eye = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ];
  const ssf: number[][] = [];
  const nonOrth: [number, number][] = [];
  miller.forEach((h, i) => {
    if (h === 0) ssf.push(eye[i] as number[]);
    else {
      const row = m[i] as Vec3;
      nonOrth.push([i, Math.abs(normal[0] * row[0] + normal[1] * row[1] + normal[2] * row[2]) / (abc[i] as number)]);
    }
  });
  let cIndex = (nonOrth[0] as [number, number])[0];
  let best = -Infinity;
  for (const [i, d] of nonOrth)
    if (d > best) {
      best = d;
      cIndex = i;
    }
  if (nonOrth.length > 1) {
    const l = nonOrth.reduce((acc, [i]) => lcm(acc, miller[i] as number), 1);
    outer: for (let p = 0; p < nonOrth.length; p++)
      for (let q = p + 1; q < nonOrth.length; q++) {
        const ii = (nonOrth[p] as [number, number])[0];
        const jj = (nonOrth[q] as [number, number])[0];
        const sf = [0, 0, 0];
        sf[ii] = -Math.round(l / (miller[ii] as number));
        sf[jj] = Math.round(l / (miller[jj] as number));
        ssf.push(sf);
        if (ssf.length === 2) break outer;
      }
  }
  if (maxNormalSearch === null) ssf.push(eye[cIndex] as number[]);
  else {
    const range: number[] = [];
    for (let x = -maxNormalSearch; x <= maxNormalSearch; x++) range.push(x);
    // Python's stable sort by -|x|: -n, n, -(n-1), n-1, ..., 0.
    range.sort((x, y) => Math.abs(y) - Math.abs(x));
    let bestUvw: number[] | null = null;
    let bestCos = -Infinity;
    let bestLen = Infinity;
    search: for (const u of range)
      for (const v of range)
        for (const w of range) {
          if (u === 0 && v === 0 && w === 0) continue;
          if (Math.abs(det3([...ssf, [u, v, w]])) < 1e-8) continue;
          const vec = lattice.toCartesian([u, v, w]);
          const osdm = norm(vec);
          const cosine = Math.abs((vec[0] * normal[0] + vec[1] * normal[1] + vec[2] * normal[2]) / osdm);
          // Largest cosine, then shortest vector; the first of equals wins (Python's max).
          if (cosine > bestCos || (cosine === bestCos && -osdm > -bestLen)) {
            bestCos = cosine;
            bestLen = osdm;
            bestUvw = [u, v, w];
          }
          if (Math.abs(Math.abs(cosine) - 1) <= 1e-8) break search;
        }
    ssf.push(bestUvw as number[]);
  }
  let scale = ssf.map((r) => [...r]);
  if (det3(scale) < 0) scale = scale.map((r) => r.map((x) => -x));
  scale = scale.map(reduceVector);
  const s = scale as Mat3;
  const c = lattice.scaled(s).matrix[2];
  const projHeight = Math.abs(normal[0] * c[0] + normal[1] * c[1] + normal[2] * c[2]);
  return { scale: s, miller, normal, nCells: Math.round(Math.abs(det3(s))), projHeight, dhkl: 1 / recipNorm };
};

export const orientedUnitCell = (
  bulk: Structure,
  lattice: Lattice,
  millerIn: readonly number[],
  maxNormalSearch: number | null,
  basis: OrientedBasis = orientedBasis(lattice, millerIn, maxNormalSearch),
): OrientedCell => {
  const { scale: s, miller, projHeight, dhkl } = basis;
  // Checked before the lattice points are enumerated and the arrays allocated.
  checkAtomLimit(bulk.length * basis.nCells, "The oriented unit cell");

  // The bulk re-expressed in the oriented cell, sites grouped by original site (pymatgen's
  // make_supercell order), coordinates wrapped into [0, 1).
  // The cell holds |det(s)| copies of the bulk: refuse before enumerating them (high Miller
  // indices give determinants in the millions, and the enumeration alone ran for minutes).
  checkAtomLimit(bulk.length * Math.round(Math.abs(det3(s))), "The oriented unit cell");
  const points = latticePointsInSupercell(s);
  const newLattice = lattice.scaled(s);
  const nm = newLattice.matrix;
  const ninv = newLattice.inverse;
  const n = bulk.length * points.length;
  const frac = new Float64Array(3 * n);
  const species: SiteSpecies[] = new Array(n);
  const labels: string[] = new Array(n);
  const props: Record<string, unknown>[] = new Array(n);
  const shifts = points.map((p) => newLattice.toCartesian(p));
  let k = 0;
  for (let i = 0; i < bulk.length; i++) {
    for (const t of shifts) {
      const x = (bulk.cart[3 * i] as number) + t[0];
      const y = (bulk.cart[3 * i + 1] as number) + t[1];
      const z = (bulk.cart[3 * i + 2] as number) + t[2];
      for (let d = 0; d < 3; d++) {
        const v = x * ninv[0][d]! + y * ninv[1][d]! + z * ninv[2][d]!;
        frac[3 * k + d] = v - Math.floor(v);
      }
      species[k] = bulk.species[i] as SiteSpecies;
      labels[k] = bulk.labels[i] as string;
      props[k] = bulk.siteProperties[i] as Record<string, unknown>;
      k++;
    }
  }
  return { ouc: { m: nm, species, frac, labels, props }, miller, projHeight, dhkl, primCache: new Map() };
};

/** Circular mean of fractional coordinates, in [0, 1). */
const pbcMean = (zs: readonly number[]): number => {
  let re = 0;
  let im = 0;
  for (const z of zs) {
    re += Math.cos(2 * Math.PI * z);
    im += Math.sin(2 * Math.PI * z);
  }
  const v = Math.atan2(im / zs.length, re / zs.length) / (2 * Math.PI);
  return v - Math.floor(v);
};

/**
 * Termination shifts: single-linkage clusters of the c coordinates (periodic distance along the
 * normal at most `ftol`; on a circle those are runs of consecutive gaps at most `ftol`), then
 * midpoints between consecutive cluster means.
 */
export const terminationShifts = (zs: readonly number[], projHeight: number, ftol = FTOL): number[] => {
  const n = zs.length;
  if (n === 0) return [];
  if (n === 1) {
    const t = (zs[0] as number) + 0.5;
    return [t - Math.floor(t)];
  }
  const wrapped = zs.map((z) => z - Math.floor(z));
  const order = [...wrapped.keys()].sort((a, b) => (wrapped[a] as number) - (wrapped[b] as number));
  const gapAfter = (p: number): number => {
    const a = wrapped[order[p] as number] as number;
    const b = p + 1 < n ? (wrapped[order[p + 1] as number] as number) : (wrapped[order[0] as number] as number) + 1;
    const d = b - a;
    return Math.abs(d - Math.round(d)) * projHeight;
  };
  // Start a cluster after the first gap larger than ftol; none means one cluster of everything.
  let start = -1;
  for (let p = 0; p < n; p++)
    if (gapAfter(p) > ftol) {
      start = (p + 1) % n;
      break;
    }
  let clusters: number[][];
  if (start < 0) clusters = [order.map((i) => zs[i] as number)];
  else {
    clusters = [];
    let current: number[] = [];
    for (let s = 0; s < n; s++) {
      const p = (start + s) % n;
      current.push(zs[order[p] as number] as number);
      if (gapAfter(p) > ftol) {
        clusters.push(current);
        current = [];
      }
    }
    if (current.length) clusters.push(current);
  }
  const means = clusters.map(pbcMean).sort((a, b) => a - b);
  const out: number[] = [];
  for (let i = 0; i + 1 < means.length; i++) out.push(0.5 * ((means[i] as number) + (means[i + 1] as number)));
  const last = (0.5 * ((means[0] as number) + 1 + (means[means.length - 1] as number))) % 1;
  // A termination on the cell boundary comes out as 0 or as 1 - 1e-16 depending on rounding
  // noise (in pymatgen too), which decides whether it sorts first or last: the set of
  // terminations is exact, their order at that boundary is not.
  out.push(last);
  return out.sort((a, b) => a - b);
};

const wrap01 = (v: number): number => v - Math.floor(v);

/** pymatgen's `center_slab`: bring the slab region to the middle of the cell along c. */
const centerSlab = (cell: Cell): void => {
  const n = cell.species.length;
  const f = cell.frac;
  const lattice = new Lattice(cell.m);
  const c = lattice.lengths[2];
  // Cut-off: three times the shortest distance from site 0 within 10 Angstrom.
  const shortest = shortestDistanceFrom(lattice, f, 0, 10);
  if (shortest !== null) {
    const cutoff = 3 * shortest;
    // Only a neighbour at distance >= c (the slab wraps round the cell) triggers the shift,
    // which needs cutoff >= c: with any real vacuum this never happens.
    if (cutoff >= c)
      for (let i = 0; i < n; i++) {
        if (hasNeighbourBeyond(lattice, f, i, cutoff, c)) {
          const shift = 1 - (f[3 * i + 2] as number) + 0.05;
          for (let j = 0; j < n; j++)
            for (let k = 0; k < 3; k++) f[3 * j + k] = wrap01((f[3 * j + k] as number) + (k === 2 ? shift : 0));
        }
      }
  }
  let wsum = 0;
  let zsum = 0;
  const weights = new Map<SiteSpecies, number>();
  for (let i = 0; i < n; i++) {
    const sp = cell.species[i] as SiteSpecies;
    let w = weights.get(sp);
    if (w === undefined) {
      w = weight(composition([sp]));
      weights.set(sp, w);
    }
    wsum += w;
    zsum += w * (f[3 * i + 2] as number);
  }
  const shift = 0.5 - zsum / wsum;
  for (let j = 0; j < n; j++) for (let k = 0; k < 3; k++) f[3 * j + k] = wrap01((f[3 * j + k] as number) + (k === 2 ? shift : 0));
};

/** Calls `visit(distance)` for every periodic image of every site within `r` of site `i` (itself at 0 excluded). */
const forNeighbours = (lattice: Lattice, f: Float64Array, i: number, r: number, visit: (d: number) => boolean): void => {
  const inv = lattice.inverse;
  const m = lattice.matrix;
  const reach = [0, 1, 2].map((k) => Math.ceil(r * Math.hypot(inv[0][k]!, inv[1][k]!, inv[2][k]!)) + 1);
  const n = f.length / 3;
  const [ra, rb, rc] = reach as [number, number, number];
  for (let j = 0; j < n; j++) {
    const d0 = (f[3 * j] as number) - (f[3 * i] as number);
    const d1 = (f[3 * j + 1] as number) - (f[3 * i + 1] as number);
    const d2 = (f[3 * j + 2] as number) - (f[3 * i + 2] as number);
    for (let a = -ra; a <= ra; a++)
      for (let b = -rb; b <= rb; b++)
        for (let cc = -rc; cc <= rc; cc++) {
          const x = d0 + a,
            y = d1 + b,
            z = d2 + cc;
          const vx = x * m[0][0] + y * m[1][0] + z * m[2][0];
          const vy = x * m[0][1] + y * m[1][1] + z * m[2][1];
          const vz = x * m[0][2] + y * m[1][2] + z * m[2][2];
          const d = Math.sqrt(vx * vx + vy * vy + vz * vz);
          if (d <= r && d > 1e-8 && visit(d)) return;
        }
  }
};

const shortestDistanceFrom = (lattice: Lattice, f: Float64Array, i: number, r: number): number | null => {
  let best: number | null = null;
  forNeighbours(lattice, f, i, r, (d) => {
    if (best === null || d < best) best = d;
    return false;
  });
  return best;
};

const hasNeighbourBeyond = (lattice: Lattice, f: Float64Array, i: number, r: number, limit: number): boolean => {
  let found = false;
  forNeighbours(lattice, f, i, r, (d) => {
    found = d >= limit;
    return found;
  });
  return found;
};

const buildSlab = (
  oc: OrientedCell,
  shift: number,
  nLayersSlab: number,
  nLayersVac: number,
  center: boolean,
  primitive: boolean,
): Cell => {
  const { ouc } = oc;
  const nLayers = nLayersSlab + nLayersVac;
  const [a, b, c] = ouc.m;
  const m: Mat3 = [[...a], [...b], [c[0] * nLayers, c[1] * nLayers, c[2] * nLayers]];
  const n0 = ouc.species.length;
  const base = new Float64Array(3 * n0);
  for (let i = 0; i < n0; i++) {
    base[3 * i] = wrap01(ouc.frac[3 * i] as number);
    base[3 * i + 1] = wrap01(ouc.frac[3 * i + 1] as number);
    base[3 * i + 2] = wrap01((ouc.frac[3 * i + 2] as number) - shift) / nLayers;
  }
  const n = n0 * nLayersSlab;
  const frac = new Float64Array(3 * n);
  for (let layer = 0; layer < nLayersSlab; layer++)
    for (let i = 0; i < n0; i++) {
      const k = layer * n0 + i;
      frac[3 * k] = base[3 * i] as number;
      frac[3 * k + 1] = base[3 * i + 1] as number;
      frac[3 * k + 2] = (base[3 * i + 2] as number) + layer / nLayers;
    }
  const rep = <T>(xs: readonly T[]): T[] => {
    const out: T[] = [];
    for (let layer = 0; layer < nLayersSlab; layer++) out.push(...xs);
    return out;
  };
  // pymatgen builds the slab without labels: every label is the species string.
  let cell: Cell = { m, species: rep(ouc.species), frac, labels: [], props: rep(ouc.props) };
  cell.labels = speciesStrings(cell);
  if (center) centerSlab(cell);
  if (primitive) {
    const prim = primitiveCell(cell, TOL);
    const pl = rowLengths(prim.m);
    const pa = rowAngles(prim.m);
    const constraint = { a: pl[0], b: pl[1], alpha: pa[0], beta: pa[1], gamma: pa[2] };
    // Terminations of one surface usually share the surface cell: reduce the OUC once per cell.
    const key = JSON.stringify(constraint);
    let primOuc = oc.primCache.get(key);
    if (!primOuc) {
      primOuc = primitiveCell(ouc, 0.25, constraint);
      oc.primCache.set(key, primOuc);
    }
    const ol = rowLengths(primOuc.m);
    // Keep the reduced slab only when the oriented cell reduces to the same surface cell.
    if (isClose(pl[0], ol[0]) && isClose(pl[1], ol[1])) cell = prim;
  }
  // Reorient: pymatgen's Slab rebuilds the lattice from its parameters, keeping fractional coordinates.
  const l = rowLengths(cell.m);
  const ang = rowAngles(cell.m);
  cell.m = Lattice.fromParameters(l[0], l[1], l[2], ang[0], ang[1], ang[2]).matrix;
  return cell;
};

const cellToStructure = (cell: Cell): Structure => {
  const lattice = new Lattice(cell.m);
  const n = cell.species.length;
  const cart = new Float64Array(3 * n);
  const v: Vec3 = [0, 0, 0];
  for (let i = 0; i < n; i++) {
    lattice.toCartesian(cell.frac.subarray(3 * i, 3 * i + 3), v);
    cart.set(v, 3 * i);
  }
  return new Structure({ lattice, species: cell.species, cart, labels: cell.labels, siteProperties: cell.props });
};

/**
 * Necessary condition for `isSymmetric`: inversion and every operation sending c to -c map
 * heights along the normal as h -> 2m - h, and each atom must land within symprec of an atom of
 * its species. A slab whose height profile has no such mirror centre cannot be symmetric, and
 * the symmetry search is skipped.
 */
const heightProfileMirrors = (cell: Cell, tol: number): boolean => {
  const [a, b, c] = cell.m;
  const nrm = cross(a, b);
  const area = norm(nrm);
  const height = Math.abs((nrm[0] * c[0] + nrm[1] * c[1] + nrm[2] * c[2]) / area);
  const names = speciesStrings(cell);
  const bySpecies = new Map<string, number[]>();
  names.forEach((s, i) => {
    const z = wrap01(cell.frac[3 * i + 2] as number);
    const list = bySpecies.get(s);
    if (list) list.push(z);
    else bySpecies.set(s, [z]);
  });
  const groups = [...bySpecies.values()].sort((x, y) => x.length - y.length);
  const anchor = groups[0] as number[];
  const ztol = tol / height;
  const a0 = anchor[0] as number;
  for (const z of anchor) {
    // Mirror sum s = 2m: every z must have a partner at s - z (periodically).
    const s = a0 + z;
    const ok = groups.every((zs) =>
      zs.every((zi) =>
        zs.some((zj) => {
          const d = s - zi - zj;
          return Math.abs(d - Math.round(d)) <= ztol;
        }),
      ),
    );
    if (ok) return true;
  }
  return false;
};

/** pymatgen's `Slab.is_symmetric`: inversion, or an operation that sends c to -c. */
const isSymmetric = (cell: Cell): boolean => {
  // Generous (3 symprec): the search itself decides; this only skips hopeless cases.
  if (!heightProfileMirrors(cell, 3 * SYMMETRIC_SYMPREC)) return false;
  let d: ReturnType<typeof symmetryDataset>;
  try {
    d = symmetryDataset(cellToStructure(cell), { symprec: SYMMETRIC_SYMPREC });
  } catch {
    return false;
  }
  if (!d) return false;
  return d.operations.some((op) => {
    const r = op.rotation;
    const inversion = r.every((x, i) => x === (i % 4 === 0 ? -1 : 0));
    const flipsC = r[6] === 0 && r[7] === 0 && r[8] === -1;
    return inversion || flipsC;
  });
};

/** pymatgen's `nonstoichiometric_symmetrized_slab`: strip the top (then the bottom) until symmetric. */
const symmetrizedSlabs = (cell: Cell, bulkSize: number): Cell[] => {
  if (isSymmetric(cell)) return [cell];
  const out: Cell[] = [];
  for (const surface of ["top", "bottom"] as const) {
    let slab = cell;
    for (;;) {
      const n = slab.species.length;
      let pick = 0;
      for (let i = 1; i < n; i++) {
        const z = slab.frac[3 * i + 2] as number;
        const zp = slab.frac[3 * pick + 2] as number;
        if (surface === "top" ? z > zp : z < zp) pick = i;
      }
      slab = pickSites(
        slab,
        [...Array(n).keys()].filter((i) => i !== pick),
      );
      if (slab.species.length <= bulkSize) break;
      if (isSymmetric(slab)) {
        out.push(slab);
        break;
      }
    }
  }
  return out;
};

const extentAlongNormal = (cell: Cell): { thickness: number; height: number; area: number } => {
  const [a, b, c] = cell.m;
  const nrm = cross(a, b);
  const area = norm(nrm);
  const unit: Vec3 = [nrm[0] / area, nrm[1] / area, nrm[2] / area];
  const height = Math.abs(unit[0] * c[0] + unit[1] * c[1] + unit[2] * c[2]);
  let lo = Infinity;
  let hi = -Infinity;
  const n = cell.species.length;
  for (let i = 0; i < n; i++) {
    const h = (cell.frac[3 * i + 2] as number) * height;
    lo = Math.min(lo, h);
    hi = Math.max(hi, h);
  }
  const thickness = n ? hi - lo : 0;
  return { thickness, height, area };
};

/**
 * All distinct slabs of one surface, in pymatgen's order (`get_slabs()`), as internal cells.
 * Exposed for tests and benchmarks; `slab()` is the operation.
 */
export const generateSlabs = (bulk: Structure, opts: SlabOptions): Cell[] => {
  const lattice = requireLattice(bulk, "A slab");
  const miller = opts.miller;
  if (miller.length !== 3 || miller.some((h) => !Number.isInteger(h)))
    fail("INVALID_MILLER", `Miller indices must be 3 integers, got [${miller.join(", ")}]`, { miller });
  if (miller.every((h) => h === 0)) fail("INVALID_MILLER", "Miller indices must not all be zero", { miller });
  if (miller.some((h) => Math.abs(h) > MAX_MILLER_INDEX))
    fail(
      "INVALID_MILLER",
      `Miller indices must be between -${MAX_MILLER_INDEX} and ${MAX_MILLER_INDEX}, got [${miller.join(", ")}]`,
      {
        miller,
        limit: MAX_MILLER_INDEX,
      },
    );
  const thickness = opts.thickness;
  if (!(Number.isFinite(thickness) && thickness > 0))
    fail("INVALID_THICKNESS", `thickness must be greater than 0, got ${thickness}`, { thickness });
  const vacuum = opts.vacuum ?? 15;
  if (!(Number.isFinite(vacuum) && vacuum >= 0)) fail("INVALID_VACUUM", `vacuum must be 0 or more, got ${vacuum}`, { vacuum });
  const maxNormal = opts.max_normal_search === undefined ? 1 : opts.max_normal_search;
  if (maxNormal !== null && !(Number.isInteger(maxNormal) && maxNormal >= 0 && maxNormal <= MAX_NORMAL_SEARCH))
    fail("INVALID_MAX_NORMAL_SEARCH", `max_normal_search must be an integer from 0 to ${MAX_NORMAL_SEARCH}, got ${maxNormal}`, {
      max_normal_search: maxNormal,
      limit: MAX_NORMAL_SEARCH,
    });
  if (bulk.length === 0) fail("INVALID_STRUCTURE", "A slab needs a structure with at least one site");

  // Sizes first, from the oriented cell's volume and the thickness: nothing is allocated for a
  // slab over the cap.
  const basis = orientedBasis(lattice, miller, maxNormal);
  const inPlanes = Number.isInteger(thickness);
  const hpl = Math.round((basis.projHeight / basis.dhkl) * 1e8) / 1e8;
  const nLayersSlab = Math.ceil(inPlanes ? thickness / hpl : thickness / basis.projHeight);
  const nLayersVac = Math.ceil(vacuum / basis.projHeight);
  const oucAtoms = bulk.length * basis.nCells;
  checkAtomLimit(oucAtoms, "The oriented unit cell");
  checkAtomLimit(oucAtoms * nLayersSlab, "The slab");

  const oc = orientedUnitCell(bulk, lattice, miller, maxNormal, basis);
  const center = opts.center_slab ?? true;
  const primitive = opts.primitive ?? true;
  const zs: number[] = [];
  for (let i = 0; i < oc.ouc.species.length; i++) zs.push(oc.ouc.frac[3 * i + 2] as number);
  const shifts = terminationShifts(zs, oc.projHeight);
  const total = shifts.length * oucAtoms * nLayersSlab;
  if (total > MAX_SLAB_TOTAL_ATOMS)
    fail(
      "TOO_MANY_ATOMS",
      `This surface has ${shifts.length} terminations of ${oucAtoms * nLayersSlab} atoms each: ${total} atoms to build, more than the limit of ${MAX_SLAB_TOTAL_ATOMS} (use a lower Miller index or max_normal_search)`,
      { n_terminations: shifts.length, n_atoms: oucAtoms * nLayersSlab, total_atoms: total, limit: MAX_SLAB_TOTAL_ATOMS },
    );
  const cells = shifts.map((shift) => buildSlab(oc, shift, nLayersSlab, nLayersVac, center, primitive));
  let finals = groupCells(cells).map((g) => cells[g[0] as number] as Cell);
  if (opts.symmetrize) {
    const sym = finals.flatMap((c) => symmetrizedSlabs(c, bulk.length));
    finals = groupCells(sym).map((g) => sym[g[0] as number] as Cell);
  }
  return finals;
};

/** The `slab` operation: one termination of the requested surface and what describes it. */
export const slab = (bulk: Structure, opts: SlabOptions): SlabResultCore => {
  const cells = generateSlabs(bulk, opts);
  const index = opts.termination_index ?? 0;
  if (!Number.isInteger(index) || index < 0 || index >= cells.length)
    fail(
      "INVALID_TERMINATION",
      cells.length
        ? `termination_index must be an integer from 0 to ${cells.length - 1} (this surface has ${cells.length} termination${cells.length > 1 ? "s" : ""}), got ${index}`
        : `no termination of this surface could be built${opts.symmetrize ? " with symmetric faces; try a thicker slab" : ""}`,
      { termination_index: index, n_terminations: cells.length },
    );
  const cell = cells[index] as Cell;
  const structure = cellToStructure(cell);
  const { thickness, height, area } = extentAlongNormal(cell);
  return {
    structure,
    nTerminations: cells.length,
    terminationIndex: index,
    thicknessAngstroms: thickness,
    vacuumAngstroms: height - thickness,
    surfaceArea: area,
    formula: formula(composition(cell.species)),
  };
};
