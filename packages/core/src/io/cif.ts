/**
 * CIF reading and writing. The reader follows pymatgen's `CifParser` (default tolerances,
 * `parse_structures(primitive=False)`): symmetry operations are applied to every atom site,
 * images closer than 1e-4 in every fractional coordinate are merged, sites that coincide with a
 * symmetry image of an earlier site become one disordered site, coordinates within 1e-4 (relative)
 * of 1/3 or 2/3 are snapped, and the result is sorted by electronegativity as pymatgen does.
 * The writer produces a P1 CIF with occupancies.
 */

import { hall_symbol_entry, operations_from_number } from "@spglib/moyo-wasm";
import { composition, formula, reducedFormula } from "../composition.ts";
import { electronegativityOrder, elementInfo, isElement } from "../elements.ts";
import { AtomStudioError, fail, isAtomStudioError } from "../errors.ts";
import { Lattice } from "../lattice.ts";
import { type SiteSpecies, type SpeciesEntry, Structure, speciesString } from "../structure.ts";
import { isSymmetryReady } from "../symmetry.ts";
import {
  extensionOf,
  FrameBudget,
  fmt,
  formatError,
  head,
  LIMIT_CODES,
  parseNum,
  type ReadLimits,
  type StructureFormat,
  splitLines,
  tooManyAtoms,
} from "./util.ts";

interface Token {
  value: string;
  /** Quoted and text-field values are never keywords. */
  literal: boolean;
}

/** CIF 1.1 tokens: quoted strings end at a quote followed by whitespace; `;` fields span lines. */
const tokenize = (content: string): Token[] => {
  const out: Token[] = [];
  const lines = splitLines(content);
  for (let li = 0; li < lines.length; li++) {
    const line = lines[li] as string;
    if (line.startsWith(";")) {
      const text = [line.slice(1)];
      let closed = false;
      for (li++; li < lines.length; li++) {
        const l = lines[li] as string;
        if (l.startsWith(";")) {
          closed = true;
          // Anything after the closing semicolon is ordinary tokens.
          const rest = l.slice(1);
          if (rest.trim()) tokenizeLine(rest, out);
          break;
        }
        text.push(l);
      }
      if (!closed) throw formatError("CIF: a multi-line ';' text field is never closed");
      out.push({ value: text.join("\n").trim(), literal: true });
      continue;
    }
    tokenizeLine(line, out);
  }
  return out;
};

const isSpace = (c: string | undefined): boolean => c === " " || c === "\t" || c === "\r" || c === "\f" || c === "\v";

const tokenizeLine = (line: string, out: Token[]): void => {
  let i = 0;
  const n = line.length;
  while (i < n) {
    while (i < n && isSpace(line[i])) i++;
    if (i >= n) break;
    const c = line[i] as string;
    if (c === "#") break;
    if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < n && !(line[j] === c && (j + 1 >= n || isSpace(line[j + 1])))) j++;
      if (j >= n) throw formatError(`CIF: unterminated quoted string ${line.slice(i, i + 40)}`);
      out.push({ value: line.slice(i + 1, j), literal: true });
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < n && !isSpace(line[j])) j++;
    out.push({ value: line.slice(i, j), literal: false });
    i = j;
  }
};

interface Block {
  name: string;
  /** Keys lower-cased with "." replaced by "_", so CIF 1 and DDLm/mmCIF names agree. */
  values: Map<string, string | string[]>;
}

const normKey = (k: string): string => k.toLowerCase().replace(/\./g, "_");

const parseBlocks = (content: string): Block[] => {
  const toks = tokenize(content);
  const blocks: Block[] = [];
  let cur: Block | null = null;
  const isKey = (t: Token | undefined): boolean => !!t && !t.literal && t.value.startsWith("_");
  const isReserved = (t: Token | undefined): boolean => !!t && !t.literal && /^(loop_|data_|save_|global_|stop_)/i.test(t.value);
  let i = 0;
  while (i < toks.length) {
    const t = toks[i] as Token;
    const lower = t.value.toLowerCase();
    if (!t.literal && lower.startsWith("data_")) {
      cur = { name: t.value.slice(5), values: new Map() };
      blocks.push(cur);
      i++;
    } else if (!t.literal && (lower.startsWith("save_") || lower === "global_" || lower === "stop_")) {
      i++;
    } else if (!t.literal && lower === "loop_") {
      if (!cur) throw formatError("CIF: loop_ before any data_ block");
      i++;
      const keys: string[] = [];
      while (isKey(toks[i])) keys.push(normKey((toks[i++] as Token).value));
      if (keys.length === 0) throw formatError("CIF: loop_ without column names");
      const vals: string[] = [];
      while (i < toks.length && !isKey(toks[i]) && !isReserved(toks[i])) vals.push((toks[i++] as Token).value);
      if (vals.length % keys.length !== 0)
        throw formatError(
          `CIF block ${cur.name}: a loop has ${vals.length} values for ${keys.length} columns (${keys[0]}, ...)`,
          {
            columns: keys,
          },
        );
      const cols = keys.map(() => [] as string[]);
      for (let k = 0; k < vals.length; k++) (cols[k % keys.length] as string[]).push(vals[k] as string);
      for (let c = 0; c < keys.length; c++) cur.values.set(keys[c] as string, cols[c] as string[]);
    } else if (isKey(t)) {
      if (!cur) throw formatError("CIF: a data item before any data_ block");
      const v = toks[i + 1];
      if (!v || isKey(v) || isReserved(v)) {
        cur.values.set(normKey(t.value), "");
        i++;
      } else {
        cur.values.set(normKey(t.value), v.value);
        i += 2;
      }
    } else {
      // pymatgen only warns about stray values; so do we (by ignoring them).
      i++;
    }
  }
  return blocks;
};

/** pymatgen's str2float: the standard uncertainty in parentheses is dropped; "." means 0. */
const cifNumber = (text: string | undefined): number => {
  if (text === undefined) return Number.NaN;
  const t = text.replace(/\(.*$/, "").trim();
  if (t === ".") return 0;
  return parseNum(t);
};

const scalar = (b: Block, key: string): string | undefined => {
  const v = b.values.get(key);
  return Array.isArray(v) ? v[0] : v;
};
const column = (b: Block, key: string): string[] | undefined => {
  const v = b.values.get(key);
  return v === undefined ? undefined : Array.isArray(v) ? v : [v];
};

/** An affine operation on fractional coordinates: rows of `r`, translation `t`. */
interface SymOp {
  r: number[][];
  t: number[];
}

const RE_ROT = /([+-]?)([\d.]*)\/?([\d.]*)([x-z])/g;
const RE_TRANS = /([+-]?)([\d.]+)\/?([\d.]*)(?![x-z])/g;

/** pymatgen's `SymmOp.from_xyz_str`, but rejecting what is not an operation at all. */
const parseSymop = (s: string): SymOp => {
  const parts = s.trim().replace(/\s+/g, "").toLowerCase().split(",");
  if (parts.length !== 3 || parts.some((p) => !/^[xyz0-9./+-]+$/.test(p) || !/[xyz]/.test(p)))
    throw formatError(`CIF: ${JSON.stringify(s)} is not a symmetry operation like "-x+1/2, y, z"`);
  const r = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  const t = [0, 0, 0];
  parts.forEach((p, i) => {
    for (const m of p.matchAll(RE_ROT)) {
      let f = m[1] === "-" ? -1 : 1;
      if (m[2]) f *= m[3] ? Number(m[2]) / Number(m[3]) : Number(m[2]);
      (r[i] as number[])[(m[4] as string).charCodeAt(0) - 120] = f;
    }
    for (const m of p.matchAll(RE_TRANS)) {
      const v = m[3] ? Number(m[2]) / Number(m[3]) : Number(m[2]);
      t[i] = (m[1] === "-" ? -1 : 1) * v;
    }
  });
  if (r.flat().some((v) => !Number.isFinite(v)) || t.some((v) => !Number.isFinite(v)))
    throw formatError(`CIF: symmetry operation ${JSON.stringify(s)} has a non-finite coefficient`);
  return { r, t };
};

const apply = (op: SymOp, c: readonly number[]): number[] =>
  op.r.map(
    (row, i) =>
      (row[0] as number) * (c[0] as number) +
      (row[1] as number) * (c[1] as number) +
      (row[2] as number) * (c[2] as number) +
      (op.t[i] as number),
  );

const SYMOP_KEYS = ["_symmetry_equiv_pos_as_xyz", "_space_group_symop_operation_xyz"];
/** pymatgen's order: Hermann-Mauguin names first, then Hall symbols. */
const SG_KEYS = [
  "_symmetry_space_group_name_h-m",
  "_symmetry_space_group_name_h_m",
  "_space_group_name_h-m_alt",
  "_space_group_name_hall",
  "_symmetry_space_group_name_hall",
];

interface HallEntry {
  hall: number;
  number: number;
  setting: string;
  hallKey: string;
  hmShort: string;
  hmFull: string;
}

let hallTable: HallEntry[] | undefined;
const squash = (s: string): string => s.toLowerCase().replace(/[\s_]/g, "");
/** The 530 settings of the 230 space groups, from moyo (needs `initSymmetry()` to have run). */
const hallEntries = (): HallEntry[] => {
  if (!hallTable) {
    hallTable = [];
    for (let h = 1; h <= 530; h++) {
      const e = hall_symbol_entry(h);
      hallTable.push({
        hall: h,
        number: e.number,
        setting: e.setting.toLowerCase(),
        hallKey: e.hall_symbol.toLowerCase().replace(/\s+/g, " ").trim(),
        hmShort: squash(e.hm_short),
        hmFull: squash(e.hm_full),
      });
    }
  }
  return hallTable;
};

/** A space-group setting from an H-M name ("P 1 21/n 1", "Fd-3m:2", "R-3m:H") or a Hall symbol. */
const findSetting = (name: string, hallOnly: boolean): HallEntry | undefined => {
  const table = hallEntries();
  const hallKey = name.toLowerCase().replace(/\s+/g, " ").trim();
  const byHall = table.find((e) => e.hallKey === hallKey);
  if (byHall || hallOnly) return byHall;
  const [sym, suffix] = squash(name).split(":") as [string, string | undefined];
  const matches = table.filter((e) => e.hmShort === sym || e.hmFull === sym);
  if (suffix === undefined) return matches[0];
  // Origin choice "1"/"2", rhombohedral "h"/"r", or a monoclinic cell choice such as "b1".
  return matches.find((e) => e.setting === suffix || e.setting.endsWith(suffix)) ?? undefined;
};

const operationsOf = (e: HallEntry): SymOp[] =>
  operations_from_number(e.number, { type: "HallNumber", value: e.hall }, false).map((op) => {
    const r = op.rotation;
    return {
      r: [
        [r[0], r[1], r[2]],
        [r[3], r[4], r[5]],
        [r[6], r[7], r[8]],
      ],
      t: [...op.translation],
    } as SymOp;
  });

const symops = (b: Block): SymOp[] => {
  for (const key of SYMOP_KEYS) {
    const ops = column(b, key);
    if (ops && ops.length > 0 && ops.some((o) => o.trim())) return ops.map(parseSymop);
  }
  // No listed operations: generate them from the space group's name or number, as pymatgen does.
  const named: string[] = [];
  for (const key of SG_KEYS) {
    const sg = scalar(b, key);
    if (sg && !["?", "."].includes(sg.trim())) named.push(sg.trim());
  }
  const numbers = ["_space_group_it_number", "_symmetry_int_tables_number"]
    .map((k) => scalar(b, k))
    .filter((v): v is string => !!v && !Number.isNaN(cifNumber(v)));
  if (named.length === 0 && numbers.length === 0) return [IDENTITY];
  if (named.every((n) => /^p\s*1$/i.test(n)) && numbers.every((n) => cifNumber(n) === 1)) return [IDENTITY];
  if (!isSymmetryReady())
    throw formatError(
      `CIF block ${b.name}: space group ${named[0] ?? numbers[0]} is given without its symmetry operations, and the space-group tables are not loaded (await initSymmetry() first)`,
    );
  for (const n of named) {
    const e = findSetting(n, false);
    if (e) return operationsOf(e);
  }
  for (const n of numbers) {
    const num = Math.round(cifNumber(n));
    const e = num >= 1 && num <= 230 ? hallEntries().find((x) => x.number === num) : undefined;
    if (e) return operationsOf(e);
  }
  throw formatError(
    `CIF block ${b.name}: unknown space group ${JSON.stringify(named[0] ?? numbers[0])} and no symmetry operations listed`,
  );
};

/**
 * The most distinct operations a space group has in a conventional setting (Fm-3m: 48 point
 * operations times 4 centring translations). A CIF listing more describes no crystal, and each
 * operation multiplies the atoms generated.
 */
export const MAX_SYMMETRY_OPERATIONS = 192;

/** Listed operations without repeats (translations compared modulo 1), in their first order. */
const distinctOps = (ops: readonly SymOp[], block: string): SymOp[] => {
  const seen = new Set<string>();
  const out: SymOp[] = [];
  for (const op of ops) {
    const t = op.t.map((v) => {
      const w = v - Math.floor(v);
      return (Math.abs(w - 1) < 1e-6 ? 0 : w).toFixed(6);
    });
    const key = `${op.r.flat().join(",")}|${t.join(",")}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(op);
    if (out.length > MAX_SYMMETRY_OPERATIONS)
      throw new AtomStudioError(
        "TOO_MANY_SYMMETRY_OPERATIONS",
        `CIF block ${block}: more than ${MAX_SYMMETRY_OPERATIONS} distinct symmetry operations (no space group has more)`,
        { limit: MAX_SYMMETRY_OPERATIONS },
      );
  }
  return out;
};

const IDENTITY: SymOp = {
  r: [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
  ],
  t: [0, 0, 0],
};

const SPECIAL_SYMBOLS: Record<string, string> = { Hw: "H", Ow: "O", Wat: "O", wat: "O", OH: "", OH2: "", NO3: "N" };
const SPECIAL_RE = /^(Hw|Ow|Wat|wat|OH|OH2|NO3)/;
const title = (s: string): string => (s ? s[0]!.toUpperCase() + s.slice(1).toLowerCase() : s);

/** pymatgen's `CifParser._parse_symbol`: "" means the site is skipped (as pymatgen does). */
const parseSymbol = (sym: string): string | undefined => {
  const sp = SPECIAL_RE.exec(sym);
  if (sp) return SPECIAL_SYMBOLS[sp[1] as string];
  if (isElement(title(sym.slice(0, 2)))) return title(sym.slice(0, 2));
  if (sym[0] && isElement(sym[0].toUpperCase())) return sym[0].toUpperCase();
  return undefined;
};

interface Comp {
  /** species key ("Fe" or "Fe|3") -> entry */
  entries: Map<string, { element: string; oxi: number | undefined; amount: number }>;
}

const compKey = (c: Comp): string =>
  [...c.entries.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}:${v.amount.toPrecision(9)}`)
    .join(",");

const GRID = 64;

/**
 * Fractional positions with pymatgen's periodic `find_in_coord_list_pbc` test (every component
 * within `tol` modulo 1), bucketed on a grid so that generating large cells stays linear.
 * `find` returns the earliest matching index, as pymatgen's list search does.
 */
class FracIndex {
  readonly coords: number[][] = [];
  readonly #cells = new Map<number, number[]>();
  constructor(readonly tol: number) {}

  #cellsOf(c: readonly number[], near: boolean): number[][] {
    return c.map((x) => {
      const w = (x - Math.floor(x)) * GRID;
      const i = Math.min(GRID - 1, Math.floor(w));
      if (!near) return [i];
      const out = [i];
      if (w - i < this.tol * GRID) out.push((i + GRID - 1) % GRID);
      if (i + 1 - w < this.tol * GRID) out.push((i + 1) % GRID);
      return out;
    });
  }

  find(c: readonly number[]): number {
    const [xs, ys, zs] = this.#cellsOf(c, true) as [number[], number[], number[]];
    let best = -1;
    for (const x of xs)
      for (const y of ys)
        for (const z of zs) {
          const bucket = this.#cells.get((x * GRID + y) * GRID + z);
          if (!bucket) continue;
          for (const k of bucket) {
            if (best >= 0 && k >= best) break;
            const o = this.coords[k] as number[];
            let ok = true;
            for (let d = 0; d < 3 && ok; d++) {
              const diff = (o[d] as number) - (c[d] as number);
              if (Math.abs(diff - Math.round(diff)) >= this.tol) ok = false;
            }
            if (ok) best = k;
          }
        }
    return best;
  }

  add(c: number[]): number {
    const [[x], [y], [z]] = this.#cellsOf(c, false) as [[number], [number], [number]];
    const key = (x * GRID + y) * GRID + z;
    const bucket = this.#cells.get(key);
    this.coords.push(c);
    if (bucket) bucket.push(this.coords.length - 1);
    else this.#cells.set(key, [this.coords.length - 1]);
    return this.coords.length - 1;
  }
}

const SITE_TOL = 1e-4;
const FRAC_TOL = 1e-4;

const snapFraction = (x: number): number => {
  for (const f of [1 / 3, 2 / 3]) if (Math.abs(x / f - 1) <= FRAC_TOL) return f;
  return x;
};

const oxidationStates = (b: Block): Map<string, number> | null => {
  const sy = column(b, "_atom_type_symbol");
  const ox = column(b, "_atom_type_oxidation_number");
  if (!sy || !ox || sy.length !== ox.length) return null;
  const m = new Map<string, number>();
  for (let i = 0; i < sy.length; i++) {
    const v = cifNumber(ox[i]);
    if (Number.isNaN(v)) return null;
    m.set(sy[i] as string, v);
  }
  for (let i = 0; i < sy.length; i++) m.set((sy[i] as string).replace(/\d?[+,-]?$/, ""), cifNumber(ox[i]));
  return m;
};

const averageX = (sp: SiteSpecies): number => {
  let x = 0;
  let n = 0;
  for (const s of sp) {
    x += (elementInfo(s.element)?.X ?? Number.NaN) * s.occu;
    n += s.occu;
  }
  return x / n;
};

const blockToStructure = (b: Block, limits?: ReadLimits): Structure => {
  const cell = ["a", "b", "c"].map((k) => cifNumber(scalar(b, `_cell_length_${k}`)));
  const angles = ["alpha", "beta", "gamma"].map((k) => cifNumber(scalar(b, `_cell_angle_${k}`)));
  const missing = [
    ...["a", "b", "c"].filter((_, i) => Number.isNaN(cell[i])),
    ...["alpha", "beta", "gamma"].filter((_, i) => Number.isNaN(angles[i])),
  ];
  if (missing.length)
    throw formatError(`CIF block ${b.name}: no unit cell (missing or unreadable _cell_length/_cell_angle ${missing.join(", ")})`);
  if (cell.some((v) => v <= 0) || angles.some((v) => v <= 0 || v >= 180))
    throw formatError(`CIF block ${b.name}: impossible cell parameters ${[...cell, ...angles].join(", ")}`);
  let lattice: Lattice;
  try {
    lattice = Lattice.fromParameters(cell[0]!, cell[1]!, cell[2]!, angles[0]!, angles[1]!, angles[2]!);
  } catch (e) {
    throw formatError(`CIF block ${b.name}: ${(e as Error).message}`);
  }
  const labels = column(b, "_atom_site_label");
  const types = column(b, "_atom_site_type_symbol");
  const n = (labels ?? types)?.length;
  if (!n) throw formatError(`CIF block ${b.name}: no atom sites (_atom_site_label / _atom_site_type_symbol)`);
  const fx = column(b, "_atom_site_fract_x");
  const fy = column(b, "_atom_site_fract_y");
  const fz = column(b, "_atom_site_fract_z");
  const cx = column(b, "_atom_site_cartn_x");
  const cy = column(b, "_atom_site_cartn_y");
  const cz = column(b, "_atom_site_cartn_z");
  if (!(fx && fy && fz) && !(cx && cy && cz))
    throw formatError(`CIF block ${b.name}: atom sites have no coordinates (_atom_site_fract_x/y/z)`);
  const occ = column(b, "_atom_site_occupancy");
  const oxi = oxidationStates(b);
  const ops = distinctOps(symops(b), b.name);
  const maxAtoms = limits?.maxAtoms ?? Number.POSITIVE_INFINITY;
  /** Symmetry expansion is where a few kilobytes become 100,000s of atoms: stop at the cap, before allocating past it. */
  const overCap = (what: string): AtomStudioError =>
    tooManyAtoms(
      `CIF block ${b.name}: ${what} gives more than ${maxAtoms} atoms, the limit (${ops.length} symmetry operations)`,
      { limit: maxAtoms, n_symmetry_operations: ops.length },
    );

  const reps = new FracIndex(SITE_TOL);
  const comps: Comp[] = [];
  const repLabels: string[] = [];
  for (let i = 0; i < n; i++) {
    const label = labels?.[i] ?? types?.[i] ?? "";
    const typeSym = types?.[i] ?? label;
    const el = parseSymbol(typeSym);
    if (el === "") continue;
    if (el === undefined) throw formatError(`CIF block ${b.name}: no element in atom site ${JSON.stringify(typeSym)}`);
    let oxiState: number | undefined;
    if (oxi) oxiState = oxi.get(typeSym) ?? oxi.get(el) ?? 0;
    let occu = 1;
    if (occ) {
      const v = cifNumber(occ[i]);
      if (!Number.isNaN(v)) occu = v;
    }
    if (!(occu > 0)) continue;
    let c: number[];
    if (fx && fy && fz) c = [fx[i], fy[i], fz[i]].map((v) => cifNumber(v));
    else {
      const cart = [cx?.[i], cy?.[i], cz?.[i]].map((v) => cifNumber(v));
      c = cart.some(Number.isNaN) ? cart : lattice.toFractional(cart);
    }
    if (c.some(Number.isNaN)) throw formatError(`CIF block ${b.name}: atom site ${label} has unreadable coordinates`);
    c = c.map(snapFraction);
    const key = oxiState === undefined ? el : `${el}|${oxiState}`;
    let match = -1;
    for (const op of ops) {
      match = reps.find(apply(op, c));
      if (match >= 0) break;
    }
    if (match < 0) {
      // Each distinct site yields at least one atom.
      if (reps.coords.length >= maxAtoms) throw overCap(`listing more distinct atom sites than the limit`);
      reps.add(c);
      comps.push({ entries: new Map([[key, { element: el, oxi: oxiState, amount: occu }]]) });
      repLabels.push(label);
    } else {
      const e = (comps[match] as Comp).entries;
      const prev = e.get(key);
      if (prev) prev.amount += occu;
      else e.set(key, { element: el, oxi: oxiState, amount: occu });
      repLabels[match] = label;
    }
  }
  if (reps.coords.length === 0) throw formatError(`CIF block ${b.name}: no atom site with an element and a positive occupancy`);

  // Equal compositions are expanded together, as pymatgen groups them.
  const groups = new Map<string, number[]>();
  comps.forEach((c, k) => {
    const key = compKey(c);
    const g = groups.get(key);
    if (g) g.push(k);
    else groups.set(key, [k]);
  });
  const frac: number[][] = [];
  const species: SiteSpecies[] = [];
  const siteLabels: string[] = [];
  for (const members of groups.values()) {
    const comp = comps[members[0] as number] as Comp;
    let total = 0;
    for (const e of comp.entries.values()) total += e.amount;
    if (total > 1 + 1e-6)
      throw formatError(
        `CIF block ${b.name}: occupancies on the site of ${repLabels[members[0] as number]} add up to ${total}, more than 1`,
      );
    const scale = total > 1 ? 1 / total : 1;
    const sp: SpeciesEntry[] = [...comp.entries.values()].map((e) =>
      e.oxi === undefined
        ? { element: e.element, occu: e.amount * scale }
        : { element: e.element, occu: e.amount * scale, oxidation_state: e.oxi },
    );
    const frozen = Object.freeze(sp);
    const out = new FracIndex(SITE_TOL);
    for (const k of members) {
      for (const op of ops) {
        const c = apply(op, reps.coords[k] as number[]).map((v) => v - Math.floor(v));
        if (out.find(c) < 0) {
          if (frac.length >= maxAtoms) throw overCap(`expanding ${reps.coords.length} atom sites by symmetry`);
          out.add(c);
          frac.push(c);
          species.push(frozen);
          siteLabels.push(repLabels[k] as string);
        }
      }
    }
  }
  // pymatgen's get_sorted_structure: average electronegativity, then species string (stable).
  const order = species.map((_, k) => k);
  const keyX = species.map(averageX);
  const keyS = species.map(speciesString);
  order.sort((p, q) => {
    const a = keyX[p] as number;
    const c = keyX[q] as number;
    if (a < c) return -1;
    if (a > c) return 1;
    const sa = keyS[p] as string;
    const sc = keyS[q] as string;
    return sa < sc ? -1 : sa > sc ? 1 : 0;
  });
  const cart = new Float64Array(3 * order.length);
  order.forEach((k, i) => {
    const p = lattice.toCartesian(frac[k] as number[]);
    cart[3 * i] = p[0];
    cart[3 * i + 1] = p[1];
    cart[3 * i + 2] = p[2];
  });
  return new Structure({
    lattice,
    species: order.map((k) => species[k] as SiteSpecies),
    cart,
    labels: order.map((k) => siteLabels[k] as string),
  });
};

export const readCif = (content: string, limits?: ReadLimits): Structure[] => {
  const blocks = parseBlocks(content);
  if (blocks.length === 0) throw formatError("CIF: no data_ block");
  const out: Structure[] = [];
  const budget = new FrameBudget(limits, "CIF");
  const reasons: string[] = [];
  for (const b of blocks) {
    // Blocks without atom sites (publication, powder pattern) are not structures.
    if (!b.values.has("_atom_site_label") && !b.values.has("_atom_site_type_symbol")) {
      reasons.push(`CIF block ${b.name}: no atom sites`);
      continue;
    }
    let s: Structure;
    try {
      s = blockToStructure(b, limits);
    } catch (e) {
      if (isAtomStudioError(e) && LIMIT_CODES.has(e.code)) throw e;
      reasons.push((e as Error).message);
      continue;
    }
    budget.frame(s.length);
    out.push(s);
  }
  if (out.length === 0) throw formatError(reasons.join("; "), { blocks: reasons });
  return out;
};

const cifValue = (v: string): string => (v === "" ? "''" : /[\s'"#]|^[_;$[\]]/.test(v) ? `'${v.replace(/'/g, "")}'` : v);

export const writeCif = (s: Structure): string => {
  const lattice = s.lattice ?? fail("MISSING_LATTICE", "CIF needs a lattice; this structure is a molecule");
  const comp = composition(s.species);
  const [a, b, c] = lattice.lengths;
  const [al, be, ga] = lattice.angles;
  const num = (x: number): string => fmt(x, 8);
  const out = [
    "# generated by AtomStudio",
    `data_${reducedFormula(comp).replace(/\s+/g, "") || "structure"}`,
    "_symmetry_space_group_name_H-M   'P 1'",
    `_cell_length_a   ${num(a)}`,
    `_cell_length_b   ${num(b)}`,
    `_cell_length_c   ${num(c)}`,
    `_cell_angle_alpha   ${num(al)}`,
    `_cell_angle_beta   ${num(be)}`,
    `_cell_angle_gamma   ${num(ga)}`,
    "_symmetry_Int_Tables_number   1",
    `_chemical_formula_structural   ${reducedFormula(comp) || "?"}`,
    `_chemical_formula_sum   ${cifValue(formula(comp))}`,
    `_cell_volume   ${num(lattice.volume)}`,
    "loop_",
    " _symmetry_equiv_pos_site_id",
    " _symmetry_equiv_pos_as_xyz",
    "  1  'x, y, z'",
  ];
  const oxi = new Map<string, number>();
  for (const sp of s.species)
    for (const e of sp)
      if (e.oxidation_state !== undefined) oxi.set(`${e.element}${oxSuffix(e.oxidation_state)}`, e.oxidation_state);
  if (oxi.size) {
    out.push("loop_", " _atom_type_symbol", " _atom_type_oxidation_number");
    for (const [k, v] of oxi) out.push(`  ${k}  ${v}`);
  }
  out.push(
    "loop_",
    " _atom_site_type_symbol",
    " _atom_site_label",
    " _atom_site_symmetry_multiplicity",
    " _atom_site_fract_x",
    " _atom_site_fract_y",
    " _atom_site_fract_z",
    " _atom_site_occupancy",
  );
  const fr = s.frac;
  const counts = new Map<string, number>();
  for (let i = 0; i < s.length; i++) {
    const sp = [...(s.species[i] as SiteSpecies)].sort((x, y) => electronegativityOrder(x.element, y.element));
    const given = s.labels[i] ?? "";
    for (const e of sp) {
      const sym = e.oxidation_state === undefined ? e.element : `${e.element}${oxSuffix(e.oxidation_state)}`;
      // A label must be one token; the default labels of disordered sites are not.
      let label = sp.length === 1 && /^\S+$/.test(given) ? given : "";
      if (!label) {
        const k = (counts.get(e.element) ?? 0) + 1;
        counts.set(e.element, k);
        label = `${e.element}${k}`;
      }
      out.push(
        `  ${sym}  ${cifValue(label)}  1  ${fmt(fr[3 * i]!, 10)}  ${fmt(fr[3 * i + 1]!, 10)}  ${fmt(fr[3 * i + 2]!, 10)}  ${+e.occu.toFixed(10)}`,
      );
    }
  }
  return `${out.join("\n")}\n`;
};

const oxSuffix = (ox: number): string => `${Math.abs(ox) === 1 ? "" : Math.abs(ox)}${ox >= 0 ? "+" : "-"}`;

export const cifFormat: StructureFormat = {
  id: "cif",
  name: "CIF",
  extensions: ["cif", "mcif"],
  detect(content, filename) {
    const ext = extensionOf(filename);
    if (ext === "cif" || ext === "mcif") return 1;
    const h = head(content);
    if (!/^\s*data_/im.test(h)) return 0;
    return /_cell_length_a|_atom_site_|loop_/i.test(h) ? 0.9 : 0.5;
  },
  read: readCif,
  write: writeCif,
};
