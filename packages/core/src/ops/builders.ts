/**
 * Builders of `/api/build`: strain, doping, combinatorial and random substitution. Results are
 * pymatgen's (conformance tests run pymatgen on the same inputs): strain is `Structure.apply_strain`
 * on lattice axes or `Deformation(F).apply_to_structure` in the Cartesian frame, and configurations
 * are grouped into symmetry-distinct classes as `StructureMatcher().group_structures` groups them:
 * two dopings of the same host are the same structure exactly when a symmetry operation of the
 * host maps one set of doped sites onto the other.
 */
import { requireElement } from "../elements.ts";
import { fail } from "../errors.ts";
import { cellGeometry } from "../geometry/neighbors.ts";
import { majorityElement } from "../geometry/sites.ts";
import { Lattice, type Mat3, type Vec3 } from "../lattice.ts";
import { speciesOf } from "../pymatgen.ts";
import { type SiteSpecies, Structure } from "../structure.ts";
import { DEFAULT_SYMPREC, symmetryOperations } from "../symmetry.ts";
import { requireLattice } from "./build.ts";

/** A list of generated structures with a label each; `truncated` when a cap cut the list. */
export interface BuildList {
  structures: Structure[];
  labels: string[];
  truncated: boolean;
}

// ---------------------------------------------------------------------------------------------
// Strain

export const STRAIN_TYPES = ["uniaxial", "biaxial", "hydrostatic", "shear"] as const;
export const STRAIN_FRAMES = ["lattice", "cartesian"] as const;
export const STRAIN_SWEEPS = ["symmetric", "one_sided"] as const;
export const SHEAR_PLANES = ["xy", "yz", "xz"] as const;
/** Largest strain magnitude accepted (as a fraction): 50 %. */
export const MAX_STRAIN = 0.5;
/** Most structures one strain sweep may produce. */
export const MAX_STRAIN_STEPS = 100;

export interface StrainOptions {
  type: string;
  axis?: string;
  magnitude: number;
  nSteps?: number;
  frame?: string;
  sweep?: string;
  plane?: string;
}

const AXES: Record<string, number> = { a: 0, b: 1, c: 2, x: 0, y: 1, z: 2 };

/** numpy.linspace(start, stop, n): start + k·step, the last value exactly stop. */
const linspace = (start: number, stop: number, n: number): number[] => {
  const step = (stop - start) / (n - 1);
  return Array.from({ length: n }, (_, k) => (k === n - 1 ? stop : start + k * step));
};

/** The strain values of a request: one value, or a sweep of `n` values. */
export const strainValues = (magnitude: number, n: number, sweep: string): number[] => {
  if (n <= 1) return [magnitude];
  // symmetric: −|m| … +|m| (for energy–strain curves); one_sided: m/n, 2m/n, … m keeps the sign
  return sweep === "one_sided"
    ? Array.from({ length: n }, (_, k) => (magnitude * (k + 1)) / n)
    : linspace(-Math.abs(magnitude), Math.abs(magnitude), n);
};

const checkChoice = (value: string, allowed: readonly string[], code: string, field: string): void => {
  if (!allowed.includes(value))
    fail(code, `${field} must be one of ${allowed.join(", ")}; got ${JSON.stringify(value)}`, { field, value, allowed });
};

/** Copy of `s` on a new lattice with the same fractional coordinates (pymatgen's lattice setter). */
const onLattice = (s: Structure, lattice: Lattice): Structure => {
  const f = s.frac;
  const m = lattice.matrix;
  const cart = new Float64Array(f.length);
  for (let i = 0; i < s.length; i++) {
    const a = f[3 * i] as number,
      b = f[3 * i + 1] as number,
      c = f[3 * i + 2] as number;
    for (let j = 0; j < 3; j++) cart[3 * i + j] = a * (m[0][j] as number) + b * (m[1][j] as number) + c * (m[2][j] as number);
  }
  return new Structure({
    lattice,
    species: s.species,
    cart,
    labels: s.labels,
    siteProperties: s.siteProperties,
    charge: s.charge,
    properties: s.properties,
  });
};

/**
 * The deformation gradient of one strain value. Lattice frame: row k of the lattice times
 * (1 + m) for every strained axis k (`apply_strain`). Cartesian frame: F = I + ε, with ε diagonal
 * for normal strains and, for shear, the symmetric tensor of engineering shear m (ε_ij = ε_ji = m/2,
 * pymatgen's `Strain.from_voigt`), so shear never rotates the cell.
 */
const strained = (s: Structure, lattice: Lattice, o: Required<StrainOptions>, m: number): Structure => {
  const k = AXES[o.axis] as number;
  const normal: Vec3 =
    o.type === "uniaxial"
      ? ([0, 1, 2].map((i) => (i === k ? m : 0)) as Vec3)
      : o.type === "biaxial"
        ? [m, m, 0]
        : o.type === "hydrostatic"
          ? [m, m, m]
          : [0, 0, 0];
  const rows = lattice.matrix;
  if (o.type !== "shear" && o.frame === "lattice")
    return onLattice(s, new Lattice(rows.map((r, i) => r.map((v) => v * (1 + normal[i]!))) as Mat3, lattice.pbc));
  const F: Mat3 = [
    [1 + normal[0], 0, 0],
    [0, 1 + normal[1], 0],
    [0, 0, 1 + normal[2]],
  ];
  if (o.type === "shear") {
    const [i, j] = o.plane === "xy" ? [0, 1] : o.plane === "yz" ? [1, 2] : [0, 2];
    F[i]![j] = m / 2;
    F[j]![i] = m / 2;
  }
  // each lattice row v becomes F·v
  const next = rows.map((v) => [0, 1, 2].map((r) => F[r]![0] * v[0] + F[r]![1] * v[1] + F[r]![2] * v[2])) as Mat3;
  return onLattice(s, new Lattice(next, lattice.pbc));
};

export const strainLabel = (o: Required<StrainOptions>, m: number): string => {
  const pct = `${m >= 0 ? "+" : ""}${(m * 100).toFixed(2)}%`;
  if (o.type === "hydrostatic") return `hydrostatic ${pct}`;
  if (o.type === "shear") return `shear ${o.plane} ${pct}`;
  const where = o.type === "biaxial" ? (o.frame === "lattice" ? "ab" : "xy") : o.axis;
  return `${o.type} ${where}${o.frame === "cartesian" ? " (Cartesian)" : ""} ${pct}`;
};

export interface StrainResult extends BuildList {
  strains: number[];
}

export const strain = (s: Structure, opts: StrainOptions): StrainResult => {
  const lattice = requireLattice(s, "Strain");
  const o: Required<StrainOptions> = {
    axis: "c",
    nSteps: 1,
    frame: "lattice",
    sweep: "symmetric",
    plane: "xy",
    ...opts,
  };
  checkChoice(o.type, STRAIN_TYPES, "INVALID_STRAIN_TYPE", "strain_type");
  checkChoice(o.frame, STRAIN_FRAMES, "INVALID_STRAIN_FRAME", "frame");
  checkChoice(o.sweep, STRAIN_SWEEPS, "INVALID_STRAIN_SWEEP", "sweep");
  if (o.type === "uniaxial")
    checkChoice(o.axis, o.frame === "lattice" ? ["a", "b", "c"] : ["a", "b", "c", "x", "y", "z"], "INVALID_AXIS", "axis");
  if (o.type === "shear") checkChoice(o.plane, SHEAR_PLANES, "INVALID_AXIS", "plane");
  if (!Number.isFinite(o.magnitude) || Math.abs(o.magnitude) > MAX_STRAIN)
    fail(
      "INVALID_STRAIN",
      `magnitude must be a fraction between -${MAX_STRAIN} and ${MAX_STRAIN} (0.02 = 2 %); got ${o.magnitude}`,
      {
        magnitude: o.magnitude,
        limit: MAX_STRAIN,
      },
    );
  if (!Number.isInteger(o.nSteps) || o.nSteps > MAX_STRAIN_STEPS)
    fail("TOO_MANY_STRUCTURES", `n_steps must be an integer up to ${MAX_STRAIN_STEPS}; got ${o.nSteps}`, {
      n_steps: o.nSteps,
      limit: MAX_STRAIN_STEPS,
    });
  if (o.nSteps > 1 && o.magnitude === 0)
    fail("INVALID_STRAIN", "A sweep (n_steps > 1) needs a non-zero magnitude", { magnitude: 0 });
  const values = strainValues(o.magnitude, o.nSteps, o.sweep);
  const structures = values.map((m) => strained(s, lattice, o, m));
  return { structures, labels: values.map((m) => strainLabel(o, m)), strains: values, truncated: false };
};

// ---------------------------------------------------------------------------------------------
// Seeded random numbers, identical in the service and the browser

/**
 * splitmix64-seeded xoshiro128** (32-bit, exact in JavaScript's integers): the same seed gives the
 * same draws on every platform, unlike a host language's own generator.
 */
export const seededRandom = (seed: number): (() => number) => {
  let x = BigInt.asUintN(64, BigInt(Math.trunc(seed)));
  const next64 = (): bigint => {
    x = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n);
    let z = x;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    return z ^ (z >> 31n);
  };
  const a = next64();
  const b = next64();
  const s = new Uint32Array([Number(a & 0xffffffffn), Number(a >> 32n), Number(b & 0xffffffffn), Number(b >> 32n)]);
  if (s[0] === 0 && s[1] === 0 && s[2] === 0 && s[3] === 0) s[0] = 1;
  const rotl = (v: number, k: number) => ((v << k) | (v >>> (32 - k))) >>> 0;
  return () => {
    const result = Math.imul(rotl(Math.imul(s[1] as number, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] as number) << 9;
    s[2] = (s[2] as number) ^ (s[0] as number);
    s[3] = (s[3] as number) ^ (s[1] as number);
    s[1] = (s[1] as number) ^ (s[2] as number);
    s[0] = (s[0] as number) ^ (s[3] as number);
    s[2] = (s[2] as number) ^ t;
    s[3] = rotl(s[3] as number, 11);
    return result / 4294967296;
  };
};

/** `k` distinct items of `pool` in draw order (partial Fisher–Yates). */
const sample = <T>(pool: readonly T[], k: number, random: () => number): T[] => {
  const a = [...pool];
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(random() * (a.length - i));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a.slice(0, k);
};

// ---------------------------------------------------------------------------------------------
// Symmetry-distinct configurations

/**
 * The permutation of sites under each symmetry operation of the host (site i goes to perm[i]);
 * operations that do not map every site onto a site of the same species (a tolerance problem of a
 * slightly distorted input) are left out, which can only split classes, never merge them wrongly.
 */
const ROUND = 1000;
/** A fractional coordinate wrapped into [0, 1) on a grid of 1/ROUND (top level: no closure per call in hot loops). */
const roundedFrac = (v: number): number => {
  const w = Math.round((v - Math.floor(v)) * ROUND);
  return w >= ROUND ? 0 : w;
};

export const sitePermutations = (s: Structure, symprec = DEFAULT_SYMPREC): Int32Array[] => {
  const lattice = requireLattice(s, "Symmetry-distinct configurations");
  const ops = symmetryOperations(s, { symprec });
  const n = s.length;
  const f = s.frac;
  const m = lattice.matrix;
  const typeOf = new Map<string, number>();
  const type = s.species.map((sp) => {
    const k = JSON.stringify(sp);
    if (!typeOf.has(k)) typeOf.set(k, typeOf.size);
    return typeOf.get(k) as number;
  });
  const tol = 3 * symprec;
  const tol2 = tol * tol;
  // Sites binned on a fractional grid whose cells are at least `tol` wide (measured between
  // faces), so an image's match lies in its own bin or a neighbouring one: O(n) per operation.
  const { widths } = cellGeometry([...m[0], ...m[1], ...m[2]]);
  const bins = widths.map((w) => Math.max(1, Math.min(512, Math.floor(w / tol)))) as [number, number, number];
  const binOf = (x: number, k: number): number => {
    const b = bins[k] as number;
    const v = Math.floor((x - Math.floor(x)) * b);
    return v >= b ? 0 : v;
  };
  const grid = new Map<number, number[]>();
  const cellKey = (i: number, j: number, k: number) => (i * bins[1] + j) * bins[2] + k;
  for (let i = 0; i < n; i++) {
    const key = cellKey(binOf(f[3 * i] as number, 0), binOf(f[3 * i + 1] as number, 1), binOf(f[3 * i + 2] as number, 2));
    const list = grid.get(key);
    if (list) list.push(i);
    else grid.set(key, [i]);
  }
  const around = (b: number, k: number): number[] => {
    const nb = bins[k] as number;
    return nb === 1 ? [0] : nb === 2 ? [0, 1] : [(b + nb - 1) % nb, b, (b + 1) % nb];
  };
  // Fast path: an image of an exactly symmetric site lands on the same rounded fractional
  // position; the grid search below is the fallback that honours the tolerance everywhere.
  const roundedKey = (a: number, b: number, c: number): number =>
    (roundedFrac(a) * ROUND + roundedFrac(b)) * ROUND + roundedFrac(c);
  const exact = new Map<number, number>();
  for (let i = 0; i < n; i++) exact.set(roundedKey(f[3 * i] as number, f[3 * i + 1] as number, f[3 * i + 2] as number), i);
  const within = (px: number, py: number, pz: number, j: number): boolean => {
    let d0 = px - (f[3 * j] as number);
    let d1 = py - (f[3 * j + 1] as number);
    let d2 = pz - (f[3 * j + 2] as number);
    d0 -= Math.round(d0);
    d1 -= Math.round(d1);
    d2 -= Math.round(d2);
    const cx = d0 * m[0][0] + d1 * m[1][0] + d2 * m[2][0];
    const cy = d0 * m[0][1] + d1 * m[1][1] + d2 * m[2][1];
    const cz = d0 * m[0][2] + d1 * m[1][2] + d2 * m[2][2];
    return cx * cx + cy * cy + cz * cz <= tol2;
  };
  const perms: Int32Array[] = [];
  const p: Vec3 = [0, 0, 0];
  for (const op of ops) {
    const r = op.rotation;
    const t = op.translation;
    const perm = new Int32Array(n).fill(-1);
    let ok = true;
    for (let i = 0; i < n && ok; i++) {
      const x = f[3 * i] as number,
        y = f[3 * i + 1] as number,
        z = f[3 * i + 2] as number;
      for (let k = 0; k < 3; k++) p[k] = (r[k] as Vec3)[0] * x + (r[k] as Vec3)[1] * y + (r[k] as Vec3)[2] * z + (t[k] as number);
      let found = -1;
      const guess = exact.get(roundedKey(p[0], p[1], p[2]));
      if (guess !== undefined && type[guess] === type[i] && within(p[0], p[1], p[2], guess)) {
        perm[i] = guess;
        continue;
      }
      search: for (const bi of around(binOf(p[0], 0), 0))
        for (const bj of around(binOf(p[1], 1), 1))
          for (const bk of around(binOf(p[2], 2), 2))
            for (const j of grid.get(cellKey(bi, bj, bk)) ?? []) {
              if (type[j] !== type[i]) continue;
              if (within(p[0], p[1], p[2], j)) {
                found = j;
                break search;
              }
            }
      if (found < 0) ok = false;
      else perm[i] = found;
    }
    if (ok) perms.push(perm);
  }
  return perms;
};

/** A configuration: which site gets which element (only the changed sites). */
export type Assignment = ReadonlyArray<readonly [number, string]>;

/** Element symbols as small numbers for the configuration codes (shared, grows as needed). */
const elementCode = new Map<string, number>();
const codeOf = (el: string): number => {
  let c = elementCode.get(el);
  if (c === undefined) {
    c = elementCode.size;
    elementCode.set(el, c);
  }
  return c;
};

/**
 * The smallest image of an assignment under the permutations: equal keys = the same structure.
 * Each image is a sorted list of numbers site × 4096 + element code, compared in place (no string
 * per operation), so a 48-operation group costs about a microsecond per configuration.
 */
export const canonicalKey = (a: Assignment, perms: readonly Int32Array[]): string => {
  const k = a.length;
  const els = a.map(([, el]) => codeOf(el));
  const image = new Float64Array(k);
  let best: Float64Array | null = null;
  const consider = (p: Int32Array | null) => {
    for (let m = 0; m < k; m++) {
      const site = (a[m] as readonly [number, string])[0];
      image[m] = (p ? (p[site] as number) : site) * 4096 + (els[m] as number);
    }
    image.sort();
    if (best === null) {
      best = Float64Array.from(image);
      return;
    }
    for (let m = 0; m < k; m++) {
      const d = (image[m] as number) - (best[m] as number);
      if (d < 0) {
        best.set(image);
        return;
      }
      if (d > 0) return;
    }
  };
  if (perms.length === 0) consider(null);
  for (const p of perms) consider(p);
  return Array.from(best ?? [], (x: number) => x.toString(36)).join(",");
};

/** The host with the assignment applied: each listed site becomes the element, label = element, no properties. */
export const applyAssignment = (s: Structure, a: Assignment): Structure => {
  const species = [...s.species];
  const labels = [...s.labels];
  const props = [...s.siteProperties];
  for (const [i, el] of a) {
    species[i] = speciesOf(el) as SiteSpecies;
    labels[i] = el;
    props[i] = {};
  }
  return new Structure({
    lattice: s.lattice,
    species,
    cart: s.cart,
    labels,
    siteProperties: props,
    charge: s.charge,
    properties: s.properties,
  });
};

const checkIndices = (s: Structure, indices: readonly number[], field: string): void => {
  const bad = indices.filter((i) => !Number.isInteger(i) || i < 0 || i >= s.length);
  if (bad.length > 0)
    fail("INVALID_INDEX", `${field}: ${bad.join(", ")} out of range for ${s.length} sites (0 to ${s.length - 1})`, {
      field,
      invalid: bad,
      n_sites: s.length,
    });
};

const hostPool = (s: Structure, hostElement: string): number[] => {
  const pool: number[] = [];
  for (let i = 0; i < s.length; i++) if (majorityElement(s.species[i]) === hostElement) pool.push(i);
  if (pool.length === 0)
    fail("HOST_ELEMENT_NOT_FOUND", `No site of ${hostElement} in the structure`, { host_element: hostElement });
  return pool;
};

/** n choose k, saturating at `Number.MAX_SAFE_INTEGER`. */
export const binomial = (n: number, k: number): number => {
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= Math.min(k, n - k); i++) {
    r = (r * (n - i + 1)) / i;
    if (r > Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
  }
  return Math.round(r);
};

/** Most configurations an enumeration may visit before grouping (the cap is checked before any work). */
export const MAX_ENUMERATION = 100_000;

/** Every k-subset of 0..n-1 in lexicographic order. */
function* combinations(n: number, k: number): Generator<number[]> {
  const c = Array.from({ length: k }, (_, i) => i);
  if (k > n) return;
  while (true) {
    yield [...c];
    let i = k - 1;
    while (i >= 0 && c[i] === n - k + i) i--;
    if (i < 0) return;
    c[i] = (c[i] as number) + 1;
    for (let j = i + 1; j < k; j++) c[j] = (c[j - 1] as number) + 1;
  }
}

export interface ConfigurationList extends BuildList {
  /** How many configurations of the full enumeration each returned structure stands for. */
  multiplicities: number[];
  /** Number of configurations visited (before grouping by symmetry). */
  n_configurations: number;
}

export interface DopingOptions {
  dopant: string;
  hostElement?: string;
  concentration: number;
  enumerate?: boolean;
  targetIndices?: readonly number[] | null;
  seed?: number;
  maxStructures: number;
  symprec?: number;
}

/**
 * Substitutional doping. Without enumeration: one configuration of `concentration` sites drawn
 * at random (seeded) from the pool. With enumeration: every `concentration`-subset of the pool,
 * grouped into symmetry-distinct structures (first member of each class in lexicographic order),
 * cut at `maxStructures` with `truncated`.
 */
export const dope = (s: Structure, o: DopingOptions): ConfigurationList => {
  requireLattice(s, "Doping");
  requireElement(o.dopant, "dopant");
  let pool: number[];
  if (o.targetIndices && o.targetIndices.length > 0) {
    checkIndices(s, o.targetIndices, "target_indices");
    pool = [...new Set(o.targetIndices)];
  } else {
    if (!o.hostElement)
      fail("MISSING_HOST", "Give host_element or a non-empty target_indices", { fields: ["host_element", "target_indices"] });
    requireElement(o.hostElement, "host_element");
    pool = hostPool(s, o.hostElement as string);
  }
  const k = o.concentration;
  if (!Number.isInteger(k) || k < 1 || k > pool.length)
    fail(
      "INVALID_CONCENTRATION",
      `concentration must be a whole number of sites from 1 to ${pool.length} (the candidate sites); got ${k}`,
      {
        concentration: k,
        n_candidates: pool.length,
      },
    );
  const label = (sites: readonly number[]) =>
    `Doped: ${sites.map((i) => majorityElement(s.species[i])).join(",")} → ${o.dopant} at sites [${sites.join(", ")}]`;
  if (!o.enumerate) {
    const sites = sample(pool, k, seededRandom(o.seed ?? 0)).sort((a, b) => a - b);
    return {
      structures: [
        applyAssignment(
          s,
          sites.map((i) => [i, o.dopant] as const),
        ),
      ],
      labels: [label(sites)],
      truncated: false,
      multiplicities: [1],
      n_configurations: 1,
    };
  }
  const total = binomial(pool.length, k);
  if (total > MAX_ENUMERATION)
    fail(
      "TOO_MANY_CONFIGURATIONS",
      `Enumerating ${k} of ${pool.length} sites visits ${total} configurations, more than the limit of ${MAX_ENUMERATION}`,
      {
        n_configurations: total,
        limit: MAX_ENUMERATION,
      },
    );
  return grouped(
    s,
    (function* () {
      for (const c of combinations(pool.length, k)) yield c.map((j) => [pool[j] as number, o.dopant] as const);
    })(),
    o.maxStructures,
    o.symprec,
    (a) => label(a.map(([i]) => i)),
  );
};

/** Group assignments by symmetry; the first of each class represents it, in visiting order. */
const grouped = (
  s: Structure,
  assignments: Iterable<Assignment>,
  maxStructures: number,
  symprec: number | undefined,
  label: (a: Assignment, k: number) => string,
): ConfigurationList => {
  const perms = sitePermutations(s, symprec);
  const classes = new Map<string, { a: Assignment; n: number }>();
  let visited = 0;
  for (const a of assignments) {
    visited++;
    const key = canonicalKey(a, perms);
    const c = classes.get(key);
    if (c) c.n++;
    else classes.set(key, { a, n: 1 });
  }
  const all = [...classes.values()];
  const kept = all.slice(0, Math.max(0, maxStructures));
  return {
    structures: kept.map((c) => applyAssignment(s, c.a)),
    labels: kept.map((c, k) => label(c.a, k)),
    multiplicities: kept.map((c) => c.n),
    truncated: kept.length < all.length,
    n_configurations: visited,
  };
};

export interface SubstitutionGroup {
  targetIndices: readonly number[];
  replacementElements: readonly string[];
}

/**
 * Combinatorial substitution: the Cartesian product of the groups' replacement lists (first
 * group slowest, as Python's itertools.product walks it); every site of group g gets its element,
 * later groups winning on overlaps. Configurations equal by symmetry are one structure.
 */
export const substitute = (
  s: Structure,
  groups: readonly SubstitutionGroup[],
  maxStructures: number,
  symprec?: number,
): ConfigurationList => {
  requireLattice(s, "Substitution");
  if (groups.length === 0) fail("EMPTY_GROUPS", "groups is empty: give at least one {target_indices, replacement_elements}");
  groups.forEach((g, k) => {
    if (g.targetIndices.length === 0 || g.replacementElements.length === 0)
      fail("EMPTY_GROUPS", `group ${k + 1} has no target_indices or no replacement_elements`, { group: k + 1 });
    checkIndices(s, g.targetIndices, `groups[${k}].target_indices`);
    for (const el of g.replacementElements) requireElement(el, `groups[${k}].replacement_elements`);
  });
  const total = groups.reduce((n, g) => n * g.replacementElements.length, 1);
  if (total > MAX_ENUMERATION)
    fail(
      "TOO_MANY_CONFIGURATIONS",
      `The groups combine into ${total} configurations, more than the limit of ${MAX_ENUMERATION}`,
      {
        n_configurations: total,
        limit: MAX_ENUMERATION,
      },
    );
  function* product(): Generator<Assignment> {
    const idx = groups.map(() => 0);
    while (true) {
      const site = new Map<number, string>();
      groups.forEach((g, k) => {
        for (const i of g.targetIndices) site.set(i, g.replacementElements[idx[k] as number] as string);
      });
      yield [...site].sort((a, b) => a[0] - b[0]);
      let k = groups.length - 1;
      while (k >= 0 && (idx[k] as number) + 1 === groups[k]!.replacementElements.length) idx[k--] = 0;
      if (k < 0) return;
      idx[k] = (idx[k] as number) + 1;
    }
  }
  const label = (a: Assignment, k: number) => {
    const count = new Map<string, number>();
    for (const [, el] of a) count.set(el, (count.get(el) ?? 0) + 1);
    return `[${k}] ${[...count].map(([el, n]) => `${el}(${n} sites)`).join(" + ")}`;
  };
  return grouped(s, product(), maxStructures, symprec, label);
};

export interface RandomSubstitutionOptions {
  hostElement?: string | null;
  targetIndices?: readonly number[] | null;
  dopants: readonly { element: string; count: number }[];
  nSamples: number;
  deduplicate: boolean;
  seed?: number | null;
  symprec?: number;
}

/**
 * Random placement of fixed dopant counts on the candidate sites, seeded (a missing seed is 0, so
 * every answer can be reproduced). With `deduplicate`, arrangements equal by symmetry count once;
 * attempts stop at 50 × n_samples, so fewer may come back (the answer says how many attempts).
 */
export const randomSubstitute = (s: Structure, o: RandomSubstitutionOptions): ConfigurationList & { attempts: number } => {
  requireLattice(s, "Random substitution");
  let pool: number[];
  if (o.targetIndices && o.targetIndices.length > 0) {
    checkIndices(s, o.targetIndices, "target_indices");
    pool = [...new Set(o.targetIndices)];
  } else if (o.hostElement) {
    requireElement(o.hostElement, "host_element");
    pool = hostPool(s, o.hostElement);
  } else
    return fail("MISSING_HOST", "Give host_element or a non-empty target_indices", {
      fields: ["host_element", "target_indices"],
    });
  const dopants = o.dopants.filter((d) => d.count > 0);
  if (dopants.length === 0) fail("NO_DOPANTS", "No dopant with a count above 0");
  for (const d of dopants) requireElement(d.element, "dopants[].element");
  const need = dopants.reduce((n, d) => n + d.count, 0);
  if (need > pool.length)
    fail("INVALID_CONCENTRATION", `The dopants need ${need} sites; only ${pool.length} candidate sites`, {
      needed: need,
      n_candidates: pool.length,
    });
  const random = seededRandom(o.seed ?? 0);
  const perms = o.deduplicate ? sitePermutations(s, o.symprec) : [];
  const seen = new Map<string, number>();
  const kept: Assignment[] = [];
  const maxAttempts = o.deduplicate ? 50 * o.nSamples : o.nSamples;
  let attempts = 0;
  while (kept.length < o.nSamples && attempts < maxAttempts) {
    attempts++;
    const sites = sample(pool, need, random);
    const a: [number, string][] = [];
    let at = 0;
    for (const d of dopants) for (let j = 0; j < d.count; j++) a.push([sites[at++] as number, d.element]);
    a.sort((x, y) => x[0] - y[0]);
    if (o.deduplicate) {
      const key = canonicalKey(a, perms);
      const k = seen.get(key);
      if (k !== undefined) continue;
      seen.set(key, kept.length);
    }
    kept.push(a);
  }
  const tag = dopants.map((d) => `${d.element}×${d.count}`).join(" + ");
  return {
    structures: kept.map((a) => applyAssignment(s, a)),
    labels: kept.map((_, k) => `[${k}] random: ${tag}`),
    multiplicities: kept.map(() => 1),
    truncated: false,
    n_configurations: attempts,
    attempts,
  };
};
