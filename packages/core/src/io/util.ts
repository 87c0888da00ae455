/**
 * Small helpers shared by the format modules. Everything here is isomorphic (no Node imports):
 * the same readers run in the browser studio and in the service.
 */
import { isElement } from "../elements.ts";
import { AtomStudioError } from "../errors.ts";
import type { Structure } from "../structure.ts";

export type FormatId = "cif" | "poscar" | "xdatcar" | "xyz" | "extxyz" | "pdb" | "json";

/** One file format: how to recognise it, read it (all frames) and write it. */
export interface StructureFormat {
  readonly id: FormatId;
  /** Human-readable name for messages and menus. */
  readonly name: string;
  /** Lower-case file extensions without the dot. */
  readonly extensions: readonly string[];
  /** Confidence in [0, 1] that `content` (and `filename`, if given) is this format; 0 = surely not. */
  detect(content: string, filename?: string): number;
  /**
   * Every frame in the file; throws INVALID_FORMAT with the reason when unreadable, and
   * TOO_MANY_ATOMS / TOO_MANY_FRAMES (see `ReadLimits`) before allocating past a limit.
   */
  read(content: string, limits?: ReadLimits): Structure[];
  write(s: Structure): string;
  /** Multi-frame formats can write a trajectory. */
  writeFrames?(frames: readonly Structure[]): string;
}

/**
 * Caps on what reading a file may produce, checked by the readers before they allocate a frame
 * (a few bytes of text can announce, or by CIF symmetry generate, far more atoms than they hold).
 * Absent fields are unlimited: the studio reads the user's own files; the service passes its
 * configured limits.
 */
export interface ReadLimits {
  /** Atoms in one structure (one frame, one CIF block after symmetry expansion). */
  maxAtoms?: number;
  /** Frames (structures) in one file. */
  maxFrames?: number;
  /** Atoms across all frames of one file. */
  maxTotalAtoms?: number;
}

/** Codes of the limit errors: parse entry points pass them through instead of trying another format. */
export const LIMIT_CODES: ReadonlySet<string> = new Set(["TOO_MANY_ATOMS", "TOO_MANY_FRAMES", "TOO_MANY_SYMMETRY_OPERATIONS"]);

export const tooManyAtoms = (message: string, details: Record<string, unknown>): AtomStudioError =>
  new AtomStudioError("TOO_MANY_ATOMS", message, details);

/** Counts frames and atoms as a reader produces them; throws before a limit is passed. */
export class FrameBudget {
  #frames = 0;
  #atoms = 0;
  constructor(
    readonly limits: ReadLimits | undefined,
    readonly what: string,
  ) {}

  /** Atoms of one structure, before it is allocated. */
  atoms(n: number): void {
    const max = this.limits?.maxAtoms;
    if (max !== undefined && n > max)
      throw tooManyAtoms(`${this.what}: a structure of ${n} atoms, more than the limit of ${max}`, { n_atoms: n, limit: max });
  }

  /** One more frame of `n` atoms, before it is allocated. */
  frame(n: number): void {
    this.atoms(n);
    this.#frames++;
    this.#atoms += n;
    const { maxFrames, maxTotalAtoms } = this.limits ?? {};
    if (maxFrames !== undefined && this.#frames > maxFrames)
      throw new AtomStudioError("TOO_MANY_FRAMES", `${this.what}: more than ${maxFrames} frames, the limit`, {
        limit: maxFrames,
      });
    if (maxTotalAtoms !== undefined && this.#atoms > maxTotalAtoms)
      throw tooManyAtoms(`${this.what}: more than ${maxTotalAtoms} atoms in all frames together, the limit`, {
        n_frames: this.#frames,
        total_atoms: this.#atoms,
        limit: maxTotalAtoms,
      });
  }
}

/** Readers throw this; the entry point collects the reasons of every format it tried. */
export const formatError = (message: string, details?: Record<string, unknown>): AtomStudioError =>
  new AtomStudioError("INVALID_FORMAT", message, details);

const NUMBER_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eEdD][+-]?\d+)?$/;

/**
 * Strict float parsing: JavaScript's Number() accepts "", "0x1f" and "Infinity", which must not
 * turn garbage into coordinates. Fortran "1.0D+00" exponents are accepted (old VASP/XYZ writers).
 */
export const parseNum = (tok: string | undefined): number => {
  if (tok === undefined || !NUMBER_RE.test(tok)) return Number.NaN;
  const v = Number(tok.includes("d") || tok.includes("D") ? tok.replace(/[dD]/, "e") : tok);
  return Number.isFinite(v) ? v : Number.NaN;
};

/** A finite number or an INVALID_FORMAT error saying where. */
export const requireNum = (tok: string | undefined, where: string): number => {
  const v = parseNum(tok);
  if (Number.isNaN(v)) throw formatError(`${where}: expected a number, got ${JSON.stringify(tok ?? "")}`);
  return v;
};

export const parseIntStrict = (tok: string | undefined): number =>
  tok !== undefined && /^[+-]?\d+$/.test(tok) ? Number(tok) : Number.NaN;

export const splitLines = (content: string): string[] => content.split(/\r?\n|\r/);

export const tokens = (line: string | undefined): string[] => {
  const t = (line ?? "").trim();
  return t === "" ? [] : t.split(/\s+/);
};

/** "FE", "fe", "Fe" -> "Fe" when that is an element. */
export const normalizeElement = (sym: string): string | undefined => {
  if (sym.length === 0 || sym.length > 3) return undefined;
  const s = sym[0]!.toUpperCase() + sym.slice(1).toLowerCase();
  return isElement(s) ? s : undefined;
};

/** Last path component, without directories (both separators: names come from browsers too). */
export const baseName = (filename: string | undefined): string => (filename ?? "").split(/[\\/]/).pop() ?? "";

/** Lower-case extension without dot, ignoring a trailing .gz/.bz2/.xz. */
export const extensionOf = (filename: string | undefined): string => {
  const parts = baseName(filename).toLowerCase().split(".");
  if (parts.length > 2 && ["gz", "bz2", "xz"].includes(parts[parts.length - 1]!)) parts.pop();
  return parts.length > 1 ? parts[parts.length - 1]! : "";
};

/** The first `n` characters: detection never needs to scan a whole trajectory. */
export const head = (content: string, n = 8192): string => (content.length > n ? content.slice(0, n) : content);

/** Fixed-width formatting, right-aligned, as Fortran/C writers do. */
export const fmt = (x: number, decimals: number, width = 0): string => {
  let s = (Math.abs(x) < 0.5 * 10 ** -decimals ? 0 : x).toFixed(decimals);
  if (s.startsWith("-") && Number(s) === 0) s = s.slice(1);
  return s.padStart(width);
};

/** Elements of ordered sites; writers for formats without occupancies call this. */
export const orderedElements = (s: Structure, formatName: string): string[] =>
  s.species.map((sp, i) => {
    const only = sp[0];
    if (sp.length !== 1 || !only || Math.abs(only.occu - 1) > 1e-8)
      throw formatError(`${formatName} cannot hold partially occupied sites (site ${i} is ${s.labels[i]})`, {
        site: i,
      });
    return only.element;
  });

const POW10 = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/**
 * A decimal number from line[start, end) without allocating a substring. Mantissas of at most
 * 15 digits scaled by at most 10^22 are exact in doubles, so one IEEE multiply or divide gives
 * the correctly rounded value, identical to Number() (Clinger's fast path); anything else goes
 * through the strict string parser.
 */
export const fastNumber = (line: string, start: number, end: number): number => {
  let i = start;
  let neg = false;
  let c = line.charCodeAt(i);
  if (c === 45 || c === 43) {
    neg = c === 45;
    i++;
  }
  let mant = 0;
  let digits = 0;
  let scale = 0;
  let any = false;
  for (; i < end; i++) {
    c = line.charCodeAt(i);
    if (c < 48 || c > 57) break;
    if (digits > 0 || c !== 48) digits++;
    mant = mant * 10 + (c - 48);
    any = true;
  }
  if (i < end && line.charCodeAt(i) === 46) {
    i++;
    for (; i < end; i++) {
      c = line.charCodeAt(i);
      if (c < 48 || c > 57) break;
      if (digits > 0 || c !== 48) digits++;
      mant = mant * 10 + (c - 48);
      scale--;
      any = true;
    }
  }
  if (!any) return Number.NaN;
  if (i < end) {
    c = line.charCodeAt(i);
    if (c !== 101 && c !== 69 && c !== 100 && c !== 68) return Number.NaN;
    return parseNum(line.slice(start, end));
  }
  if (digits > 15 || scale < -22) return parseNum(line.slice(start, end));
  const v = scale === 0 ? mant : mant / (POW10[-scale] as number);
  return neg ? -v : v;
};

const isNumChar = (c: number): boolean =>
  (c >= 48 && c <= 57) || c === 46 || c === 43 || c === 45 || c === 101 || c === 69 || c === 100 || c === 68;

/**
 * Reads up to `max` numbers of a line, from index `from`, into `out`; returns how many it read
 * (it stops at the first token that is not a number). The hot loop of trajectory parsing: no regex, no split.
 */
export const scanNumbers = (line: string, out: Float64Array | number[], max: number, from = 0): number => {
  const n = line.length;
  let i = from;
  let count = 0;
  while (count < max) {
    while (i < n) {
      const c = line.charCodeAt(i);
      if (c !== 32 && c !== 9 && c !== 13) break;
      i++;
    }
    if (i >= n) break;
    const start = i;
    let plain = true;
    while (i < n) {
      const c = line.charCodeAt(i);
      if (c === 32 || c === 9 || c === 13) break;
      if (!isNumChar(c)) plain = false;
      i++;
    }
    if (!plain) break;
    const v = fastNumber(line, start, i);
    if (!Number.isFinite(v)) break;
    out[count++] = v;
  }
  return count;
};

/** The first whitespace-delimited token of a line and the index just after it. */
export const firstToken = (line: string): [string, number] => {
  const n = line.length;
  let i = 0;
  while (i < n && (line.charCodeAt(i) === 32 || line.charCodeAt(i) === 9)) i++;
  const start = i;
  while (i < n) {
    const c = line.charCodeAt(i);
    if (c === 32 || c === 9 || c === 13) break;
    i++;
  }
  return [line.slice(start, i), i];
};
