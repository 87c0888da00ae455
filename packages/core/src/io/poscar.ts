/**
 * VASP POSCAR/CONTCAR and XDATCAR. Reading follows pymatgen's `Poscar.from_str` and `Xdatcar`
 * (species line or per-line labels, selective dynamics and velocities as site properties), with
 * two deliberate differences: a VASP 4 file whose species are nowhere else is read from the
 * comment line as ASE does, and Cartesian coordinates with a negative (volume) scale factor are
 * scaled by the derived factor as VASP does (pymatgen multiplies them by the negative number).
 */
import { structureFormula } from "../analysis.ts";
import { fail } from "../errors.ts";
import { Lattice, type Mat3 } from "../lattice.ts";
import { speciesOf } from "../pymatgen.ts";
import { type SiteSpecies, Structure, speciesString } from "../structure.ts";
import {
  baseName,
  extensionOf,
  FrameBudget,
  fmt,
  formatError,
  head,
  normalizeElement,
  orderedElements,
  parseIntStrict,
  parseNum,
  type ReadLimits,
  requireNum,
  type StructureFormat,
  scanNumbers,
  splitLines,
  tokens,
} from "./util.ts";

export interface Header {
  comment: string;
  lattice: Lattice;
  /** Per-component (x, y, z) factors for Cartesian coordinates. */
  cartScale: [number, number, number];
  /** Species per group, or null for VASP 4 files without a species line. */
  symbols: string[] | null;
  counts: number[];
  /** Index of the first line after the counts. */
  next: number;
}

export const readHeader = (lines: readonly string[], start: number, what: string): Header => {
  const line = (i: number): string => {
    const l = lines[start + i];
    if (l === undefined) throw formatError(`${what} is truncated: it ends at line ${start + i + 1}, inside the header`);
    return l;
  };
  const comment = line(0).trim();
  const st = tokens(line(1));
  const s3 = st.slice(0, 3).map(parseNum);
  let scale: [number, number, number];
  if (st.length >= 3 && s3.every((v) => v > 0)) scale = s3 as [number, number, number];
  else {
    const s = requireNum(st[0], `${what} line ${start + 2} (scale factor)`);
    if (s === 0) throw formatError(`${what} line ${start + 2}: the scale factor is 0`);
    scale = [s, s, s];
  }
  const raw: number[][] = [];
  for (let k = 0; k < 3; k++) {
    const t = tokens(line(2 + k));
    if (t.length < 3) throw formatError(`${what} line ${start + 3 + k}: a lattice vector needs 3 numbers`);
    raw.push(t.slice(0, 3).map((v, j) => requireNum(v, `${what} line ${start + 3 + k}, lattice component ${j + 1}`)));
  }
  let m = raw as Mat3;
  let cartScale: [number, number, number];
  if (scale[0] < 0) {
    // VASP: a negative scale factor is the cell volume.
    const det = Math.abs(new Lattice(m).volume);
    const f = (-scale[0] / det) ** (1 / 3);
    cartScale = [f, f, f];
  } else cartScale = scale;
  m = m.map((r) => [r[0] * cartScale[0], r[1] * cartScale[1], r[2] * cartScale[2]]) as Mat3;
  let lattice: Lattice;
  try {
    lattice = new Lattice(m);
  } catch (e) {
    throw formatError(`${what}: ${(e as Error).message}`);
  }
  // Species line(s) (VASP 5) or counts directly (VASP 4). VASP writes long lists over several lines.
  let i = 5;
  let symbols: string[] | null = null;
  let counts: number[] = [];
  const first = tokens(line(i));
  if (first.length === 0)
    throw formatError(`${what} line ${start + i + 1}: expected species or atom counts, found an empty line`);
  if (Number.isNaN(parseIntStrict(first[0]))) {
    symbols = [];
    let nLines = 0;
    while (Number.isNaN(parseIntStrict(tokens(line(i + nLines))[0]))) {
      nLines++;
      if (nLines > 10) throw formatError(`${what} line ${start + 7}: no atom counts after the species line`);
    }
    for (let k = 0; k < nLines; k++)
      for (const tok of tokens(line(i + k))) {
        // VASP 6 writes POTCAR names with a hash ("Mg_pv/f474ac0d"); the element comes first.
        const el = normalizeElement(tok.split("/")[0]!.split("_")[0]!);
        if (!el) throw formatError(`${what} line ${start + i + k + 1}: ${JSON.stringify(tok)} is not an element symbol`);
        symbols.push(el);
      }
    for (let k = 0; k < nLines; k++)
      counts.push(...readCounts(line(i + nLines + k), `${what} line ${start + i + nLines + k + 1}`));
    i += 2 * nLines;
  } else {
    counts = readCounts(line(i), `${what} line ${start + i + 1}`);
    i += 1;
  }
  if (symbols && symbols.length !== counts.length)
    throw formatError(`${what}: ${symbols.length} species (${symbols.join(" ")}) but ${counts.length} atom counts`);
  if (counts.reduce((a, b) => a + b, 0) === 0) throw formatError(`${what}: the atom counts add up to 0`);
  return { comment, lattice, cartScale, symbols, counts, next: start + i };
};

const readCounts = (line: string, where: string): number[] => {
  const out: number[] = [];
  for (const tok of tokens(line)) {
    if (tok.startsWith("!")) break;
    const n = parseIntStrict(tok);
    if (!(n >= 0)) throw formatError(`${where}: atom count ${JSON.stringify(tok)} is not a non-negative integer`);
    out.push(n);
  }
  if (out.length === 0) throw formatError(`${where}: no atom counts`);
  return out;
};

/** ASE's reading of a VASP 4 comment line: element symbols or formulas ("Fe2O3"), in order. */
export const symbolsFromComment = (comment: string, nGroups: number): string[] | null => {
  const out: string[] = [];
  for (const word of comment.split(/\s+/)) {
    const w = word.replace(/[-_,.=0-9]/g, "");
    if (!w) continue;
    const parts = w.match(/[A-Z][a-z]?/g);
    if (!parts || parts.join("") !== w || !parts.every((p) => normalizeElement(p) === p)) continue;
    for (const p of parts) if (out[out.length - 1] !== p) out.push(p);
  }
  return out.length >= nGroups ? out.slice(0, nGroups) : null;
};

/** Coordinates on one line; repairs "0.5-0.25" (columns run together), as pymatgen does. */
const coordTokens = (line: string | undefined): string[] => {
  const t = tokens(line);
  if (t.length >= 3) return t;
  const fixed: string[] = [];
  for (const tok of t)
    tok.split("-").forEach((p, k) => {
      if (p) fixed.push(k === 0 && !tok.startsWith("-") ? p : `-${p}`);
    });
  return fixed.length === 3 ? fixed : t;
};

export const expand = (symbols: readonly string[], counts: readonly number[]): string[] => {
  const out: string[] = [];
  symbols.forEach((el, g) => {
    for (let k = 0; k < (counts[g] as number); k++) out.push(el);
  });
  return out;
};

/** Species and labels shared by every frame of a file (structures are immutable). */
const sitesOf = (elements: readonly string[]): { species: SiteSpecies[]; labels: string[] } => {
  const species = elements.map((e) => speciesOf(e));
  return { species, labels: species.map(speciesString) };
};

export const readPoscar = (content: string, limits?: ReadLimits): Structure => {
  const lines = splitLines(content);
  const what = "POSCAR";
  const h = readHeader(lines, 0, what);
  const n = h.counts.reduce((a, b) => a + b, 0);
  new FrameBudget(limits, what).frame(n);
  let i = h.next;
  let mode = tokens(lines[i])[0];
  if (mode === undefined)
    throw formatError(
      `${what} line ${i + 1}: expected Direct or Cartesian, found ${lines[i] === undefined ? "the end of the file" : "an empty line"}`,
    );
  const selective = /^[sS]/.test(mode);
  if (selective) {
    i++;
    mode = tokens(lines[i])[0];
    if (mode === undefined) throw formatError(`${what} line ${i + 1}: expected Direct or Cartesian after Selective dynamics`);
  }
  const cartesian = /^[cCkK]/.test(mode);
  const first = i + 1;
  if (lines.length < first + n || tokens(lines[first + n - 1]).length === 0)
    throw formatError(`${what} is truncated: the counts promise ${n} atoms, but fewer coordinate lines follow line ${first}`);
  let elements: string[];
  if (h.symbols) elements = expand(h.symbols, h.counts);
  else {
    // VASP 4: per-line labels after the coordinates (pymatgen), else the comment line (ASE).
    const col = selective ? 6 : 3;
    const perLine: string[] = [];
    for (let k = 0; k < n; k++) {
      const el = tokens(lines[first + k])[col];
      const e = el === undefined ? undefined : normalizeElement(el);
      if (!e) break;
      perLine.push(e);
    }
    if (perLine.length === n) elements = perLine;
    else {
      const fromComment = symbolsFromComment(h.comment, h.counts.length);
      if (!fromComment)
        throw formatError(
          `${what}: VASP 4 file without species (no species line, no element after each coordinate line, none in the comment line)`,
        );
      elements = expand(fromComment, h.counts);
    }
  }
  const cart = new Float64Array(3 * n);
  const sd: boolean[][] = [];
  const f: [number, number, number] = [0, 0, 0];
  for (let k = 0; k < n; k++) {
    const t = coordTokens(lines[first + k]);
    const where = `${what} line ${first + k + 1}`;
    if (t.length < 3)
      throw formatError(`${where}: expected 3 coordinates, found ${JSON.stringify((lines[first + k] ?? "").trim())}`);
    for (let j = 0; j < 3; j++) f[j] = requireNum(t[j], where);
    if (cartesian) {
      cart[3 * k] = f[0] * h.cartScale[0];
      cart[3 * k + 1] = f[1] * h.cartScale[1];
      cart[3 * k + 2] = f[2] * h.cartScale[2];
    } else {
      const p = h.lattice.toCartesian(f);
      cart[3 * k] = p[0];
      cart[3 * k + 1] = p[1];
      cart[3 * k + 2] = p[2];
    }
    if (selective) sd.push([t[3] === "T", t[4] === "T", t[5] === "T"]);
  }
  const props: Record<string, unknown>[] = elements.map(() => ({}));
  // pymatgen keeps selective dynamics only when something is fixed.
  if (selective && sd.some((r) => !r.every(Boolean)))
    for (let k = 0; k < n; k++) (props[k] as Record<string, unknown>).selective_dynamics = sd[k];
  let j = first + n;
  const properties: Record<string, unknown> = {};
  if (/^\s*[lL]/.test(lines[j] ?? "")) {
    // "Lattice velocities and vectors", "1", 3 velocity rows, 3 lattice rows.
    const lv = lines.slice(j + 2, j + 5).map((l) => tokens(l).slice(0, 3).map(parseNum));
    if (
      lv.length === 3 &&
      lv.every((r) => r.length === 3 && r.every((v) => !Number.isNaN(v))) &&
      lv.some((r) => r.some((v) => v !== 0))
    )
      properties.lattice_velocities = lv;
    j += 8;
  }
  const vel = readVelocities(lines, j, n);
  if (vel?.some((r) => r.some((v) => v !== 0)))
    for (let k = 0; k < n; k++) (props[k] as Record<string, unknown>).velocities = vel[k];
  const { species, labels } = sitesOf(elements);
  return new Structure({ lattice: h.lattice, species, cart, labels, siteProperties: props, properties });
};

/** The velocity block after a blank line: n rows of 3 numbers, or null when there is none. */
const readVelocities = (lines: readonly string[], from: number, n: number): number[][] | null => {
  let j = from;
  if (tokens(lines[j]).length !== 0) return null;
  while (j < lines.length && tokens(lines[j]).length === 0) j++;
  // Some writers put a coordinate-mode word before the block.
  if (tokens(lines[j]).length === 1 && Number.isNaN(parseNum(tokens(lines[j])[0]))) j++;
  if (j + n > lines.length) return null;
  const out: number[][] = [];
  for (let k = 0; k < n; k++) {
    const r = tokens(lines[j + k])
      .slice(0, 3)
      .map(parseNum);
    if (r.length !== 3 || r.some(Number.isNaN)) return null;
    out.push(r);
  }
  return out;
};

export const readXdatcar = (content: string, limits?: ReadLimits): Structure[] => {
  const lines = splitLines(content);
  const what = "XDATCAR";
  const budget = new FrameBudget(limits, what);
  const frames: Structure[] = [];
  let h: Header | null = null;
  let shared: { species: SiteSpecies[]; labels: string[]; props: Record<string, unknown>[] } | null = null;
  let n = 0;
  let i = 0;
  const f: [number, number, number] = [0, 0, 0];
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === "") {
      i++;
      continue;
    }
    if (!/configuration/i.test(line)) {
      // A header: the first one, or a new cell in a variable-cell run.
      const nh = readHeader(lines, i, what);
      const nn = nh.counts.reduce((a, b) => a + b, 0);
      budget.atoms(nn);
      // The counts line may announce any number: never more atoms than the file has lines.
      if (nn > lines.length - nh.next)
        throw formatError(
          `${what} is truncated: the counts promise ${nn} atoms, but only ${lines.length - nh.next} lines follow`,
        );
      let elements: string[];
      if (nh.symbols) elements = expand(nh.symbols, nh.counts);
      else {
        const fromComment = symbolsFromComment(nh.comment, nh.counts.length);
        if (!fromComment) throw formatError(`${what}: VASP 4 file without species (no species line, none in the comment line)`);
        elements = expand(fromComment, nh.counts);
      }
      if (!shared || nn !== n || elements.some((e, k) => shared?.species[k]?.[0]?.element !== e)) {
        const s = sitesOf(elements);
        shared = { ...s, props: elements.map(() => ({})) };
      }
      h = nh;
      n = nn;
      i = nh.next;
      continue;
    }
    if (!h || !shared) throw formatError(`${what} line ${i + 1}: a configuration before any header`);
    const cartesian = /^\s*[cCkK]/.test(line);
    if (i + n >= lines.length || scanNumbers(lines[i + n] as string, f, 3) < 3) {
      // An MD run that was cut off: keep the complete frames.
      if (frames.length > 0) break;
      throw formatError(`${what} is truncated: the first configuration has fewer than ${n} coordinate lines`);
    }
    budget.frame(n);
    const cart = new Float64Array(3 * n);
    const m = h.lattice.matrix;
    const sc = h.cartScale;
    for (let k = 0; k < n; k++) {
      const line = lines[i + 1 + k] as string;
      if (scanNumbers(line, f, 3) < 3) {
        const t = coordTokens(line);
        const where = `${what} line ${i + 2 + k}`;
        if (t.length < 3) throw formatError(`${where}: expected 3 coordinates`);
        for (let d = 0; d < 3; d++) f[d] = requireNum(t[d], where);
      }
      if (cartesian) {
        cart[3 * k] = f[0] * sc[0];
        cart[3 * k + 1] = f[1] * sc[1];
        cart[3 * k + 2] = f[2] * sc[2];
      } else {
        cart[3 * k] = f[0] * m[0][0] + f[1] * m[1][0] + f[2] * m[2][0];
        cart[3 * k + 1] = f[0] * m[0][1] + f[1] * m[1][1] + f[2] * m[2][1];
        cart[3 * k + 2] = f[0] * m[0][2] + f[1] * m[1][2] + f[2] * m[2][2];
      }
    }
    frames.push(
      new Structure({ lattice: h.lattice, species: shared.species, cart, labels: shared.labels, siteProperties: shared.props }),
    );
    i += n + 1;
  }
  if (frames.length === 0) throw formatError(`${what}: no configuration found (expected "Direct configuration=" lines)`);
  return frames;
};

const num = (x: number): string => fmt(x, 12, 20);

const headerLines = (s: Structure, lattice: Lattice, comment: string): string[] => {
  const elements = orderedElements(s, "POSCAR");
  const symbols: string[] = [];
  const counts: number[] = [];
  for (const e of elements) {
    if (symbols[symbols.length - 1] === e) counts[counts.length - 1]!++;
    else {
      symbols.push(e);
      counts.push(1);
    }
  }
  return [
    comment,
    "1.0",
    ...lattice.matrix.map((r) => r.map(num).join(" ")),
    symbols.map((e) => e.padStart(5)).join(" "),
    counts.map((c) => String(c).padStart(5)).join(" "),
  ];
};

const requireLatticeFor = (s: Structure, what: string): Lattice =>
  s.lattice ?? fail("MISSING_LATTICE", `${what} needs a lattice; this structure is a molecule`);

export const writePoscar = (s: Structure): string => {
  const lattice = requireLatticeFor(s, "POSCAR");
  const out = headerLines(s, lattice, structureFormula(s));
  const sd = s.siteProperties.map((p) => p.selective_dynamics);
  const hasSd = sd.some((v) => Array.isArray(v));
  if (hasSd) out.push("Selective dynamics");
  out.push("direct");
  const fr = s.frac;
  for (let i = 0; i < s.length; i++) {
    let l = `${num(fr[3 * i]!)} ${num(fr[3 * i + 1]!)} ${num(fr[3 * i + 2]!)}`;
    if (hasSd) {
      const v = (Array.isArray(sd[i]) ? sd[i] : [true, true, true]) as unknown[];
      l += ` ${[0, 1, 2].map((k) => (v[k] === false ? "F" : "T")).join(" ")}`;
    }
    out.push(`${l} ${s.species[i]![0]!.element}`);
  }
  const vel = s.siteProperties.map((p) => p.velocities);
  if (vel.some((v) => Array.isArray(v))) {
    out.push("");
    for (const v of vel) {
      const r = (Array.isArray(v) ? v : [0, 0, 0]).map((x) => (typeof x === "number" ? x : 0));
      out.push(r.slice(0, 3).map(num).join(" "));
    }
  }
  return `${out.join("\n")}\n`;
};

const sameMatrix = (a: Lattice, b: Lattice): boolean =>
  a === b || a.matrix.every((r, i) => r.every((v, j) => v === b.matrix[i]![j]));

export const writeXdatcar = (frames: readonly Structure[]): string => {
  const first = frames[0];
  if (!first) throw formatError("XDATCAR needs at least one frame");
  const comment = structureFormula(first);
  const out: string[] = [];
  let prev: Lattice | null = null;
  frames.forEach((s, k) => {
    const lattice = requireLatticeFor(s, "XDATCAR");
    if (s.length !== first.length) throw formatError(`XDATCAR frames must have the same atoms (frame ${k} differs)`);
    if (!prev || !sameMatrix(prev, lattice)) out.push(...headerLines(s, lattice, comment));
    prev = lattice;
    out.push(`Direct configuration= ${String(k + 1).padStart(5)}`);
    const fr = s.frac;
    for (let i = 0; i < s.length; i++) out.push(`${num(fr[3 * i]!)} ${num(fr[3 * i + 1]!)} ${num(fr[3 * i + 2]!)}`);
  });
  return `${out.join("\n")}\n`;
};

const looksLikePoscar = (content: string): number => {
  const l = splitLines(head(content, 4096));
  const scale = tokens(l[1]);
  if (scale.length === 0 || Number.isNaN(parseNum(scale[0]))) return 0;
  for (let k = 2; k < 5; k++) {
    const t = tokens(l[k]);
    if (t.length < 3 || t.slice(0, 3).some((v) => Number.isNaN(parseNum(v)))) return 0;
  }
  return 0.6;
};

export const poscarFormat: StructureFormat = {
  id: "poscar",
  name: "VASP POSCAR/CONTCAR",
  extensions: ["vasp", "poscar", "contcar"],
  detect(content, filename) {
    const base = baseName(filename).toUpperCase();
    if (/^(POSCAR|CONTCAR)/.test(base) || ["vasp", "poscar", "contcar"].includes(extensionOf(filename))) return 1;
    const c = looksLikePoscar(content);
    return c && /configuration=/i.test(head(content)) ? 0.3 : c;
  },
  read: (content, limits) => [readPoscar(content, limits)],
  write: writePoscar,
};

export const xdatcarFormat: StructureFormat = {
  id: "xdatcar",
  name: "VASP XDATCAR",
  extensions: ["xdatcar"],
  detect(content, filename) {
    if (/^XDATCAR/.test(baseName(filename).toUpperCase()) || extensionOf(filename) === "xdatcar") return 1;
    return looksLikePoscar(content) && /configuration=/i.test(head(content)) ? 0.9 : 0;
  },
  read: readXdatcar,
  write: (s) => writeXdatcar([s]),
  writeFrames: writeXdatcar,
};
