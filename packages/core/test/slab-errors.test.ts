import { beforeAll, describe, expect, it } from "vitest";
import { AtomStudioError, fromDict, initSymmetry, type SlabOptions, slab } from "../src/index.ts";

const cu = fromDict({
  lattice: {
    matrix: [
      [3.615, 0, 0],
      [0, 3.615, 0],
      [0, 0, 3.615],
    ],
  },
  sites: [
    { species: "Cu", abc: [0, 0, 0] },
    { species: "Cu", abc: [0.5, 0.5, 0] },
    { species: "Cu", abc: [0.5, 0, 0.5] },
    { species: "Cu", abc: [0, 0.5, 0.5] },
  ],
});
const water = fromDict({
  "@class": "Molecule",
  sites: [
    { species: "O", xyz: [0, 0, 0] },
    { species: "H", xyz: [0.96, 0, 0] },
    { species: "H", xyz: [-0.24, 0.93, 0] },
  ],
});

const codeOf = (f: () => unknown): { code: string; status: number; message: string } => {
  try {
    f();
  } catch (e) {
    if (e instanceof AtomStudioError) return { code: e.code, status: e.status, message: e.message };
    throw e;
  }
  throw new Error("expected an AtomStudioError");
};

const base: SlabOptions = { miller: [1, 1, 1], thickness: 3 };

beforeAll(async () => {
  await initSymmetry();
});

describe("slab errors (one per interface row)", () => {
  it("INVALID_MILLER when all Miller indices are zero", () => {
    expect(codeOf(() => slab(cu, { ...base, miller: [0, 0, 0] }))).toMatchObject({ code: "INVALID_MILLER", status: 400 });
  });
  it("MISSING_LATTICE for a molecule", () => {
    expect(codeOf(() => slab(water, base))).toMatchObject({ code: "MISSING_LATTICE", status: 400 });
  });
  it("INVALID_THICKNESS when thickness is 0 or less", () => {
    expect(codeOf(() => slab(cu, { ...base, thickness: 0 }))).toMatchObject({ code: "INVALID_THICKNESS", status: 400 });
    expect(codeOf(() => slab(cu, { ...base, thickness: -2.5 }))).toMatchObject({ code: "INVALID_THICKNESS" });
  });
  it("INVALID_VACUUM when vacuum is below 0", () => {
    expect(codeOf(() => slab(cu, { ...base, vacuum: -1 }))).toMatchObject({ code: "INVALID_VACUUM", status: 400 });
  });
  it("TOO_MANY_ATOMS when the slab would exceed 10000 atoms", () => {
    const e = codeOf(() => slab(cu, { ...base, thickness: 5000 }));
    expect(e).toMatchObject({ code: "TOO_MANY_ATOMS", status: 400 });
    expect(e.message).toContain("10000");
  });
  it("INVALID_TERMINATION when the index is out of range, naming the range", () => {
    const ok = slab(cu, base);
    expect(ok.nTerminations).toBe(1);
    const e = codeOf(() => slab(cu, { ...base, termination_index: 1 }));
    expect(e).toMatchObject({ code: "INVALID_TERMINATION", status: 400 });
    expect(e.message).toContain("from 0 to 0");
  });
});

describe("slab basics", () => {
  it("reads an integral thickness as hkl planes and a fractional one as Angstrom, vacuum in Angstrom", () => {
    const layers = slab(cu, { miller: [1, 0, 0], thickness: 4, vacuum: 12, primitive: false });
    // Planes are lattice planes of the given cell (pymatgen's d_hkl): for the cubic fcc cell
    // (100) repeats every a, so 4 planes are 4 cells, 16 atoms on 8 atomic layers a/2 apart.
    expect(layers.structure.length).toBe(16);
    expect(layers.thicknessAngstroms).toBeCloseTo(3.5 * 3.615, 6);
    // 4.5 Angstrom needs two cells of 3.615.
    const angstrom = slab(cu, { miller: [1, 0, 0], thickness: 4.5, vacuum: 12, primitive: false });
    expect(angstrom.structure.length).toBe(8);
    expect(layers.vacuumAngstroms).toBeGreaterThanOrEqual(12);
    expect(layers.surfaceArea).toBeCloseTo(3.615 ** 2, 6);
    expect(layers.formula).toBe("Cu16");
  });
  it("centres the slab in the cell by default", () => {
    const s = slab(cu, { miller: [1, 1, 1], thickness: 6, vacuum: 15 }).structure;
    const f = s.frac;
    let sum = 0;
    for (let i = 0; i < s.length; i++) sum += f[3 * i + 2] as number;
    expect(sum / s.length).toBeCloseTo(0.5, 6);
  });
});
