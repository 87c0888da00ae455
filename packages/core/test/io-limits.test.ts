/**
 * The readers' caps (`ReadLimits`): a file over a limit is refused with the limit's code before
 * its atoms are allocated, whatever format detection would try next; without limits (the
 * studio reading the user's own file) nothing changes, except that no CIF may list more than
 * 192 distinct symmetry operations.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { AtomStudioError, initSymmetry, parseStructureFile, type ReadLimits } from "../src/index.ts";

beforeAll(async () => {
  await initSymmetry();
});

const cif = (ops: string[], nSites: number): string =>
  [
    "data_x",
    ...["a", "b", "c"].map((k) => `_cell_length_${k} 40`),
    ...["alpha", "beta", "gamma"].map((k) => `_cell_angle_${k} 90`),
    "loop_",
    "_symmetry_equiv_pos_as_xyz",
    ...ops,
    "loop_",
    "_atom_site_label",
    "_atom_site_type_symbol",
    "_atom_site_fract_x",
    "_atom_site_fract_y",
    "_atom_site_fract_z",
    ...Array.from({ length: nSites }, (_, i) => `C${i} C 0 ${(i / (nSites + 1)).toFixed(5)} 0.5`),
  ].join("\n");
const shifts = (n: number): string[] => Array.from({ length: n }, (_, k) => `x+${k}/${n},y,z`);
const xyz = (frames: number, atoms: number): string =>
  Array.from({ length: frames }, () =>
    [String(atoms), "", ...Array.from({ length: atoms }, (_, i) => `H ${i} 0 0`)].join("\n"),
  ).join("\n");
const pdb = (models: number, atoms: number): string =>
  Array.from({ length: models }, (_, m) =>
    [
      `MODEL ${m + 1}`,
      ...Array.from(
        { length: atoms },
        (_, i) =>
          `ATOM  ${String(i + 1).padStart(5)}  H   MOL     1    ${(i * 1.5).toFixed(3).padStart(8)}   0.000   0.000  1.00  0.00           H`,
      ),
      "ENDMDL",
    ].join("\n"),
  ).join("\n");
const json = (n: number, atoms: number): string =>
  JSON.stringify(
    Array.from({ length: n }, () => ({
      "@class": "Molecule",
      sites: Array.from({ length: atoms }, (_, i) => ({ species: [{ element: "H", occu: 1 }], xyz: [i, 0, 0] })),
    })),
  );

const outcome = (content: string, filename: string, limits?: ReadLimits): string | number => {
  try {
    const r = parseStructureFile(content, { filename, ...(limits ? { limits } : {}) });
    return (r.frames ?? [r.structure]).reduce((n, s) => n + s.length, 0);
  } catch (e) {
    if (e instanceof AtomStudioError) return e.code;
    throw e;
  }
};

describe("read limits", () => {
  it.each([
    // name, content, filename, limits, atoms read or the code
    ["CIF: 193 distinct operations", cif(shifts(193), 1), "x.cif", undefined, "TOO_MANY_SYMMETRY_OPERATIONS"],
    ["CIF: 192 distinct operations", cif(shifts(192), 1), "x.cif", undefined, 192],
    ["CIF: x,y,z 500 times", cif(Array(500).fill("x,y,z"), 2), "x.cif", undefined, 2],
    ["CIF: 192 x 10 atoms over maxAtoms 1000", cif(shifts(192), 10), "x.cif", { maxAtoms: 1000 }, "TOO_MANY_ATOMS"],
    ["CIF: 192 x 5 atoms under maxAtoms 1000", cif(shifts(192), 5), "x.cif", { maxAtoms: 1000 }, 960],
    ["CIF: more distinct sites than maxAtoms", cif(["x,y,z"], 30), "x.cif", { maxAtoms: 20 }, "TOO_MANY_ATOMS"],
    ["XYZ: 6 frames over maxFrames 5", xyz(6, 1), "t.xyz", { maxFrames: 5 }, "TOO_MANY_FRAMES"],
    ["XYZ: 5 frames at maxFrames 5", xyz(5, 1), "t.xyz", { maxFrames: 5 }, 5],
    ["XYZ: 4 x 30 atoms over maxTotalAtoms 100", xyz(4, 30), "t.xyz", { maxTotalAtoms: 100 }, "TOO_MANY_ATOMS"],
    ["XYZ: a frame over maxAtoms", xyz(1, 30), "t.xyz", { maxAtoms: 29 }, "TOO_MANY_ATOMS"],
    [
      "extended XYZ: 3 frames over maxFrames 2",
      xyz(3, 1).replaceAll("\n\n", "\nProperties=species:S:1:pos:R:3\n"),
      "t.extxyz",
      { maxFrames: 2 },
      "TOO_MANY_FRAMES",
    ],
    ["PDB: 3 models over maxFrames 2", pdb(3, 2), "t.pdb", { maxFrames: 2 }, "TOO_MANY_FRAMES"],
    ["JSON: 3 structures over maxFrames 2", json(3, 1), "t.json", { maxFrames: 2 }, "TOO_MANY_FRAMES"],
    ["JSON: 40 atoms over maxAtoms 30", json(1, 40), "t.json", { maxAtoms: 30 }, "TOO_MANY_ATOMS"],
    ["no limits: 2,000 frames", xyz(2000, 1), "t.xyz", undefined, 2000],
  ] as const)("%s", (_name, content, filename, limits, expected) => {
    expect(outcome(content, filename, limits)).toBe(expected);
  });
});
