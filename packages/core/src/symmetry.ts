/**
 * Crystal symmetry through moyo (spglib's Rust successor) compiled to WebAssembly.
 *
 * The WebAssembly module must be instantiated once before any analysis: `await initSymmetry()`.
 * In a browser bundle the module is fetched next to moyo's JavaScript (bundlers such as Vite
 * resolve its `new URL(..., import.meta.url)`); in Node the file is read from the installed
 * package. After that every function here is synchronous.
 *
 * Conventions follow pymatgen's `SpacegroupAnalyzer`: symprec 0.01 Angstrom by default, sites
 * typed by their full species (element, oxidation state and occupancy), so a disordered site is
 * its own type, and crystal systems named by space-group number.
 */
import initMoyo, { analyze_cell, initSync, type MoyoDataset, space_group_type } from "@spglib/moyo-wasm";
import type { Lattice, Mat3, Vec3 } from "./lattice.ts";
import { Lattice as LatticeClass } from "./lattice.ts";
import { type SiteSpecies, Structure } from "./structure.ts";
import { primitiveByTranslations } from "./translations.ts";

/** pymatgen's `SpacegroupAnalyzer` default distance tolerance, Angstrom. */
export const DEFAULT_SYMPREC = 0.01;
/**
 * pymatgen's default angle tolerance in degrees. moyo's WebAssembly entry point takes no angle
 * tolerance and uses its own default; the value is kept for the interface and documentation.
 */
export const DEFAULT_ANGLE_TOLERANCE = 5;

export interface SymmetryInfo {
  space_group: string;
  space_group_number: number;
  crystal_system: string;
  point_group: string;
}

export type SymmetryInitInput = BufferSource | WebAssembly.Module;

let ready = false;
let pending: Promise<void> | undefined;

const isNode = (): boolean => typeof process !== "undefined" && typeof process.versions?.node === "string";

/** Read moyo's .wasm from the installed package; only ever called under Node. */
const readWasmInNode = async (): Promise<Uint8Array> => {
  // Specifiers held in variables so that browser bundlers leave these Node built-ins alone.
  const modName = "node:module";
  const fsName = "node:fs/promises";
  const { createRequire } = (await import(/* @vite-ignore */ modName)) as typeof import("node:module");
  const { readFile } = (await import(/* @vite-ignore */ fsName)) as typeof import("node:fs/promises");
  const require = createRequire(import.meta.url);
  return readFile(require.resolve("@spglib/moyo-wasm/moyo_wasm_bg.wasm"));
};

/**
 * Instantiate the symmetry library. Idempotent and safe to call concurrently. `wasm` may give
 * the module's bytes or a compiled module (for hosts that load assets their own way).
 */
export const initSymmetry = (wasm?: SymmetryInitInput): Promise<void> => {
  if (ready) return Promise.resolve();
  pending ??= (async () => {
    if (wasm !== undefined) initSync({ module: wasm });
    else if (isNode()) initSync({ module: (await readWasmInNode()) as BufferSource });
    else await initMoyo();
    ready = true;
  })().catch((e: unknown) => {
    pending = undefined;
    throw e;
  });
  return pending;
};

export const isSymmetryReady = (): boolean => ready;

const requireReady = (): void => {
  if (!ready) throw new Error("symmetry analysis is not initialised: await initSymmetry() once before using it");
};

/** pymatgen's `SpacegroupAnalyzer.get_crystal_system` from the space-group number. */
export const crystalSystem = (n: number): string => {
  if (n <= 2) return "triclinic";
  if (n <= 15) return "monoclinic";
  if (n <= 74) return "orthorhombic";
  if (n <= 142) return "tetragonal";
  if (n <= 167) return "trigonal";
  if (n <= 194) return "hexagonal";
  return "cubic";
};

/** A key that tells apart sites spglib must not map onto each other (pymatgen's grouping). */
const siteTypeKey = (species: SiteSpecies, props: Record<string, unknown> | undefined): string => {
  const parts = [...species]
    .map((s) => `${s.element}|${s.oxidation_state ?? ""}|${s.spin ?? ""}|${s.occu}`)
    .sort()
    .join(";");
  // pymatgen hands collinear magnetic moments to spglib, which then keeps only operations that
  // preserve them: treating sites with different moments as different types does the same.
  const magmom = props?.magmom;
  return magmom === undefined ? parts : `${parts}#${JSON.stringify(magmom)}`;
};

export interface SymmetryCell {
  /** moyo type number (1-based) of every site. */
  types: number[];
  /** Species of each type number (index = type - 1). */
  typeSpecies: SiteSpecies[];
}

export const symmetryTypes = (s: Structure): SymmetryCell => {
  const ids = new Map<string, number>();
  const typeSpecies: SiteSpecies[] = [];
  const types = s.species.map((sp, i) => {
    const key = siteTypeKey(sp, s.siteProperties[i]);
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size + 1;
      ids.set(key, id);
      typeSpecies.push(sp);
    }
    return id;
  });
  return { types, typeSpecies };
};

export interface SymmetryOptions {
  symprec?: number;
}

/**
 * moyo's full dataset (operations in the input cell's fractional basis, Wyckoff letters,
 * orbits, standardized cells) in spglib's settings; null for molecules and empty structures.
 * Throws when moyo cannot find a consistent symmetry (as spglib does within pymatgen).
 */
/**
 * Cells moyo is not asked about: a vector longer than 1e6 Angstrom, or lengths differing by more
 * than 1e4 times. moyo's reduction ran for minutes on such cells (found by fuzzing: 5 x 5 x 993275
 * and 5e16 x 5 Angstrom); a slab with 1,000 Angstrom of vacuum over a 2.5 Angstrom cell is 400 times.
 */
const MAX_SYMMETRY_LENGTH = 1e6;
const searchable = (l: Lattice): boolean => {
  const lengths = l.lengths;
  const longest = Math.max(...lengths);
  return longest <= MAX_SYMMETRY_LENGTH && longest / Math.min(...lengths) <= 1e4;
};

export const symmetryDataset = (s: Structure, opts: SymmetryOptions = {}): MoyoDataset | null => {
  requireReady();
  if (!s.lattice || s.length === 0 || !searchable(s.lattice)) return null;
  return analyze(s.lattice.matrix, s.frac, symmetryTypes(s).types, opts.symprec ?? DEFAULT_SYMPREC);
};

const analyze = (m: Mat3, f: Float64Array, types: readonly number[], symprec: number): MoyoDataset => {
  const positions: [number, number, number][] = new Array(types.length);
  for (let i = 0; i < types.length; i++) positions[i] = [f[3 * i] as number, f[3 * i + 1] as number, f[3 * i + 2] as number];
  const cell = { lattice: { basis: [...m[0], ...m[1], ...m[2]] }, positions, numbers: types };
  return analyze_cell(JSON.stringify(cell), symprec, "Spglib");
};

/** Above this many sites the space group is found on the primitive cell of the pure translations. */
const REDUCE_ABOVE = 32;

/** spglib's short international symbol has no spaces ("P6_3/mmc"); moyo spaces its tokens. */
const compactSymbol = (hm: string): string => hm.replaceAll(" ", "");

const infoFromNumber = (number: number, hm: string): SymmetryInfo => ({
  space_group: compactSymbol(hm),
  space_group_number: number,
  crystal_system: crystalSystem(number),
  point_group: space_group_type(number).geometric_crystal_class,
});

/**
 * Space group symbol and number, crystal system and point group as pymatgen's
 * `SpacegroupAnalyzer` reports them; null for molecules, empty structures and structures whose
 * symmetry cannot be determined at this tolerance.
 */
/**
 * moyo's dataset of the translation-reduced cell: the same space group and standardized cells as
 * the input (a symmetry finder divides out pure translations first), found in milliseconds for
 * supercells. Its operations are in the reduced cell's basis, so `symmetryDataset` keeps the input.
 */
const reducedDataset = (s: Structure, opts: SymmetryOptions): MoyoDataset | null => {
  requireReady();
  if (!s.lattice || s.length === 0 || !searchable(s.lattice)) return null;
  const symprec = opts.symprec ?? DEFAULT_SYMPREC;
  const { types } = symmetryTypes(s);
  const prim = s.length > REDUCE_ABOVE ? primitiveByTranslations(s.lattice.matrix, s.frac, types, symprec) : null;
  return prim ? analyze(prim.matrix, prim.frac, prim.types, symprec) : analyze(s.lattice.matrix, s.frac, types, symprec);
};

/**
 * Space group symbol and number, crystal system and point group as pymatgen's
 * `SpacegroupAnalyzer` reports them; null for molecules, empty structures and structures whose
 * symmetry cannot be determined at this tolerance.
 */
export const symmetryInfo = (s: Structure, opts: SymmetryOptions = {}): SymmetryInfo | null => {
  const d = datasetOrNull(s, opts);
  return d ? infoFromNumber(d.number, d.hm_symbol) : null;
};

/**
 * The reduced dataset, or null where moyo finds no consistent symmetry (it throws, for example
 * "PrimitiveSymmetrySearchError" on coordinates of 1e16 Angstrom): a property of the input, not a
 * failure of the service.
 */
const datasetOrNull = (s: Structure, opts: SymmetryOptions): MoyoDataset | null => {
  try {
    return reducedDataset(s, opts);
  } catch (e) {
    if (!ready) throw e;
    return null;
  }
};

interface CellLike {
  lattice: { basis: number[] };
  positions: number[][];
  numbers: number[];
}

const cellToStructure = (cell: CellLike, typeSpecies: readonly SiteSpecies[]): Structure => {
  const b = cell.lattice.basis;
  const matrix: Mat3 = [
    [b[0] as number, b[1] as number, b[2] as number],
    [b[3] as number, b[4] as number, b[5] as number],
    [b[6] as number, b[7] as number, b[8] as number],
  ];
  const lattice: Lattice = new LatticeClass(matrix);
  const n = cell.positions.length;
  const cart = new Float64Array(3 * n);
  const out: Vec3 = [0, 0, 0];
  for (let i = 0; i < n; i++) {
    const p = cell.positions[i] as number[];
    // Wrap into [0, 1) as pymatgen's standard structures are.
    const fr = p.map((x) => {
      const w = x - Math.floor(x);
      return w >= 1 ? 0 : w;
    });
    lattice.toCartesian(fr, out);
    cart.set(out, 3 * i);
  }
  const species = cell.numbers.map((t) => typeSpecies[t - 1] as SiteSpecies);
  return new Structure({ lattice, species, cart });
};

/**
 * The conventional standard cell (spglib's standardized, idealized cell, the basis of pymatgen's
 * `get_conventional_standard_structure`). Lattice orientation follows spglib's convention, not
 * pymatgen's extra per-crystal-system axis reordering. Null for molecules and structures whose
 * symmetry cannot be determined.
 */
export const conventionalStandardStructure = (s: Structure, opts: SymmetryOptions = {}): Structure | null => {
  const d = datasetOrNull(s, opts);
  if (!d) return null;
  return cellToStructure(d.std_cell, symmetryTypes(s).typeSpecies);
};

/** The primitive standard cell (spglib's primitive standardized cell). Null as for the conventional cell. */
export const primitiveStandardStructure = (s: Structure, opts: SymmetryOptions = {}): Structure | null => {
  const d = datasetOrNull(s, opts);
  if (!d) return null;
  return cellToStructure(d.prim_std_cell, symmetryTypes(s).typeSpecies);
};

/** Symmetry operations (rotation row-major, fractional translation) in the structure's own basis. */
export interface SymmetryOperation {
  rotation: Mat3;
  translation: Vec3;
}

export const symmetryOperations = (s: Structure, opts: SymmetryOptions = {}): SymmetryOperation[] => {
  const d = symmetryDataset(s, opts);
  if (!d) return [];
  return d.operations.map((op) => {
    const r = op.rotation;
    return {
      rotation: [
        [r[0], r[1], r[2]],
        [r[3], r[4], r[5]],
        [r[6], r[7], r[8]],
      ] as Mat3,
      translation: [op.translation[0], op.translation[1], op.translation[2]] as Vec3,
    };
  });
};
