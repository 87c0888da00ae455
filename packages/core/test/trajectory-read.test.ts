/**
 * Trajectory readers against ASE and MDAnalysis on the shared files and on generated ones
 * (triclinic, variable cell, shuffled LAMMPS ids, scaled coordinates, one frame).
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { generateTrajectory, readTestdata, runPython, testdataPath, toExtxyz, toLammpsDump, toXdatcar } from "atomstudio-testkit";
import { describe, expect, it } from "vitest";
import { bytesToText, readTrajectory, Trajectory } from "../src/index.ts";

const ORACLE = join(import.meta.dirname, "oracle/md_oracle.py");
const dir = mkdtempSync(join(tmpdir(), "atomstudio-traj-"));

const triclinicCell = [9.1, 0, 0, 2.3, 8.4, 0, -1.7, 1.9, 10.2];
const tric = generateTrajectory({ nAtoms: 30, nFrames: 6, cell: triclinicCell, seed: 3, step: 0.3, elements: ["O", "H", "H"] });
const breathing = generateTrajectory({
  nAtoms: 12,
  nFrames: 5,
  cell: triclinicCell,
  seed: 5,
  breathe: 0.05,
  elements: ["Li", "S"],
});
const oneFrame = generateTrajectory({ nAtoms: 9, nFrames: 1, cell: [6, 0, 0, 0, 6, 0, 0, 0, 6], seed: 9 });
const ortho = generateTrajectory({ nAtoms: 24, nFrames: 4, cell: [8, 0, 0, 0, 9, 0, 0, 0, 10], seed: 11, step: 0.4 });

const write = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

interface Row {
  name: string;
  path: string;
  format: string;
  oracle: "read_ase" | "read_mda";
  kwargs?: Record<string, unknown>;
  /** Compare fractional coordinates (readers that place the box origin differently). */
  byFraction?: boolean;
  cellFirstOnly?: boolean;
}

const rows: Row[] = [
  { name: "XDATCAR.MD (5 frames, Fe2O3)", path: testdataPath("md/XDATCAR.MD"), format: "vasp-xdatcar", oracle: "read_ase" },
  {
    name: "example_XDATCAR.gz (140 frames, argyrodite)",
    path: testdataPath("md/example_XDATCAR.gz"),
    format: "vasp-xdatcar",
    oracle: "read_ase",
  },
  { name: "water.extxyz.gz (100 frames)", path: testdataPath("md/water.extxyz.gz"), format: "extxyz", oracle: "read_ase" },
  // ASE forgets the cell after each END (checked for frame 0 only); MDAnalysis cannot split END-separated models.
  {
    name: "water.pdb.gz (100 models, CRYST1 once)",
    path: write("water.pdb", readTestdata("md/water.pdb.gz")),
    format: "proteindatabank",
    oracle: "read_ase",
    cellFirstOnly: true,
  },
  { name: "generated triclinic extxyz", path: write("tric.extxyz", toExtxyz(tric)), format: "extxyz", oracle: "read_ase" },
  {
    name: "generated variable-cell XDATCAR",
    path: write("XDATCAR_var", toXdatcar(breathing)),
    format: "vasp-xdatcar",
    oracle: "read_ase",
  },
  {
    name: "generated one-frame XDATCAR",
    path: write("XDATCAR_one", toXdatcar(oneFrame)),
    format: "vasp-xdatcar",
    oracle: "read_ase",
  },
  {
    name: "LAMMPS triclinic, scaled, shuffled ids",
    path: write("tric_scaled.lammpstrj", toLammpsDump(tric, { scaled: true, shuffle: true, elementColumn: true })),
    format: "lammps-dump-text",
    oracle: "read_ase",
    byFraction: true,
  },
  {
    name: "LAMMPS triclinic, unscaled, shifted origin",
    path: write("tric.lammpstrj", toLammpsDump(tric, { shuffle: true, origin: [-3, 2, 1], elementColumn: true })),
    format: "lammps-dump-text",
    oracle: "read_ase",
    byFraction: true,
  },
  {
    name: "LAMMPS orthogonal, numeric types, unscaled",
    path: write("ortho.lammpstrj", toLammpsDump(ortho, { shuffle: true })),
    format: "LAMMPSDUMP",
    oracle: "read_mda",
    byFraction: true,
  },
];

const textOf = (path: string): string => bytesToText(new Uint8Array(readFileSync(path)), { maxBytes: 1 << 30 });

const fracOf = (t: Trajectory, f: number): number[][] => {
  const lat = t.lattice(f);
  if (!lat) throw new Error("no cell");
  const c = t.frameCoords(f);
  return Array.from({ length: t.nAtoms }, (_, i) =>
    lat.toFractional([c[3 * i] as number, c[3 * i + 1] as number, c[3 * i + 2] as number]),
  );
};

/** Largest difference of fractional coordinates modulo whole cells. */
const fracGap = (a: number[][], b: number[][]): number => {
  let worst = 0;
  a.forEach((r, i) => {
    r.forEach((v, d) => {
      const x = v - ((b[i] as number[])[d] as number);
      worst = Math.max(worst, Math.abs(x - Math.round(x)));
    });
  });
  return worst;
};

describe("trajectory readers equal ASE / MDAnalysis", async () => {
  const results = await runPython<Record<string, unknown>[]>(
    ORACLE,
    rows.map((r) => ({ kind: r.oracle, path: r.path, format: r.format, kwargs: r.kwargs ?? {} })),
  );
  it.each(rows.map((r, k) => [r.name, r, k] as const))("%s", (_name, row, k) => {
    const ref = results[k] as {
      n_frames: number;
      coords: number[][][];
      cells?: number[][][];
      dims?: (number[] | null)[];
      frac?: number[][][];
    };
    const { trajectory: t } = readTrajectory(textOf(row.path), { filename: row.path.split("/").pop() as string });
    expect(t.nFrames).toBe(ref.n_frames);
    for (let f = 0; f < t.nFrames; f++) {
      if (row.byFraction && ref.cells && ref.frac) {
        expect(fracGap(fracOf(t, f), ref.frac[f] as number[][])).toBeLessThan(1e-7);
        const cell = Array.from(t.cell(f) as Float64Array);
        expect(cell.map((v, q) => Math.abs(v - ((ref.cells as number[][][])[f] as number[][]).flat()[q]!))).toSatisfy(
          (d: number[]) => Math.max(...d) < 1e-6,
        );
        continue;
      }
      const c = t.frameCoords(f);
      const want = (ref.coords[f] as number[][]).flat();
      const tol = row.oracle === "read_mda" ? 1e-3 : 1e-8; // MDAnalysis holds float32
      let worst = 0;
      if (row.byFraction) {
        // MDAnalysis keeps the LAMMPS box origin in the coordinates; compare modulo the cell.
        const lat = t.lattice(f);
        const mine = fracOf(t, f);
        const theirs = (ref.coords[f] as number[][]).map((p) => lat?.toFractional(p) as number[]);
        worst = fracGap(mine, theirs) * 10;
      } else for (let q = 0; q < want.length; q++) worst = Math.max(worst, Math.abs((c[q] as number) - (want[q] as number)));
      expect(worst).toBeLessThan(tol);
      if (ref.cells && (!row.cellFirstOnly || f === 0))
        expect(
          Math.max(
            ...Array.from(t.cell(f) as Float64Array).map((v, q) =>
              Math.abs(v - ((ref.cells as number[][][])[f] as number[][]).flat()[q]!),
            ),
          ),
        ).toBeLessThan(1e-8);
      if (ref.dims && f === 0 && ref.dims[0]) {
        const lat = t.lattice(0);
        expect(lat?.lengths[0]).toBeCloseTo((ref.dims[0] as number[])[0] as number, 3);
      }
    }
  });
});

describe("trajectory files: cells, decoding, caps and errors", () => {
  it("a CRYST1 on the first PDB model holds for every model", () => {
    const { trajectory: t, format } = readTrajectory(readTestdata("md/water.pdb.gz"), { filename: "water.pdb" });
    expect(format).toBe("pdb");
    expect(t.constantCell).toBe(true);
    expect(Array.from(t.cell(99) as Float64Array)).toEqual([15, 0, 0, 0, 15, 0, 0, 0, 15]);
    expect(t.names?.slice(0, 3)).toEqual(["O", "H", "H"]);
  });

  it("gzip is recognised by its magic bytes, not the name", () => {
    const text = toExtxyz(oneFrame);
    const decoded = bytesToText(new Uint8Array(gzipSync(text)), { maxBytes: 1e6 });
    expect(decoded).toBe(text);
    expect(() => bytesToText(new Uint8Array(gzipSync("x".repeat(5000))), { maxBytes: 1000 })).toThrow(/larger than 1000/);
  });

  it.each([
    ["frames cap", { maxFrames: 5 }, "TOO_MANY_FRAMES"],
    ["atom-frames cap", { maxAtomFrames: 30 * 5 }, "TOO_MANY_FRAMES"],
    ["atoms cap", { maxAtoms: 10 }, "TOO_MANY_ATOMS"],
  ] as const)("%s answers a coded error before reading on", (_n, limits, code) => {
    expect(() => readTrajectory(toExtxyz(tric), { filename: "t.extxyz", limits })).toThrow(expect.objectContaining({ code }));
  });

  it.each([
    ["XYZ frames of different sizes", "2\n\nH 0 0 0\nH 0 0 1\n3\n\nH 0 0 0\nH 0 0 1\nH 0 0 2\n", "a.xyz", "INCONSISTENT_FRAMES"],
    [
      "PDB models of different sizes",
      "MODEL 1\nATOM      1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00           O\nENDMDL\nMODEL 2\nATOM      1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00           O\nATOM      2  O   HOH A   1       1.000   0.000   0.000  1.00  0.00           O\nENDMDL\n",
      "a.pdb",
      "INCONSISTENT_FRAMES",
    ],
    ["text that is no trajectory", "hello world\n", "a.txt", "INVALID_FORMAT"],
    ["an empty file", "  \n", "a.xyz", "INVALID_FORMAT"],
  ])("%s: %s", (_n, text, filename, code) => {
    expect(() => readTrajectory(text, { filename })).toThrow(expect.objectContaining({ code }));
  });

  it("the loaded trajectory costs its coordinates, not more", () => {
    const { trajectory: t } = readTrajectory(readTestdata("md/example_XDATCAR.gz"), { filename: "XDATCAR" });
    const raw = t.nFrames * t.nAtoms * 3 * 8;
    expect(t.byteLength / raw).toBeLessThan(1.5);
  });

  it("frames of a structure list become one trajectory", () => {
    const { trajectory: t } = readTrajectory(readTestdata("md/XDATCAR.MD"), { filename: "XDATCAR" });
    const back = Trajectory.fromStructures([t.frame(0), t.frame(3)]);
    expect(back.nFrames).toBe(2);
    expect(Array.from(back.frameCoords(1))).toEqual(Array.from(t.frameCoords(3)));
  });
});
