/**
 * A trajectory: the species once, every frame's Cartesian coordinates in one `Float64Array`
 * (F×N×3, Å), a cell per frame or one for all, and optional times (ps). A loaded trajectory
 * costs its coordinates plus a few percent, where F structure dictionaries cost about 100 bytes
 * per byte of input. Frames become `Structure`s only on demand.
 */
import { fail } from "../errors.ts";
import { Lattice, type Mat3 } from "../lattice.ts";
import { speciesOf } from "../pymatgen.ts";
import { type SiteSpecies, Structure, speciesString } from "../structure.ts";

export type Pbc = [boolean, boolean, boolean];

export interface TrajectoryInit {
  /** Element symbol of each atom. */
  elements: readonly string[];
  /** Cartesian coordinates, frame after frame: F×N×3 numbers, Å. */
  coords: Float64Array;
  /** Row-major cell matrices (rows a, b, c): 9 per frame, 9 for a constant cell, or null (molecules). */
  cells: Float64Array | null;
  pbc?: Pbc;
  /** Time of each frame, ps (F numbers), when the file gives it. */
  times?: Float64Array | null;
  /** Per-atom names (PDB atom names); defaults to the elements. */
  names?: readonly string[];
}

export class Trajectory {
  readonly elements: readonly string[];
  readonly coords: Float64Array;
  readonly cells: Float64Array | null;
  readonly pbc: Pbc;
  readonly times: Float64Array | null;
  readonly names: readonly string[] | null;
  readonly nAtoms: number;
  readonly nFrames: number;
  #species: SiteSpecies[] | undefined;
  #labels: string[] | undefined;
  #lattices = new Map<number, Lattice>();

  constructor(init: TrajectoryInit) {
    const n = init.elements.length;
    if (n === 0) fail("EMPTY_ATOMS", "A trajectory needs at least one atom");
    if (init.coords.length % (3 * n) !== 0)
      fail("INVALID_FORMAT", `${init.coords.length} coordinates do not divide into frames of ${n} atoms`);
    this.elements = init.elements;
    this.coords = init.coords;
    this.nAtoms = n;
    this.nFrames = init.coords.length / (3 * n);
    if (init.cells && init.cells.length !== 9 && init.cells.length !== 9 * this.nFrames)
      fail("INVALID_FORMAT", `${init.cells.length / 9} cells for ${this.nFrames} frames`);
    this.cells = init.cells;
    this.pbc = init.pbc ?? (init.cells ? [true, true, true] : [false, false, false]);
    if (init.times && init.times.length !== this.nFrames) fail("INVALID_FORMAT", "one time per frame is needed");
    this.times = init.times ?? null;
    this.names = init.names ?? null;
  }

  get hasCell(): boolean {
    return this.cells !== null;
  }

  /** True when every frame shares one cell. */
  get constantCell(): boolean {
    return this.cells !== null && this.cells.length === 9;
  }

  /** The 9 numbers of frame f's cell (a view), or null. */
  cell(f: number): Float64Array | null {
    if (!this.cells) return null;
    return this.cells.length === 9 ? this.cells : this.cells.subarray(9 * f, 9 * f + 9);
  }

  /** Frame f's coordinates (a view, N×3). */
  frameCoords(f: number): Float64Array {
    const n3 = 3 * this.nAtoms;
    return this.coords.subarray(f * n3, (f + 1) * n3);
  }

  lattice(f: number): Lattice | null {
    const c = this.cell(f);
    if (!c) return null;
    const key = this.cells?.length === 9 ? 0 : f;
    let l = this.#lattices.get(key);
    if (!l) {
      l = new Lattice([[c[0], c[1], c[2]] as [number, number, number], [c[3], c[4], c[5]], [c[6], c[7], c[8]]] as Mat3, this.pbc);
      if (this.#lattices.size > 64) this.#lattices.clear();
      this.#lattices.set(key, l);
    }
    return l;
  }

  /** Frame f as a Structure (species and labels shared between frames). */
  frame(f: number): Structure {
    if (!Number.isInteger(f) || f < 0 || f >= this.nFrames)
      fail("INVALID_INDEX", `Frame ${f} is out of range (0–${this.nFrames - 1})`);
    if (!this.#species) {
      this.#species = this.elements.map((e) => speciesOf(e));
      this.#labels = this.names ? [...this.names] : this.#species.map(speciesString);
    }
    return new Structure({
      lattice: this.lattice(f),
      species: this.#species,
      cart: this.frameCoords(f).slice(),
      labels: this.#labels as string[],
    });
  }

  /** Bytes held by the numeric arrays (what the memory budget is about). */
  get byteLength(): number {
    return this.coords.byteLength + (this.cells?.byteLength ?? 0) + (this.times?.byteLength ?? 0);
  }

  /** The frames start, start+step, … below stop (Python slice semantics, stop exclusive). */
  select(range: FrameRange = {}): Trajectory {
    const idx = frameIndices(this.nFrames, range);
    if (idx.length === this.nFrames) return this;
    const n3 = 3 * this.nAtoms;
    const coords = new Float64Array(idx.length * n3);
    const cells = this.cells && this.cells.length > 9 ? new Float64Array(idx.length * 9) : this.cells;
    const times = this.times ? new Float64Array(idx.length) : null;
    idx.forEach((f, k) => {
      coords.set(this.coords.subarray(f * n3, (f + 1) * n3), k * n3);
      if (cells && cells !== this.cells) cells.set((this.cells as Float64Array).subarray(9 * f, 9 * f + 9), 9 * k);
      if (times) times[k] = (this.times as Float64Array)[f] as number;
    });
    return new Trajectory({
      elements: this.elements,
      coords,
      cells,
      pbc: this.pbc,
      times,
      ...(this.names ? { names: this.names } : {}),
    });
  }

  /** Build from structures of equal atom count (the optimizer's history, a frames list). */
  static fromStructures(frames: readonly Structure[]): Trajectory {
    const first = frames[0];
    if (!first) fail("EMPTY_STRUCTURES", "A trajectory needs at least one frame");
    const s0 = first as Structure;
    const n = s0.length;
    const elements = s0.species.map((sp) => sp[0]?.element ?? "X");
    const coords = new Float64Array(frames.length * 3 * n);
    const withCell = frames.some((s) => s.lattice);
    const cells = withCell ? new Float64Array(frames.length * 9) : null;
    frames.forEach((s, f) => {
      if (s.length !== n)
        fail("INCONSISTENT_FRAMES", `Frame ${f} has ${s.length} atoms, frame 0 has ${n}`, {
          frame: f,
          n_atoms: s.length,
          expected: n,
        });
      for (let i = 0; i < n; i++)
        if (s.species[i]?.[0]?.element !== elements[i])
          fail("INCONSISTENT_FRAMES", `Frame ${f} has ${s.species[i]?.[0]?.element} at site ${i}, frame 0 has ${elements[i]}`, {
            frame: f,
            site: i,
          });
      coords.set(s.cart, f * 3 * n);
      if (cells) {
        if (!s.lattice) fail("MISSING_LATTICE", `Frame ${f} has no lattice while others do`, { frame: f });
        cells.set((s.lattice as Lattice).matrix.flat(), 9 * f);
      }
    });
    return new Trajectory({
      elements,
      coords,
      cells: cells ? compactCells(cells) : null,
      ...(s0.lattice ? { pbc: s0.lattice.pbc } : {}),
    });
  }
}

export interface FrameRange {
  start?: number | undefined;
  stop?: number | undefined;
  step?: number | undefined;
}

/** Frame indices of a range over F frames: negative start/stop count from the end, as in Python. */
export const frameIndices = (nFrames: number, range: FrameRange = {}): number[] => {
  const step = range.step ?? 1;
  if (!Number.isInteger(step) || step < 1) fail("INVALID_FRAME_RANGE", `step must be a positive integer, not ${step}`);
  const norm = (v: number | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    if (!Number.isInteger(v)) fail("INVALID_FRAME_RANGE", `frame bounds must be integers, not ${v}`);
    return Math.min(nFrames, Math.max(0, v < 0 ? nFrames + v : v));
  };
  const start = norm(range.start, 0);
  const stop = norm(range.stop, nFrames);
  const out: number[] = [];
  for (let f = start; f < stop; f += step) out.push(f);
  if (out.length === 0)
    fail("INVALID_FRAME_RANGE", `The frame range selects no frames (the trajectory has ${nFrames})`, {
      n_frames: nFrames,
      start,
      stop,
      step,
    });
  return out;
};

/** One 9-number cell when every frame's cell is the same. */
export const compactCells = (cells: Float64Array): Float64Array => {
  for (let k = 9; k < cells.length; k++) if (cells[k] !== cells[k % 9]) return cells;
  return cells.slice(0, 9);
};
