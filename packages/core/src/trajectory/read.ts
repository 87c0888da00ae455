/**
 * Trajectory readers straight into the trajectory type: VASP XDATCAR (constant and variable
 * cell), extended and plain XYZ, multi-model PDB (a CRYST1 holds until the next one, so a cell
 * given only on the first model carries forward), and LAMMPS text dumps (orthogonal and
 * triclinic boxes, scaled or unscaled coordinates, atoms sorted by id). Every size is checked
 * against the caps as frames arrive, before more memory is taken.
 */
import { ELEMENTS } from "../elements.ts";
import { AtomStudioError, fail, isAtomStudioError } from "../errors.ts";
import { parseStructureFile } from "../io/index.ts";
import { elementOf as pdbElementOf, readCryst1 } from "../io/pdb.ts";
import { expand, readHeader, symbolsFromComment } from "../io/poscar.ts";
import { baseName, extensionOf, formatError, normalizeElement, parseIntStrict } from "../io/util.ts";
import { parseKeyValues } from "../io/xyz.ts";
import { LineCursor, numberAt, tokenize } from "./text.ts";
import { compactCells, type Pbc, Trajectory } from "./trajectory.ts";

export type TrajectoryFormatId = "xdatcar" | "extxyz" | "xyz" | "pdb" | "lammpstrj" | "structure";

export interface TrajectoryLimits {
  /** Most frames a file may hold. */
  maxFrames: number;
  /** Most atoms per frame. */
  maxAtoms: number;
  /** Most atom-frames (frames × atoms), the memory budget: 8·3 bytes each. */
  maxAtomFrames: number;
}

export const DEFAULT_TRAJECTORY_LIMITS: TrajectoryLimits = {
  maxFrames: 100_000,
  maxAtoms: 200_000,
  maxAtomFrames: 20_000_000,
};

export interface TrajectoryReadOptions {
  filename?: string;
  format?: string;
  limits?: Partial<TrajectoryLimits>;
  /** LAMMPS dumps without an element column: atom type → element ("1" → "O"); else type = atomic number (ASE). */
  lammpsTypes?: Record<string, string>;
}

export interface ParsedTrajectory {
  trajectory: Trajectory;
  format: TrajectoryFormatId;
  /** Text offset where the second frame begins (-1 for one frame): text before it reads as the first frame alone. */
  secondFrameAt: number;
}

/** Set by the last reader to finish (readers are synchronous, so no other read interleaves). */
let lastSecondFrameAt = -1;

/** Grows the coordinate array frame by frame; after the first frame it sizes itself from the text length. */
class FrameStore {
  coords: Float64Array;
  cells: number[] = [];
  times: number[] = [];
  nFrames = 0;
  /** Where the second frame starts in the text (the first frame's text is everything before). */
  secondFrameAt = -1;
  readonly n3: number;
  constructor(
    readonly nAtoms: number,
    readonly limits: TrajectoryLimits,
    readonly what: string,
    readonly textLength: number,
  ) {
    if (nAtoms > limits.maxAtoms)
      throw new AtomStudioError("TOO_MANY_ATOMS", `${what}: ${nAtoms} atoms per frame; at most ${limits.maxAtoms} are accepted`, {
        n_atoms: nAtoms,
        max_atoms: limits.maxAtoms,
      });
    this.n3 = 3 * nAtoms;
    this.coords = new Float64Array(this.n3);
  }

  /** Offset where the next frame's coordinates go; `consumed` is how far into the text this frame starts. */
  slot(consumed: number): number {
    const f = this.nFrames;
    if (f === 1 && this.secondFrameAt < 0) this.secondFrameAt = consumed;
    const maxFrames = Math.min(this.limits.maxFrames, Math.floor(this.limits.maxAtomFrames / this.nAtoms));
    if (f + 1 > maxFrames)
      throw new AtomStudioError(
        "TOO_MANY_FRAMES",
        `${this.what}: more than ${maxFrames} frames of ${this.nAtoms} atoms (caps: ${this.limits.maxFrames} frames, ${this.limits.maxAtomFrames} atom-frames); read a range or a stride of the file`,
        { max_frames: maxFrames, n_atoms: this.nAtoms },
      );
    const capacity = this.coords.length / this.n3;
    if (f >= capacity) {
      // After one frame the bytes per frame are known: size for the whole text at once.
      const estimate =
        f === 1 && consumed > 0 ? Math.ceil((this.textLength / consumed) * 1.02) + 1 : Math.ceil(capacity * 1.5) + 1;
      const next = Math.max(f + 1, Math.min(maxFrames, estimate));
      const grown = new Float64Array(next * this.n3);
      grown.set(this.coords.subarray(0, f * this.n3));
      this.coords = grown;
    }
    return f * this.n3;
  }

  commit(cell: ArrayLike<number> | null, time?: number): void {
    if (cell) for (let k = 0; k < 9; k++) this.cells.push(cell[k] as number);
    if (time !== undefined) this.times.push(time);
    this.nFrames++;
  }

  finish(elements: readonly string[], opts: { pbc?: Pbc; names?: readonly string[] } = {}): Trajectory {
    lastSecondFrameAt = this.secondFrameAt;
    const used = this.nFrames * this.n3;
    // Keep the estimate's slack only when it is small; otherwise copy to the exact size.
    const coords =
      this.coords.length === used
        ? this.coords
        : this.coords.length - used > used / 20
          ? this.coords.slice(0, used)
          : this.coords.subarray(0, used);
    if (this.cells.length && this.cells.length !== 9 * this.nFrames)
      throw formatError(`${this.what}: some frames have a cell and others do not`);
    return new Trajectory({
      elements,
      coords,
      cells: this.cells.length ? compactCells(Float64Array.from(this.cells)) : null,
      ...(opts.pbc ? { pbc: opts.pbc } : {}),
      ...(this.times.length === this.nFrames && this.nFrames > 0 ? { times: Float64Array.from(this.times) } : {}),
      ...(opts.names ? { names: opts.names } : {}),
    });
  }
}

const inconsistent = (what: string, frame: number, n: number, expected: number): AtomStudioError =>
  new AtomStudioError("INCONSISTENT_FRAMES", `${what}: frame ${frame} has ${n} atoms, frame 0 has ${expected}`, {
    frame,
    n_atoms: n,
    expected,
  });

const tok = new Int32Array(128);

/** Reads `count` numbers of text[start, end) into out[at…]; returns how many it found. */
const readNumbers = (text: string, start: number, end: number, out: Float64Array, at: number, count: number): number => {
  const nt = tokenize(text, start, end, tok, count);
  for (let k = 0; k < nt; k++) {
    const v = numberAt(text, tok[2 * k] as number, tok[2 * k + 1] as number);
    if (Number.isNaN(v)) return k;
    out[at + k] = v;
  }
  return nt;
};

const f3 = new Float64Array(3);

// ---------------------------------------------------------------- XDATCAR

export const readXdatcarTrajectory = (text: string, limits: TrajectoryLimits): Trajectory => {
  const what = "XDATCAR";
  const cur = new LineCursor(text);
  let store = null as FrameStore | null;
  let elements: string[] = [];
  let cell: number[] | null = null;
  let cartScale: [number, number, number] = [1, 1, 1];
  let n = 0;
  while (cur.advance()) {
    if (cur.isBlank()) continue;
    const line = cur.line;
    if (!/configuration/i.test(line)) {
      // A header: the first one, or a new cell in a variable-cell run.
      const head: string[] = [line];
      const m = cur.mark();
      while (head.length < 40 && cur.advance()) {
        if (/configuration/i.test(cur.line)) break;
        head.push(cur.line);
      }
      const h = readHeader(head, 0, what);
      // Rewind to the line after the header.
      cur.restore(m);
      for (let k = 1; k < h.next; k++) cur.advance();
      const names = h.symbols ?? symbolsFromComment(h.comment, h.counts.length);
      if (!names) throw formatError(`${what}: VASP 4 file without species (no species line, none in the comment line)`);
      const els = expand(names, h.counts);
      if (!store) {
        store = new FrameStore(els.length, limits, what, text.length);
        elements = els;
        n = els.length;
      } else if (els.length !== n) throw inconsistent(what, store.nFrames, els.length, n);
      else if (els.some((e, k) => e !== elements[k]))
        throw new AtomStudioError("INCONSISTENT_FRAMES", `${what}: the species change at frame ${store.nFrames}`, {
          frame: store.nFrames,
        });
      cell = h.lattice.matrix.flat();
      cartScale = h.cartScale;
      continue;
    }
    if (!store || !cell) throw formatError(`${what} line ${cur.lineNo}: a configuration before any header`);
    const cartesian = /^\s*[cCkK]/.test(line);
    const at = store.slot(cur.start);
    const out = store.coords;
    let complete = true;
    for (let k = 0; k < n; k++) {
      if (!cur.advance() || readNumbers(text, cur.start, cur.end, f3, 0, 3) < 3) {
        complete = false;
        break;
      }
      const o = at + 3 * k;
      if (cartesian) {
        out[o] = (f3[0] as number) * cartScale[0];
        out[o + 1] = (f3[1] as number) * cartScale[1];
        out[o + 2] = (f3[2] as number) * cartScale[2];
      } else {
        const x = f3[0] as number;
        const y = f3[1] as number;
        const z = f3[2] as number;
        out[o] = x * (cell[0] as number) + y * (cell[3] as number) + z * (cell[6] as number);
        out[o + 1] = x * (cell[1] as number) + y * (cell[4] as number) + z * (cell[7] as number);
        out[o + 2] = x * (cell[2] as number) + y * (cell[5] as number) + z * (cell[8] as number);
      }
    }
    if (!complete) {
      // An MD run that was cut off: keep the complete frames (as pymatgen does).
      if (store.nFrames > 0) break;
      throw formatError(`${what} is truncated: the first configuration has fewer than ${n} coordinate lines`);
    }
    store.commit(cell);
  }
  if (!store || store.nFrames === 0)
    throw formatError(`${what}: no configuration found (expected "Direct configuration=" lines)`);
  return store.finish(elements);
};

// ---------------------------------------------------------------- XYZ and extended XYZ

const xyzElement = (t: string): string | undefined => {
  const z = parseIntStrict(t);
  if (!Number.isNaN(z)) return ELEMENTS[z - 1]?.symbol;
  return normalizeElement(t) ?? normalizeElement(t.replace(/[\d_+-].*$/, ""));
};

interface XyzLayout {
  speciesCol: number;
  posCol: number;
  width: number;
}

const layoutOf = (props: string | true | undefined, what: string): XyzLayout => {
  const spec = typeof props === "string" ? props : "species:S:1:pos:R:3";
  const parts = spec.split(":");
  if (parts.length % 3 !== 0) throw formatError(`${what}: Properties=${spec} is not name:type:count triples`);
  let col = 0;
  let speciesCol = -1;
  let posCol = -1;
  for (let k = 0; k < parts.length; k += 3) {
    const name = (parts[k] as string).toLowerCase();
    const type = (parts[k + 1] as string).toUpperCase();
    const width = parseIntStrict(parts[k + 2]);
    if (!(width >= 1)) throw formatError(`${what}: Properties column ${parts[k]} has count ${parts[k + 2]}`);
    if (name === "species" && type === "S") speciesCol = col;
    if (/^pos(itions)?$/.test(name) && type === "R" && width === 3) posCol = col;
    col += width;
  }
  if (speciesCol < 0 || posCol < 0) throw formatError(`${what}: Properties must have species:S:1 and pos:R:3`);
  return { speciesCol, posCol, width: col };
};

const getCI = (m: Map<string, string | true>, key: string): string | true | undefined => {
  for (const [k, v] of m) if (k.toLowerCase() === key) return v;
  return undefined;
};

export const readXyzTrajectory = (text: string, limits: TrajectoryLimits, extended: boolean): Trajectory => {
  const what = extended ? "extended XYZ" : "XYZ";
  const cur = new LineCursor(text);
  let store = null as FrameStore | null;
  let elements: string[] = [];
  let pbc: Pbc | undefined;
  let layout: XyzLayout = { speciesCol: 0, posCol: 1, width: 4 };
  let lastProps: string | true | undefined;
  const cell = new Float64Array(9);
  const maxTok = 64;
  while (cur.advance()) {
    if (cur.isBlank()) continue;
    const frameStart = cur.start;
    const nt = tokenize(text, cur.start, cur.end, tok, 2);
    const count = nt === 1 ? parseIntStrict(text.slice(tok[0], tok[1])) : Number.NaN;
    if (!(count >= 1))
      throw formatError(
        `${what} line ${cur.lineNo}: expected the number of atoms, found ${JSON.stringify(cur.line.trim().slice(0, 60))}`,
      );
    if (store && count !== store.nAtoms) throw inconsistent(what, store.nFrames, count, store.nAtoms);
    if (!cur.advance()) {
      if (store) break;
      throw formatError(`${what}: the file ends after the atom count`);
    }
    let hasCell = false;
    if (extended) {
      const kv = parseKeyValues(cur.line);
      const lat = getCI(kv, "lattice");
      const props = getCI(kv, "properties");
      if (!store && lat === undefined && props === undefined)
        throw formatError(`${what}: the comment line has neither Lattice= nor Properties= (a plain XYZ file)`);
      if (props !== lastProps || !store) {
        layout = layoutOf(props, what);
        lastProps = props;
      }
      if (typeof lat === "string") {
        if (readNumbers(lat, 0, lat.length, cell, 0, 9) !== 9)
          throw formatError(`${what} line ${cur.lineNo}: Lattice must have 9 numbers`);
        hasCell = true;
        const p = getCI(kv, "pbc");
        if (typeof p === "string" && !pbc) {
          const flags = p
            .trim()
            .split(/\s+/)
            .map((s) => /^(t|true)$/i.test(s));
          pbc = flags.length === 3 ? (flags as Pbc) : [flags[0] ?? true, flags[0] ?? true, flags[0] ?? true];
        }
      }
    }
    if (!store) {
      store = new FrameStore(count, limits, what, text.length);
      elements = new Array(count);
    }
    const at = store.slot(frameStart);
    const out = store.coords;
    const first = store.nFrames === 0;
    const fast = layout.speciesCol === 0 && layout.posCol === 1;
    const need = Math.min(maxTok, Math.max(layout.speciesCol, layout.posCol + 2) + 1);
    for (let k = 0; k < count; k++) {
      if (!cur.advance()) {
        if (store.nFrames > 0) return store.finish(elements, pbc ? { pbc } : {});
        throw formatError(`${what}: frame 1 announces ${count} atoms but the file ends after ${k}`);
      }
      const nt2 = tokenize(text, cur.start, cur.end, tok, need);
      if (nt2 < need) {
        if (store.nFrames > 0 && cur.isBlank()) return store.finish(elements, pbc ? { pbc } : {});
        throw formatError(
          `${what} line ${cur.lineNo}: expected "element x y z", found ${JSON.stringify(cur.line.trim().slice(0, 60))}`,
        );
      }
      const sc = layout.speciesCol;
      if (first) {
        const el = xyzElement(text.slice(tok[2 * sc], tok[2 * sc + 1]));
        if (!el)
          throw formatError(
            `${what} line ${cur.lineNo}: ${JSON.stringify(text.slice(tok[2 * sc], tok[2 * sc + 1]))} is not an element`,
          );
        elements[k] = el;
      }
      const pc = fast ? 1 : layout.posCol;
      for (let d = 0; d < 3; d++) {
        const v = numberAt(text, tok[2 * (pc + d)] as number, tok[2 * (pc + d) + 1] as number);
        if (Number.isNaN(v))
          throw formatError(
            `${what} line ${cur.lineNo}: coordinate ${JSON.stringify(text.slice(tok[2 * (pc + d)], tok[2 * (pc + d) + 1]))} is not a number`,
          );
        out[at + 3 * k + d] = v;
      }
    }
    store.commit(hasCell ? cell : null);
  }
  if (!store) throw formatError(`${what}: no frame (expected an atom count on the first line)`);
  return store.finish(elements, pbc ? { pbc } : {});
};

// ---------------------------------------------------------------- PDB

export const readPdbTrajectory = (text: string, limits: TrajectoryLimits): Trajectory => {
  const what = "PDB";
  const cur = new LineCursor(text);
  let store = null as FrameStore | null;
  let cell: number[] | null = null;
  const firstEls: string[] = [];
  const names: string[] = [];
  let firstCoords: number[] = [];
  let k = 0;
  let at = 0;
  let frameStart = 0;
  const finish = (): void => {
    if (k === 0) return;
    if (!store) {
      store = new FrameStore(k, limits, what, text.length);
      store.slot(frameStart);
      store.coords.set(firstCoords);
      firstCoords = [];
    } else if (k !== store.nAtoms) throw inconsistent(what, store.nFrames, k, store.nAtoms);
    store.commit(cell);
    k = 0;
  };
  while (cur.advance()) {
    const t = text;
    const s = cur.start;
    const isAtom = t.startsWith("ATOM", s) || t.startsWith("HETATM", s);
    if (isAtom) {
      if (k === 0) frameStart = s;
      if (cur.end - s < 54) throw formatError(`${what} line ${cur.lineNo}: an atom record shorter than 54 columns`);
      if (
        readNumbers(t, s + 30, s + 38, f3, 0, 1) +
          readNumbers(t, s + 38, s + 46, f3, 1, 1) +
          readNumbers(t, s + 46, s + 54, f3, 2, 1) <
        3
      )
        throw formatError(`${what} line ${cur.lineNo}: coordinates in columns 31-54 are not numbers`);
      if (!store) {
        const line = cur.line;
        const el = pdbElementOf(line);
        if (!el) throw formatError(`${what} line ${cur.lineNo}: no element in columns 77-78 or in the atom name`);
        firstEls.push(el);
        names.push(line.slice(12, 16).trim() || el);
        firstCoords.push(f3[0] as number, f3[1] as number, f3[2] as number);
      } else {
        if (k === 0) at = store.slot(frameStart);
        if (k >= store.nAtoms) throw inconsistent(what, store.nFrames, k + 1, store.nAtoms);
        store.coords[at + 3 * k] = f3[0] as number;
        store.coords[at + 3 * k + 1] = f3[1] as number;
        store.coords[at + 3 * k + 2] = f3[2] as number;
      }
      k++;
    } else if (t.startsWith("CRYST1", s)) {
      const l = readCryst1(cur.line, `${what} line ${cur.lineNo}`);
      cell = l ? l.matrix.flat() : null;
    } else if (t.startsWith("MODEL", s) || t.startsWith("END", s)) finish();
  }
  finish();
  if (!store) throw formatError(`${what}: no ATOM or HETATM records`);
  return (store as FrameStore).finish(firstEls, { names });
};

// ---------------------------------------------------------------- LAMMPS dump

type LammpsConvention = "x" | "xs" | "xu" | "xsu";

export const readLammpsDump = (text: string, limits: TrajectoryLimits, types?: Record<string, string>): Trajectory => {
  const what = "LAMMPS dump";
  const cur = new LineCursor(text);
  let store = null as FrameStore | null;
  let elements: string[] = [];
  let order: Map<number, number> | null = null;
  let n = 0;
  const cell = new Float64Array(9);
  const origin = new Float64Array(3);
  const bounds = new Float64Array(3);
  const expectItem = (name: string): void => {
    while (cur.advance() && cur.isBlank());
    if (!cur.startsWith(`ITEM: ${name}`))
      throw formatError(`${what} line ${cur.lineNo}: expected "ITEM: ${name}", found ${JSON.stringify(cur.line.slice(0, 60))}`);
  };
  const steps: number[] = [];
  while (true) {
    const m = cur.mark();
    while (cur.advance() && cur.isBlank());
    if (cur.done && cur.isBlank()) break;
    if (cur.start >= text.length) break;
    const frameStart = cur.start;
    if (!cur.startsWith("ITEM: TIMESTEP")) {
      cur.restore(m);
      if (store) break;
      throw formatError(`${what} line ${cur.lineNo + 1}: expected "ITEM: TIMESTEP"`);
    }
    if (!cur.advance()) break;
    steps.push(numberAt(text, cur.start, cur.end));
    expectItem("NUMBER OF ATOMS");
    cur.advance();
    const count = parseIntStrict(cur.line.trim());
    if (!(count >= 1)) throw formatError(`${what} line ${cur.lineNo}: the number of atoms must be a positive integer`);
    if (store && count !== n) throw inconsistent(what, store.nFrames, count, n);
    expectItem("BOX BOUNDS");
    const triclinic = /\bxy\s+xz\s+yz\b/.test(cur.line);
    const lo = [0, 0, 0];
    const hi = [0, 0, 0];
    for (let d = 0; d < 3; d++) {
      if (!cur.advance()) throw formatError(`${what}: the file ends inside BOX BOUNDS`);
      const got = readNumbers(text, cur.start, cur.end, bounds, 0, 3);
      if (got < (triclinic ? 3 : 2))
        throw formatError(`${what} line ${cur.lineNo}: a box bound needs ${triclinic ? 3 : 2} numbers`);
      lo[d] = bounds[0] as number;
      hi[d] = bounds[1] as number;
      if (triclinic) cell[[3, 6, 7][d] as number] = bounds[2] as number;
    }
    // LAMMPS writes bounding-box extents for triclinic boxes; undo the tilt to get the box.
    const [xy, xz, yz] = triclinic ? [cell[3] as number, cell[6] as number, cell[7] as number] : [0, 0, 0];
    const xlo = (lo[0] as number) - Math.min(0, xy, xz, xy + xz);
    const xhi = (hi[0] as number) - Math.max(0, xy, xz, xy + xz);
    const ylo = (lo[1] as number) - Math.min(0, yz);
    const yhi = (hi[1] as number) - Math.max(0, yz);
    cell.set([xhi - xlo, 0, 0, xy, yhi - ylo, 0, xz, yz, (hi[2] as number) - (lo[2] as number)]);
    origin.set([xlo, ylo, lo[2] as number]);
    expectItem("ATOMS");
    const cols = cur.line.trim().split(/\s+/).slice(2);
    const idCol = cols.indexOf("id");
    const typeCol = cols.indexOf("type");
    const elCol = cols.indexOf("element");
    let conv: LammpsConvention | null = null;
    for (const c of ["x", "xs", "xu", "xsu"] as const)
      if (cols.includes(c) && cols.includes(c.replace("x", "y")) && cols.includes(c.replace("x", "z"))) {
        conv = c;
        break;
      }
    if (!conv) throw formatError(`${what} line ${cur.lineNo}: no x y z, xs ys zs, xu yu zu or xsu ysu zsu columns`);
    const xc = cols.indexOf(conv);
    const yc = cols.indexOf(conv.replace("x", "y"));
    const zc = cols.indexOf(conv.replace("x", "z"));
    const scaled = conv === "xs" || conv === "xsu";
    const need = Math.min(64, Math.max(xc, yc, zc, idCol, typeCol, elCol) + 1);
    if (!store) {
      n = count;
      store = new FrameStore(n, limits, what, text.length);
    }
    const at = store.slot(frameStart);
    const out = store.coords;
    const firstFrame = store.nFrames === 0;
    const ids = new Float64Array(n);
    const kinds: string[] = firstFrame ? new Array(n) : [];
    const raw = new Float64Array(3 * n);
    for (let k = 0; k < n; k++) {
      if (!cur.advance()) {
        if (store.nFrames > 0) return store.finish(elements);
        throw formatError(`${what}: the first frame announces ${n} atoms but the file ends after ${k}`);
      }
      if (tokenize(text, cur.start, cur.end, tok, need) < need)
        throw formatError(`${what} line ${cur.lineNo}: ${need} columns expected`);
      const num = (c: number): number => numberAt(text, tok[2 * c] as number, tok[2 * c + 1] as number);
      ids[k] = idCol >= 0 ? num(idCol) : k + 1;
      raw[3 * k] = num(xc);
      raw[3 * k + 1] = num(yc);
      raw[3 * k + 2] = num(zc);
      if (Number.isNaN(raw[3 * k] as number) || Number.isNaN(raw[3 * k + 1] as number) || Number.isNaN(raw[3 * k + 2] as number))
        throw formatError(`${what} line ${cur.lineNo}: a coordinate is not a number`);
      if (firstFrame) {
        const c = elCol >= 0 ? elCol : typeCol;
        kinds[k] = c >= 0 ? text.slice(tok[2 * c], tok[2 * c + 1]) : "1";
      }
    }
    if (firstFrame) {
      const sorted = Array.from(ids.keys()).sort((a, b) => (ids[a] as number) - (ids[b] as number));
      order = new Map(sorted.map((k, rank) => [ids[k] as number, rank]));
      if (order.size !== n) throw formatError(`${what}: atom ids repeat in the first frame`);
      elements = new Array(n);
      sorted.forEach((k, rank) => {
        const kind = kinds[k] as string;
        const el =
          elCol >= 0
            ? normalizeElement(kind)
            : types?.[kind] !== undefined
              ? normalizeElement(types[kind] as string)
              : ELEMENTS[parseIntStrict(kind) - 1]?.symbol;
        if (!el)
          throw formatError(
            `${what}: atom type ${JSON.stringify(kind)} has no element (add an element column to the dump, or give lammps_types)`,
            { type: kind },
          );
        elements[rank] = el;
      });
    }
    for (let k = 0; k < n; k++) {
      const rank = (order as Map<number, number>).get(ids[k] as number);
      if (rank === undefined)
        throw new AtomStudioError(
          "INCONSISTENT_FRAMES",
          `${what}: atom id ${ids[k]} of frame ${store.nFrames} is not in frame 0`,
          {
            frame: store.nFrames,
          },
        );
      const o = at + 3 * rank;
      const x = raw[3 * k] as number;
      const y = raw[3 * k + 1] as number;
      const z = raw[3 * k + 2] as number;
      if (scaled) {
        out[o] = x * (cell[0] as number) + y * (cell[3] as number) + z * (cell[6] as number);
        out[o + 1] = x * (cell[1] as number) + y * (cell[4] as number) + z * (cell[7] as number);
        out[o + 2] = x * (cell[2] as number) + y * (cell[5] as number) + z * (cell[8] as number);
      } else {
        out[o] = x - (origin[0] as number);
        out[o + 1] = y - (origin[1] as number);
        out[o + 2] = z - (origin[2] as number);
      }
    }
    store.commit(cell);
  }
  if (!store) throw formatError(`${what}: no frame (expected "ITEM: TIMESTEP")`);
  return (store as FrameStore).finish(elements);
};

// ---------------------------------------------------------------- detection and entry point

const ALIASES: Record<string, TrajectoryFormatId> = {
  xdatcar: "xdatcar",
  extxyz: "extxyz",
  exyz: "extxyz",
  xyz: "xyz",
  pdb: "pdb",
  ent: "pdb",
  lammpstrj: "lammpstrj",
  lammps: "lammpstrj",
  dump: "lammpstrj",
  "lammps-dump": "lammpstrj",
};

export const TRAJECTORY_FORMATS: readonly TrajectoryFormatId[] = ["xdatcar", "extxyz", "xyz", "pdb", "lammpstrj"];

/** Formats worth trying, most likely first (file name, then content). */
export const detectTrajectoryFormat = (text: string, filename?: string): TrajectoryFormatId[] => {
  const out: TrajectoryFormatId[] = [];
  const base = baseName(filename).toUpperCase();
  const ext = extensionOf(filename);
  if (/^XDATCAR/.test(base) || ext === "xdatcar") out.push("xdatcar");
  else if (ext && ALIASES[ext]) out.push(ALIASES[ext] as TrajectoryFormatId);
  const head = text.slice(0, 4096);
  if (/^ITEM: TIMESTEP/m.test(head)) out.push("lammpstrj");
  if (/configuration=/i.test(head)) out.push("xdatcar");
  if (/^(ATOM {2}|HETATM|MODEL |CRYST1)/m.test(head)) out.push("pdb");
  if (/^\s*\d+\s*\r?\n[^\n]*(Lattice|Properties)\s*=/i.test(head)) out.push("extxyz");
  if (/^\s*\d+\s*\r?\n/.test(head)) out.push("xyz");
  return [...new Set(out)];
};

const readAs = (format: TrajectoryFormatId, text: string, limits: TrajectoryLimits, opts: TrajectoryReadOptions): Trajectory => {
  switch (format) {
    case "xdatcar":
      return readXdatcarTrajectory(text, limits);
    case "extxyz":
      return readXyzTrajectory(text, limits, true);
    case "xyz":
      return readXyzTrajectory(text, limits, false);
    case "pdb":
      return readPdbTrajectory(text, limits);
    case "lammpstrj":
      return readLammpsDump(text, limits, opts.lammpsTypes);
    case "structure": {
      const parsed = parseStructureFile(text, opts.filename ? { filename: opts.filename } : {});
      return Trajectory.fromStructures(parsed.frames ?? [parsed.structure]);
    }
  }
};

/**
 * Read a trajectory file (any of the formats above; any single-structure format gives a one-frame
 * trajectory). Unknown or unreadable input is 400 INVALID_FORMAT with what was tried; caps are
 * TOO_MANY_ATOMS / TOO_MANY_FRAMES; frames of different sizes are INCONSISTENT_FRAMES.
 */
export const readTrajectory = (text: string, opts: TrajectoryReadOptions = {}): ParsedTrajectory => {
  const limits = { ...DEFAULT_TRAJECTORY_LIMITS, ...opts.limits };
  if (typeof text !== "string" || text.trim() === "") fail("INVALID_FORMAT", "The trajectory file is empty", { tried: [] });
  let candidates: TrajectoryFormatId[];
  if (opts.format) {
    const id = ALIASES[opts.format.trim().toLowerCase()];
    if (!id)
      fail(
        "INVALID_FORMAT",
        `Unknown trajectory format ${JSON.stringify(opts.format)}; known: ${TRAJECTORY_FORMATS.join(", ")}`,
        {
          format: opts.format,
          known: TRAJECTORY_FORMATS,
        },
      );
    candidates = [id as TrajectoryFormatId];
  } else {
    candidates = detectTrajectoryFormat(text, opts.filename);
    candidates.push("structure");
  }
  const tried: { format: string; reason: string }[] = [];
  for (const f of candidates) {
    try {
      lastSecondFrameAt = -1;
      const trajectory = readAs(f, text, limits, opts);
      return { trajectory, format: f, secondFrameAt: trajectory.nFrames > 1 ? lastSecondFrameAt : -1 };
    } catch (e) {
      // Caps and inconsistent frames are answers, not reasons to try another format.
      if (isAtomStudioError(e) && e.code !== "INVALID_FORMAT") throw e;
      tried.push({ format: f, reason: e instanceof Error ? e.message : String(e) });
    }
  }
  const where = opts.filename ? ` ${JSON.stringify(opts.filename)}` : "";
  throw new AtomStudioError(
    "INVALID_FORMAT",
    `Could not read the file${where} as a trajectory (tried ${tried.map((t) => `${t.format}: ${t.reason}`).join("; ")})`,
    { tried },
  );
};
