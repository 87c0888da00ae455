/**
 * Reading and writing pymatgen's structure dictionaries (`Structure.as_dict()` and
 * `Molecule.as_dict()`), plus the reduced form viewers send (lattice matrix, sites with `abc`
 * or `xyz` and a species list). Output is exactly pymatgen's form, so it loads with
 * `Structure.from_dict` / `Molecule.from_dict`.
 */
import { requireElement } from "./elements.ts";
import { fail } from "./errors.ts";
import { Lattice, type Mat3, type Vec3 } from "./lattice.ts";
import { speciesString as defaultLabel, type SiteSpecies, type SpeciesEntry, Structure } from "./structure.ts";

export type SpeciesDict = {
  element: string;
  oxidation_state?: number;
  spin?: number | null;
  occu: number;
};
export type LatticeDict = {
  matrix: number[][];
  pbc: boolean[];
  a: number;
  b: number;
  c: number;
  alpha: number;
  beta: number;
  gamma: number;
  volume: number;
};
export type PeriodicSiteDict = {
  species: SpeciesDict[];
  abc: number[];
  properties: Record<string, unknown>;
  label: string;
  xyz: number[];
};
export type MoleculeSiteDict = {
  name: string;
  species: SpeciesDict[];
  xyz: number[];
  properties: Record<string, unknown>;
  label: string;
};
export type StructureDict = {
  "@module": "pymatgen.core.structure";
  "@class": "Structure";
  charge: number;
  lattice: LatticeDict;
  properties: Record<string, unknown>;
  sites: PeriodicSiteDict[];
};
export type MoleculeDict = {
  "@module": "pymatgen.core.structure";
  "@class": "Molecule";
  charge: number;
  spin_multiplicity: number;
  sites: MoleculeSiteDict[];
  properties: Record<string, unknown>;
};
export type AnyStructureDict = StructureDict | MoleculeDict;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const invalid = (message: string, field: string): never => fail("INVALID_STRUCTURE", message, { field });

const finite = (v: unknown, field: string): number => {
  if (typeof v !== "number" || !Number.isFinite(v)) invalid(`${field} must be a finite number`, field);
  return v as number;
};

const vec3 = (v: unknown, field: string): Vec3 => {
  if (!Array.isArray(v) || v.length !== 3) return invalid(`${field} must be an array of exactly 3 numbers`, field);
  return [finite(v[0], `${field}[0]`), finite(v[1], `${field}[1]`), finite(v[2], `${field}[2]`)];
};

const readLattice = (raw: unknown): Lattice => {
  if (!isObject(raw)) return invalid("lattice must be an object", "lattice");
  let pbc: [boolean, boolean, boolean] = [true, true, true];
  if (raw.pbc !== undefined) {
    if (!Array.isArray(raw.pbc) || raw.pbc.length !== 3 || !raw.pbc.every((b) => typeof b === "boolean"))
      invalid("lattice.pbc must be an array of 3 booleans", "lattice.pbc");
    pbc = raw.pbc as [boolean, boolean, boolean];
  }
  if (raw.matrix === undefined) {
    // Parameters only: pymatgen's from_parameters orientation.
    const p = ["a", "b", "c", "alpha", "beta", "gamma"].map((k) => finite(raw[k], `lattice.${k}`));
    const l = Lattice.fromParameters(
      p[0] as number,
      p[1] as number,
      p[2] as number,
      p[3] as number,
      p[4] as number,
      p[5] as number,
    );
    return new Lattice(l.matrix, pbc);
  }
  if (!Array.isArray(raw.matrix) || raw.matrix.length !== 3)
    return invalid("lattice.matrix must be a 3x3 array", "lattice.matrix");
  const m = raw.matrix.map((row, i) => vec3(row, `lattice.matrix[${i}]`)) as Mat3;
  return new Lattice(m, pbc);
};

/** Species entries are shared between sites (most sites carry one fully occupied element). */
const ORDERED_CACHE = new Map<string, SiteSpecies>();
const orderedSpecies = (element: string): SiteSpecies => {
  let s = ORDERED_CACHE.get(element);
  if (!s) {
    s = Object.freeze([Object.freeze({ element, occu: 1 })]);
    ORDERED_CACHE.set(element, s);
  }
  return s;
};

export const speciesOf = (element: string): SiteSpecies => {
  requireElement(element);
  return orderedSpecies(element);
};

const readSpecies = (raw: unknown, field: string): SiteSpecies => {
  if (typeof raw === "string") {
    requireElement(raw, field);
    return orderedSpecies(raw);
  }
  if (!Array.isArray(raw) || raw.length === 0) return invalid(`${field} must be a non-empty array of {element, occu}`, field);
  if (raw.length === 1) {
    const only = raw[0];
    if (isObject(only) && (only.occu === undefined || only.occu === 1) && only.oxidation_state === undefined) {
      const el = only.element ?? only.species;
      requireElement(el, `${field}[0].element`);
      return orderedSpecies(el as string);
    }
  }
  let total = 0;
  const out: SpeciesEntry[] = raw.map((sp, j) => {
    const f = `${field}[${j}]`;
    if (!isObject(sp)) return invalid(`${f} must be an object with element and occu`, f);
    const element = (sp.element ?? sp.species) as unknown;
    requireElement(element, `${f}.element`);
    const occu = sp.occu === undefined ? 1 : finite(sp.occu, `${f}.occu`);
    if (!(occu > 0 && occu <= 1 + 1e-8)) invalid(`${f}.occu must be in (0, 1], got ${occu}`, `${f}.occu`);
    total += occu;
    const entry: { element: string; occu: number; oxidation_state?: number; spin?: number | null } = {
      element: element as string,
      occu,
    };
    if (sp.oxidation_state !== undefined && sp.oxidation_state !== null)
      entry.oxidation_state = finite(sp.oxidation_state, `${f}.oxidation_state`);
    if (entry.oxidation_state !== undefined && "spin" in sp) entry.spin = sp.spin === null ? null : finite(sp.spin, `${f}.spin`);
    return entry;
  });
  if (total > 1 + 1e-8) invalid(`${field}: occupancies sum to ${total}, more than 1`, field);
  return out;
};

/**
 * Read a structure from pymatgen's dictionary or the reduced viewer form.
 * Every malformation is a 400 INVALID_STRUCTURE (or INVALID_ELEMENT) naming the field.
 */
export const fromDict = (raw: unknown): Structure => {
  if (!isObject(raw)) return invalid("structure must be a JSON object", "structure");
  const cls = raw["@class"];
  if (cls !== undefined && cls !== "Structure" && cls !== "Molecule" && cls !== "IStructure" && cls !== "IMolecule")
    invalid(`Unsupported @class ${JSON.stringify(cls)}; expected Structure or Molecule`, "@class");
  const isMolecule =
    cls === "Molecule" || cls === "IMolecule" || (cls === undefined && (raw.lattice === undefined || raw.lattice === null));
  const lattice = isMolecule ? null : readLattice(raw.lattice);
  const sites = raw.sites;
  if (!Array.isArray(sites)) return invalid("structure.sites must be an array", "sites");
  const n = sites.length;
  const cart = new Float64Array(3 * n);
  const species: SiteSpecies[] = new Array(n);
  const labels: string[] = new Array(n);
  const props: Record<string, unknown>[] = new Array(n);
  const fr: Vec3 = [0, 0, 0];
  for (let i = 0; i < n; i++) {
    const site = sites[i] as unknown;
    if (!isObject(site)) return invalid(`sites[${i}] must be an object`, `sites[${i}]`);
    const sp = readSpecies(site.species ?? site.element, `sites[${i}].species`);
    species[i] = sp;
    let p: Vec3;
    if (lattice && site.abc !== undefined) p = lattice.toCartesian(vec3(site.abc, `sites[${i}].abc`), fr);
    else if (site.xyz !== undefined) p = vec3(site.xyz, `sites[${i}].xyz`);
    else return invalid(`sites[${i}] needs ${lattice ? "abc or xyz" : "xyz"} coordinates`, `sites[${i}]`);
    if (!(Number.isFinite(p[0]) && Number.isFinite(p[1]) && Number.isFinite(p[2])))
      invalid(`sites[${i}]: coordinates beyond the floating-point range`, `sites[${i}]`);
    cart[3 * i] = p[0];
    cart[3 * i + 1] = p[1];
    cart[3 * i + 2] = p[2];
    const label = site.label;
    if (label !== undefined && label !== null && typeof label !== "string")
      invalid(`sites[${i}].label must be a string`, `sites[${i}].label`);
    labels[i] = typeof label === "string" ? label : defaultLabel(sp);
    const pr = site.properties;
    if (pr !== undefined && pr !== null && !isObject(pr))
      invalid(`sites[${i}].properties must be an object`, `sites[${i}].properties`);
    props[i] = (pr as Record<string, unknown> | undefined) ?? {};
  }
  const charge = raw.charge === undefined || raw.charge === null ? 0 : finite(raw.charge, "charge");
  const properties = raw.properties;
  if (properties !== undefined && properties !== null && !isObject(properties))
    invalid("properties must be an object", "properties");
  const spin = raw.spin_multiplicity;
  const structure = new Structure({
    lattice,
    species,
    cart,
    labels,
    siteProperties: props,
    charge,
    properties: (properties as Record<string, unknown> | undefined) ?? {},
    spinMultiplicity: typeof spin === "number" ? spin : null,
  });
  // Fractional coordinates are needed by every periodic answer (cached): overflowing ones would
  // be sent as null (found by fuzzing).
  if (lattice)
    for (const f of structure.frac)
      if (!Number.isFinite(f)) invalid("fractional coordinates beyond the floating-point range", "sites");
  return structure;
};

const speciesDicts = (sp: SiteSpecies): SpeciesDict[] =>
  sp.map((s) =>
    s.oxidation_state === undefined
      ? { element: s.element, occu: s.occu }
      : { element: s.element, oxidation_state: s.oxidation_state, spin: s.spin ?? null, occu: s.occu },
  );

export const latticeDict = (l: Lattice): LatticeDict => {
  const [a, b, c] = l.lengths;
  const [alpha, beta, gamma] = l.angles;
  return { matrix: l.matrix.map((r) => [...r]), pbc: [...l.pbc], a, b, c, alpha, beta, gamma, volume: l.volume };
};

/**
 * Site properties as pymatgen holds them after loading: a key present on any site is present on
 * every site, `null` where it was missing. pymatgen's own `Molecule.from_dict` fails on
 * dictionaries whose sites carry different keys, so this is also what makes our output loadable.
 */
const uniformProperties = (
  props: readonly Record<string, unknown>[],
): ((p: Record<string, unknown>) => Record<string, unknown>) => {
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const p of props)
    for (const k in p)
      if (!seen.has(k)) {
        seen.add(k);
        keys.push(k);
      }
  if (keys.length === 0) return (p) => p;
  return (p) => {
    let complete = true;
    for (const k of keys) if (!(k in p)) complete = false;
    return complete ? p : Object.fromEntries(keys.map((k) => [k, k in p ? p[k] : null]));
  };
};

/** Write pymatgen's dictionary: same keys, same order, same classes. */
export const toDict = (s: Structure): AnyStructureDict => {
  const n = s.length;
  // An edit can leave the floating-point range (an atom added at 1e308 in a cell gives infinite
  // fractional coordinates): JSON would carry them as null, so such a result is refused instead.
  const outOfRange = (a: ArrayLike<number>) => {
    for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i] as number)) return true;
    return false;
  };
  if (outOfRange(s.cart) || (s.lattice && outOfRange(s.frac)))
    invalid("the result has coordinates beyond the floating-point range", "sites");
  const props = uniformProperties(s.siteProperties);
  const c = s.cart;
  const speciesCache = new Map<SiteSpecies, SpeciesDict[]>();
  const spDict = (sp: SiteSpecies): SpeciesDict[] => {
    let d = speciesCache.get(sp);
    if (!d) {
      d = speciesDicts(sp);
      speciesCache.set(sp, d);
    }
    return d;
  };
  if (!s.lattice) {
    const sites: MoleculeSiteDict[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const sp = s.species[i] as SiteSpecies;
      sites[i] = {
        name: defaultLabel(sp),
        species: spDict(sp),
        xyz: [c[3 * i] as number, c[3 * i + 1] as number, c[3 * i + 2] as number],
        properties: props(s.siteProperties[i] as Record<string, unknown>),
        label: s.labels[i] as string,
      };
    }
    return {
      "@module": "pymatgen.core.structure",
      "@class": "Molecule",
      charge: s.charge,
      spin_multiplicity: s.spinMultiplicity ?? 1,
      sites,
      properties: s.properties,
    };
  }
  const f = s.frac;
  const sites: PeriodicSiteDict[] = new Array(n);
  for (let i = 0; i < n; i++) {
    sites[i] = {
      species: spDict(s.species[i] as SiteSpecies),
      abc: [f[3 * i] as number, f[3 * i + 1] as number, f[3 * i + 2] as number],
      properties: props(s.siteProperties[i] as Record<string, unknown>),
      label: s.labels[i] as string,
      xyz: [c[3 * i] as number, c[3 * i + 1] as number, c[3 * i + 2] as number],
    };
  }
  return {
    "@module": "pymatgen.core.structure",
    "@class": "Structure",
    charge: s.charge,
    lattice: latticeDict(s.lattice),
    properties: s.properties,
    sites,
  };
};
