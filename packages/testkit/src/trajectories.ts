/**
 * Generated trajectories for tests and benchmarks: random walks in a (triclinic) cell, wrapped
 * back into the cell every frame so atoms jump across faces, written as extended XYZ, XDATCAR
 * or LAMMPS dumps. Deterministic for a seed.
 */
export interface GeneratedTrajectory {
  elements: string[];
  /** F×N×3 Cartesian, wrapped into the cell. */
  coords: Float64Array;
  /** 9 numbers per frame (rows a, b, c). */
  cells: Float64Array;
  nFrames: number;
  nAtoms: number;
}

export const mulberry32 = (seed: number): (() => number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

export interface GenerateOptions {
  nAtoms: number;
  nFrames: number;
  /** Row-major 3×3 cell. */
  cell: number[];
  seed?: number;
  /** Fractional step size per frame (uniform in ±step on each axis). */
  step?: number;
  elements?: string[];
  /** Relative change of the cell per frame (variable-cell runs); 0 keeps it fixed. */
  breathe?: number;
}

export const generateTrajectory = (o: GenerateOptions): GeneratedTrajectory => {
  const rand = mulberry32(o.seed ?? 1);
  const n = o.nAtoms;
  const els = o.elements ?? ["O", "H", "H"];
  const elements = Array.from({ length: n }, (_, i) => els[i % els.length] as string);
  const frac = Float64Array.from({ length: 3 * n }, () => rand());
  const coords = new Float64Array(o.nFrames * 3 * n);
  const cells = new Float64Array(o.nFrames * 9);
  const step = o.step ?? 0.02;
  for (let f = 0; f < o.nFrames; f++) {
    const s = 1 + (o.breathe ?? 0) * Math.sin(f / 3);
    const m = o.cell.map((v) => v * s);
    cells.set(m, 9 * f);
    for (let i = 0; i < n; i++) {
      for (let d = 0; d < 3; d++) {
        let v = (frac[3 * i + d] as number) + (f === 0 ? 0 : (rand() * 2 - 1) * step);
        v -= Math.floor(v);
        frac[3 * i + d] = v;
      }
      const [u, v, w] = [frac[3 * i] as number, frac[3 * i + 1] as number, frac[3 * i + 2] as number];
      for (let d = 0; d < 3; d++)
        coords[f * 3 * n + 3 * i + d] = u * (m[d] as number) + v * (m[3 + d] as number) + w * (m[6 + d] as number);
    }
  }
  return { elements, coords, cells, nFrames: o.nFrames, nAtoms: n };
};

const num = (x: number): string => x.toFixed(8);

export const toExtxyz = (t: GeneratedTrajectory): string => {
  const out: string[] = [];
  for (let f = 0; f < t.nFrames; f++) {
    const c = Array.from(t.cells.subarray(9 * f, 9 * f + 9))
      .map(num)
      .join(" ");
    out.push(String(t.nAtoms), `Lattice="${c}" Properties=species:S:1:pos:R:3 frame=${f} pbc="T T T"`);
    const o = f * 3 * t.nAtoms;
    for (let i = 0; i < t.nAtoms; i++)
      out.push(
        `${t.elements[i]} ${num(t.coords[o + 3 * i] as number)} ${num(t.coords[o + 3 * i + 1] as number)} ${num(t.coords[o + 3 * i + 2] as number)}`,
      );
  }
  return `${out.join("\n")}\n`;
};

/** Fractional coordinates of frame f (cells may differ between frames). */
const fracOf = (t: GeneratedTrajectory, f: number): Float64Array => {
  const m = t.cells.subarray(9 * f, 9 * f + 9);
  const [a0, a1, a2, b0, b1, b2, c0, c1, c2] = Array.from(m) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const det = a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0);
  const out = new Float64Array(3 * t.nAtoms);
  const o = f * 3 * t.nAtoms;
  for (let i = 0; i < t.nAtoms; i++) {
    const x = t.coords[o + 3 * i] as number;
    const y = t.coords[o + 3 * i + 1] as number;
    const z = t.coords[o + 3 * i + 2] as number;
    out[3 * i] = (x * (b1 * c2 - b2 * c1) + y * (b2 * c0 - b0 * c2) + z * (b0 * c1 - b1 * c0)) / det;
    out[3 * i + 1] = (x * (c1 * a2 - c2 * a1) + y * (c2 * a0 - c0 * a2) + z * (c0 * a1 - c1 * a0)) / det;
    out[3 * i + 2] = (x * (a1 * b2 - a2 * b1) + y * (a2 * b0 - a0 * b2) + z * (a0 * b1 - a1 * b0)) / det;
  }
  return out;
};

/** XDATCAR; a header before every frame when the cell changes (variable-cell format). */
export const toXdatcar = (t: GeneratedTrajectory): string => {
  const groups: [string, number][] = [];
  for (const e of t.elements) {
    const last = groups[groups.length - 1];
    if (last && last[0] === e) last[1]++;
    else groups.push([e, 1]);
  }
  const variable = t.cells.some((v, k) => v !== t.cells[k % 9]);
  const out: string[] = [];
  for (let f = 0; f < t.nFrames; f++) {
    if (f === 0 || variable) {
      const m = t.cells.subarray(9 * f, 9 * f + 9);
      out.push(
        "generated",
        "1.0",
        ...[0, 1, 2].map((r) =>
          Array.from(m.subarray(3 * r, 3 * r + 3))
            .map(num)
            .join(" "),
        ),
      );
      out.push(groups.map((g) => g[0]).join(" "), groups.map((g) => g[1]).join(" "));
    }
    out.push(`Direct configuration= ${f + 1}`);
    const fr = fracOf(t, f);
    for (let i = 0; i < t.nAtoms; i++)
      out.push(`${num(fr[3 * i] as number)} ${num(fr[3 * i + 1] as number)} ${num(fr[3 * i + 2] as number)}`);
  }
  return `${out.join("\n")}\n`;
};

export interface LammpsWriteOptions {
  scaled?: boolean;
  /** Write atoms in a shuffled order (readers must sort by id). */
  shuffle?: boolean;
  /** Box origin (xlo, ylo, zlo). */
  origin?: [number, number, number];
  /** Element column instead of numeric types. */
  elementColumn?: boolean;
}

/** A LAMMPS text dump. The cell must be LAMMPS-shaped: a along x, b in the xy plane. */
export const toLammpsDump = (t: GeneratedTrajectory, o: LammpsWriteOptions = {}): string => {
  const out: string[] = [];
  const rand = mulberry32(7);
  const types = [...new Set(t.elements)];
  const [x0, y0, z0] = o.origin ?? [0, 0, 0];
  for (let f = 0; f < t.nFrames; f++) {
    const m = t.cells.subarray(9 * f, 9 * f + 9);
    const lx = m[0] as number;
    const xy = m[3] as number;
    const ly = m[4] as number;
    const xz = m[6] as number;
    const yz = m[7] as number;
    const lz = m[8] as number;
    const triclinic = xy !== 0 || xz !== 0 || yz !== 0;
    out.push("ITEM: TIMESTEP", String(f * 10), "ITEM: NUMBER OF ATOMS", String(t.nAtoms));
    if (triclinic) {
      const xlo = x0 + Math.min(0, xy, xz, xy + xz);
      const xhi = x0 + lx + Math.max(0, xy, xz, xy + xz);
      const ylo = y0 + Math.min(0, yz);
      const yhi = y0 + ly + Math.max(0, yz);
      out.push(
        "ITEM: BOX BOUNDS xy xz yz pp pp pp",
        `${num(xlo)} ${num(xhi)} ${num(xy)}`,
        `${num(ylo)} ${num(yhi)} ${num(xz)}`,
        `${num(z0)} ${num(z0 + lz)} ${num(yz)}`,
      );
    } else
      out.push(
        "ITEM: BOX BOUNDS pp pp pp",
        `${num(x0)} ${num(x0 + lx)}`,
        `${num(y0)} ${num(y0 + ly)}`,
        `${num(z0)} ${num(z0 + lz)}`,
      );
    const cols = o.scaled ? "xs ys zs" : "x y z";
    out.push(`ITEM: ATOMS id ${o.elementColumn ? "element" : "type"} ${cols}`);
    const order = Array.from({ length: t.nAtoms }, (_, i) => i);
    if (o.shuffle)
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [order[i], order[j]] = [order[j] as number, order[i] as number];
      }
    const fr = fracOf(t, f);
    const base = f * 3 * t.nAtoms;
    for (const i of order) {
      const kind = o.elementColumn ? (t.elements[i] as string) : String(types.indexOf(t.elements[i] as string) + 1);
      const p = o.scaled
        ? [fr[3 * i], fr[3 * i + 1], fr[3 * i + 2]]
        : [
            (t.coords[base + 3 * i] as number) + x0,
            (t.coords[base + 3 * i + 1] as number) + y0,
            (t.coords[base + 3 * i + 2] as number) + z0,
          ];
      out.push(`${i + 1} ${kind} ${p.map((v) => num(v as number)).join(" ")}`);
    }
  }
  return `${out.join("\n")}\n`;
};
