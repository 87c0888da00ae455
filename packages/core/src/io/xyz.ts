/**
 * XYZ (plain, multi-frame, read as molecules like pymatgen's `XYZ`) and extended XYZ (ASE's
 * `Lattice="..." Properties=species:S:1:pos:R:3... pbc="T T T"` comment line). Extra per-atom
 * columns become site properties under their own names; other comment keys become structure
 * properties, as pymatgen's ASE adaptor keeps `atoms.info`.
 */
import { structureFormula } from "../analysis.ts";
import { ELEMENTS } from "../elements.ts";
import { Lattice, type Mat3 } from "../lattice.ts";
import { speciesOf } from "../pymatgen.ts";
import { type SiteSpecies, Structure, speciesString } from "../structure.ts";
import {
  extensionOf,
  FrameBudget,
  firstToken,
  fmt,
  formatError,
  head,
  normalizeElement,
  orderedElements,
  parseIntStrict,
  parseNum,
  type ReadLimits,
  type StructureFormat,
  scanNumbers,
  splitLines,
  tokens,
} from "./util.ts";

/** "C", "c", "6", "C1" (a label) -> "C". */
const elementOf = (tok: string): string | undefined => {
  const z = parseIntStrict(tok);
  if (!Number.isNaN(z)) return ELEMENTS[z - 1]?.symbol;
  return normalizeElement(tok) ?? normalizeElement(tok.replace(/[\d_+-].*$/, ""));
};

interface Frame {
  comment: string;
  /** Index of the first atom line. */
  start: number;
  n: number;
}

const ATOM_LINE = /^\s*\S+\s+\S+\s+\S+\s+\S/;

/** Frame boundaries; a last frame cut short is dropped when earlier ones are complete. */
const frames = (lines: readonly string[], what: string, limits?: ReadLimits): Frame[] => {
  const out: Frame[] = [];
  const budget = new FrameBudget(limits, what);
  let i = 0;
  while (i < lines.length) {
    if ((lines[i] as string).trim() === "") {
      i++;
      continue;
    }
    const t = tokens(lines[i]);
    const n = parseIntStrict(t[0]);
    if (t.length !== 1 || !(n >= 0))
      throw formatError(
        `${what} line ${i + 1}: expected the number of atoms, found ${JSON.stringify((lines[i] as string).trim().slice(0, 60))}`,
      );
    const start = i + 2;
    let available = 0;
    while (available < n && start + available < lines.length && ATOM_LINE.test(lines[start + available] as string)) available++;
    if (available < n) {
      const atEnd = lines.slice(start + available).every((l) => l.trim() === "");
      if (atEnd && out.length > 0) break;
      throw formatError(
        `${what} frame ${out.length + 1} (line ${i + 1}) announces ${n} atoms but ${available} atom lines follow${atEnd ? "" : ` (line ${start + available + 1} is not "element x y z")`}`,
      );
    }
    budget.frame(n);
    out.push({ comment: lines[i + 1] ?? "", start, n });
    i = start + n;
  }
  if (out.length === 0) throw formatError(`${what}: no frame (expected an atom count on the first line)`);
  return out;
};

const sitesFor = (elements: readonly string[], cache: { key: string; species: SiteSpecies[]; labels: string[] } | null) => {
  const key = elements.join(" ");
  if (cache && cache.key === key) return cache;
  const species = elements.map((e) => speciesOf(e));
  return { key, species, labels: species.map(speciesString) };
};

const xyzBuf = [0, 0, 0];

/** "El x y z ..." into elements[k] and cart[3k..]: the hot loop of XYZ trajectories. */
const readAtomLine = (line: string, where: string, elements: string[], cart: Float64Array, k: number): void => {
  const [tok, end] = firstToken(line);
  const el = elementOf(tok);
  if (!el) throw formatError(`${where}: ${JSON.stringify(tok)} is not an element`);
  elements[k] = el;
  if (scanNumbers(line, xyzBuf, 3, end) < 3) {
    const t = tokens(line);
    const bad = t.slice(1, 4).find((v) => Number.isNaN(parseNum(v)));
    throw formatError(`${where}: coordinate ${JSON.stringify(bad ?? "")} is not a number`);
  }
  cart[3 * k] = xyzBuf[0] as number;
  cart[3 * k + 1] = xyzBuf[1] as number;
  cart[3 * k + 2] = xyzBuf[2] as number;
};

export const readXyz = (content: string, limits?: ReadLimits): Structure[] => {
  const lines = splitLines(content);
  const what = "XYZ";
  const out: Structure[] = [];
  let cache: ReturnType<typeof sitesFor> | null = null;
  for (const f of frames(lines, what, limits)) {
    const cart = new Float64Array(3 * f.n);
    const elements: string[] = new Array(f.n);
    for (let k = 0; k < f.n; k++)
      readAtomLine(lines[f.start + k] as string, `${what} line ${f.start + k + 1}`, elements, cart, k);
    cache = sitesFor(elements, cache);
    out.push(new Structure({ lattice: null, species: cache.species, cart, labels: cache.labels }));
  }
  return out;
};

/** key=value pairs of an extended XYZ comment line; bare keys are flags (true). */
export const parseKeyValues = (line: string): Map<string, string | true> => {
  const out = new Map<string, string | true>();
  const re = /\s*([^\s="'{}]+)(?:\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|\{([^}]*)\}|([^\s"'{}]+)))?/y;
  let i = 0;
  while (i < line.length) {
    if (/^\s*$/.test(line.slice(i))) break;
    re.lastIndex = i;
    const m = re.exec(line);
    if (!m) throw formatError(`extended XYZ: cannot read the comment line near ${JSON.stringify(line.slice(i, i + 30))}`);
    const v = m[2] ?? m[3] ?? m[4] ?? m[5];
    out.set(m[1] as string, v === undefined ? true : m[2] !== undefined ? v.replace(/\\(.)/g, "$1") : v);
    i = re.lastIndex;
  }
  return out;
};

const getCI = (m: Map<string, string | true>, key: string): string | true | undefined => {
  for (const [k, v] of m) if (k.toLowerCase() === key) return v;
  return undefined;
};

const bool = (s: string): boolean | undefined => {
  const l = s.toLowerCase();
  return l === "t" || l === "true" ? true : l === "f" || l === "false" ? false : undefined;
};

/** An info value as a number, boolean, number array or string. */
const infoValue = (v: string | true): unknown => {
  if (v === true) return true;
  const t = tokens(v);
  if (t.length === 1) {
    const n = parseNum(t[0]);
    if (!Number.isNaN(n)) return n;
    const b = bool(t[0] as string);
    if (b !== undefined) return b;
    return v;
  }
  if (t.length > 1) {
    const nums = t.map(parseNum);
    if (!nums.some(Number.isNaN)) return nums;
    const bools = t.map(bool);
    if (bools.every((b) => b !== undefined)) return bools;
  }
  return v;
};

interface Column {
  name: string;
  type: "S" | "R" | "I" | "L";
  width: number;
}

const parseProperties = (spec: string): Column[] => {
  const parts = spec.split(":");
  if (parts.length % 3 !== 0) throw formatError(`extended XYZ: Properties=${spec} is not name:type:count triples`);
  const cols: Column[] = [];
  for (let k = 0; k < parts.length; k += 3) {
    const type = (parts[k + 1] as string).toUpperCase();
    const width = parseIntStrict(parts[k + 2]);
    if (!["S", "R", "I", "L"].includes(type) || !(width >= 1))
      throw formatError(
        `extended XYZ: Properties column ${parts[k]}:${parts[k + 1]}:${parts[k + 2]} has an unknown type or count`,
      );
    cols.push({ name: parts[k] as string, type: type as Column["type"], width });
  }
  return cols;
};

export const readExtxyz = (content: string, limits?: ReadLimits): Structure[] => {
  const lines = splitLines(content);
  const what = "extended XYZ";
  const out: Structure[] = [];
  let cache: ReturnType<typeof sitesFor> | null = null;
  let prevLattice: Lattice | null = null;
  frames(lines, what, limits).forEach((f, fi) => {
    const kv = parseKeyValues(f.comment);
    const latticeV = getCI(kv, "lattice");
    const propsV = getCI(kv, "properties");
    const pbcV = getCI(kv, "pbc");
    if (fi === 0 && latticeV === undefined && propsV === undefined)
      throw formatError(`${what}: the comment line has neither Lattice= nor Properties= (a plain XYZ file)`);
    const cols = parseProperties(typeof propsV === "string" ? propsV : "species:S:1:pos:R:3");
    const speciesCol = cols.find((c) => c.name.toLowerCase() === "species" && c.type === "S");
    const posCol = cols.find((c) => /^pos(itions)?$/i.test(c.name) && c.type === "R" && c.width === 3);
    if (!speciesCol || !posCol) throw formatError(`${what} frame ${fi + 1}: Properties must have species:S:1 and pos:R:3`);
    const width = cols.reduce((a, c) => a + c.width, 0);
    let lattice: Lattice | null = null;
    if (typeof latticeV === "string") {
      const m = tokens(latticeV).map(parseNum);
      if (m.length !== 9 || m.some(Number.isNaN)) throw formatError(`${what} frame ${fi + 1}: Lattice must have 9 numbers`);
      let pbc: [boolean, boolean, boolean] = [true, true, true];
      if (typeof pbcV === "string") {
        const p = tokens(pbcV).map(bool);
        if (p.length === 1 && p[0] !== undefined) pbc = [p[0], p[0], p[0]];
        else if (p.length === 3 && p.every((b) => b !== undefined)) pbc = p as [boolean, boolean, boolean];
        else throw formatError(`${what} frame ${fi + 1}: pbc=${JSON.stringify(pbcV)} is not three T/F flags`);
      }
      const mat = [m.slice(0, 3), m.slice(3, 6), m.slice(6, 9)] as Mat3;
      // Frames of a fixed-cell run share one lattice object.
      if (
        prevLattice?.pbc.every((b, k) => b === pbc[k]) &&
        prevLattice.matrix.every((r, k) => r.every((v, j) => v === mat[k]![j]))
      )
        lattice = prevLattice;
      else {
        try {
          lattice = new Lattice(mat, pbc);
        } catch (e) {
          throw formatError(`${what} frame ${fi + 1}: ${(e as Error).message}`);
        }
      }
      prevLattice = lattice;
    }
    const elements: string[] = new Array(f.n);
    const cart = new Float64Array(3 * f.n);
    const extra = cols.filter((c) => c !== speciesCol && c !== posCol);
    const siteProps: Record<string, unknown>[] | undefined = extra.length ? [] : undefined;
    const simple = cols.length === 2 && cols[0] === speciesCol && cols[1] === posCol;
    for (let k = 0; k < f.n; k++) {
      const where = `${what} line ${f.start + k + 1}`;
      if (simple) {
        readAtomLine(lines[f.start + k] as string, where, elements, cart, k);
        continue;
      }
      const t = tokens(lines[f.start + k]);
      if (t.length < width) throw formatError(`${where}: ${t.length} columns, Properties describes ${width}`);
      let c = 0;
      const props: Record<string, unknown> = {};
      for (const col of cols) {
        const vals = t.slice(c, c + col.width);
        c += col.width;
        if (col === speciesCol) {
          const el = elementOf(vals[0] as string);
          if (!el) throw formatError(`${where}: ${JSON.stringify(vals[0])} is not an element`);
          elements[k] = el;
        } else if (col === posCol) {
          for (let d = 0; d < 3; d++) {
            const v = parseNum(vals[d]);
            if (Number.isNaN(v)) throw formatError(`${where}: coordinate ${JSON.stringify(vals[d])} is not a number`);
            cart[3 * k + d] = v;
          }
        } else {
          const conv = vals.map((v): unknown => {
            if (col.type === "R" || col.type === "I") {
              const x = col.type === "I" ? parseIntStrict(v) : parseNum(v);
              if (Number.isNaN(x)) throw formatError(`${where}: ${col.name} value ${JSON.stringify(v)} is not a number`);
              return x;
            }
            if (col.type === "L") {
              const b = bool(v);
              if (b === undefined) throw formatError(`${where}: ${col.name} value ${JSON.stringify(v)} is not T or F`);
              return b;
            }
            return v;
          });
          props[col.name] = col.width === 1 ? conv[0] : conv;
        }
      }
      siteProps?.push(props);
    }
    const properties: Record<string, unknown> = {};
    for (const [k, v] of kv) if (!["lattice", "properties", "pbc"].includes(k.toLowerCase())) properties[k] = infoValue(v);
    cache = sitesFor(elements, cache);
    out.push(
      new Structure({
        lattice,
        species: cache.species,
        cart,
        labels: cache.labels,
        ...(siteProps ? { siteProperties: siteProps } : {}),
        properties,
      }),
    );
  });
  return out;
};

const coordLine = (el: string, s: Structure, i: number): string =>
  `${el.padEnd(3)} ${fmt(s.cart[3 * i]!, 10, 18)} ${fmt(s.cart[3 * i + 1]!, 10, 18)} ${fmt(s.cart[3 * i + 2]!, 10, 18)}`;

export const writeXyzFrames = (list: readonly Structure[]): string => {
  const out: string[] = [];
  for (const s of list) {
    const el = orderedElements(s, "XYZ");
    out.push(String(s.length), structureFormula(s));
    for (let i = 0; i < s.length; i++) out.push(coordLine(el[i] as string, s, i));
  }
  return `${out.join("\n")}\n`;
};

const quote = (v: string): string => (/^[^\s"'=]+$/.test(v) ? v : `"${v.replace(/(["\\])/g, "\\$1")}"`);

/** Site properties that are one scalar or a fixed-length array of one type on every site. */
const columnsFor = (s: Structure): { name: string; type: "R" | "I" | "L" | "S"; width: number }[] => {
  const first = s.siteProperties[0];
  if (!first) return [];
  const cols: { name: string; type: "R" | "I" | "L" | "S"; width: number }[] = [];
  for (const [name, v0] of Object.entries(first)) {
    if (!/^[A-Za-z_][\w-]*$/.test(name) || ["species", "pos"].includes(name)) continue;
    const kind = (v: unknown): string | null => {
      const one = (x: unknown): string | null =>
        typeof x === "number" && Number.isFinite(x)
          ? Number.isInteger(x)
            ? "I"
            : "R"
          : typeof x === "boolean"
            ? "L"
            : typeof x === "string" && /^\S+$/.test(x)
              ? "S"
              : null;
      if (Array.isArray(v)) {
        const ks = v.map(one);
        if (ks.length === 0 || ks.some((k) => k === null)) return null;
        const types = new Set(ks);
        if (types.size === 1) return `${ks[0]}${v.length}`;
        if ([...types].every((t) => t === "I" || t === "R")) return `R${v.length}`;
        return null;
      }
      const k = one(v);
      return k ? `${k}1` : null;
    };
    let k = kind(v0);
    for (const p of s.siteProperties) {
      const kk = kind(p[name]);
      if (kk === null || k === null) {
        k = null;
        break;
      }
      // Integers and reals mix into reals of the same width.
      if (kk !== k) k = kk.slice(1) === k.slice(1) && /[IR]/.test(kk[0]!) && /[IR]/.test(k[0]!) ? `R${k.slice(1)}` : null;
    }
    if (k) cols.push({ name, type: k[0] as "R" | "I" | "L" | "S", width: Number(k.slice(1)) });
  }
  return cols;
};

const infoString = (k: string, v: unknown): string | null => {
  if (!/^[A-Za-z_][\w-]*$/.test(k) || ["lattice", "properties", "pbc"].includes(k.toLowerCase())) return null;
  if (typeof v === "number" && Number.isFinite(v)) return `${k}=${v}`;
  if (typeof v === "boolean") return `${k}=${v ? "T" : "F"}`;
  if (typeof v === "string") return `${k}=${quote(v)}`;
  if (Array.isArray(v) && v.length && v.every((x) => typeof x === "number" && Number.isFinite(x))) return `${k}="${v.join(" ")}"`;
  return null;
};

export const writeExtxyzFrames = (list: readonly Structure[]): string => {
  const out: string[] = [];
  for (const s of list) {
    const el = orderedElements(s, "extended XYZ");
    const cols = columnsFor(s);
    const head: string[] = [];
    if (s.lattice)
      head.push(
        `Lattice="${s.lattice.matrix
          .flat()
          .map((v) => fmt(v, 10))
          .join(" ")}"`,
      );
    head.push(`Properties=species:S:1:pos:R:3${cols.map((c) => `:${c.name}:${c.type}:${c.width}`).join("")}`);
    for (const [k, v] of Object.entries(s.properties)) {
      const kv = infoString(k, v);
      if (kv) head.push(kv);
    }
    head.push(`pbc="${(s.lattice ? s.lattice.pbc : [false, false, false]).map((b) => (b ? "T" : "F")).join(" ")}"`);
    out.push(String(s.length), head.join(" "));
    for (let i = 0; i < s.length; i++) {
      let l = coordLine(el[i] as string, s, i);
      for (const c of cols) {
        const v = s.siteProperties[i]?.[c.name];
        const vals = Array.isArray(v) ? v : [v];
        l += ` ${vals.map((x) => (typeof x === "boolean" ? (x ? "T" : "F") : typeof x === "number" ? (c.type === "R" ? fmt(x, 10) : String(x)) : String(x))).join(" ")}`;
      }
      out.push(l);
    }
  }
  return `${out.join("\n")}\n`;
};

const xyzShape = (content: string): { ok: boolean; comment: string } => {
  const l = splitLines(head(content, 4096));
  const t = tokens(l[0]);
  if (t.length !== 1 || !(parseIntStrict(t[0]) >= 0)) return { ok: false, comment: "" };
  const a = tokens(l[2]);
  const ok = parseIntStrict(t[0]) === 0 || (a.length >= 4 && !!elementOf(a[0] as string) && !Number.isNaN(parseNum(a[1])));
  return { ok, comment: l[1] ?? "" };
};

const isExtended = (comment: string): boolean => /(^|\s)(Lattice|Properties)\s*=/i.test(comment);

export const xyzFormat: StructureFormat = {
  id: "xyz",
  name: "XYZ",
  extensions: ["xyz"],
  detect(content, filename) {
    const { ok, comment } = xyzShape(content);
    if (extensionOf(filename) === "xyz") return ok && isExtended(comment) ? 0.9 : 1;
    // Extended content is only read as plain XYZ when the name says .xyz (it loses the cell).
    return ok && !isExtended(comment) ? 0.8 : 0;
  },
  read: readXyz,
  write: (s) => writeXyzFrames([s]),
  writeFrames: writeXyzFrames,
};

export const extxyzFormat: StructureFormat = {
  id: "extxyz",
  name: "extended XYZ",
  extensions: ["extxyz"],
  detect(content, filename) {
    if (extensionOf(filename) === "extxyz") return 1;
    const { ok, comment } = xyzShape(content);
    return ok && isExtended(comment) ? 0.95 : 0;
  },
  read: readExtxyz,
  write: (s) => writeExtxyzFrames([s]),
  writeFrames: writeExtxyzFrames,
};
