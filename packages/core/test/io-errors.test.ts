/**
 * Bad input is always a 400 INVALID_FORMAT that names the formats tried and why each failed;
 * nothing else escapes, whatever the bytes (fast-check over random strings and mutated files).
 */
import { readTestdata } from "atomstudio-testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AtomStudioError,
  isAtomStudioError,
  Lattice,
  parseStructureFile,
  Structure,
  speciesOf,
  writeStructureFile,
} from "../src/index.ts";

interface Tried {
  format: string;
  reason: string;
  unexpected?: true;
}

/** The INVALID_FORMAT error `fn` throws (fails the test on success or on any other error). */
const invalid = (fn: () => unknown): AtomStudioError => {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  if (!isAtomStudioError(caught))
    throw new Error(`expected INVALID_FORMAT, got ${caught === undefined ? "success" : String(caught)}`);
  expect(caught.code).toBe("INVALID_FORMAT");
  expect(caught.status).toBe(400);
  return caught;
};

const tried = (e: AtomStudioError): Tried[] => (e.details?.tried ?? []) as Tried[];

const LIFEPO4 = readTestdata("structures/POSCAR_LiFePO4");
const COD = readTestdata("structures/Cod_2100513.cif");
const BENZENE = readTestdata("structures/benzene.xyz");
const MOF5 = readTestdata("structures/MOF-5.pdb");
const XDATCAR = readTestdata("md/XDATCAR.MD");
const EXTXYZ = readTestdata("md/water.extxyz.gz").split("\n").slice(0, 600).join("\n");

describe("bad input is INVALID_FORMAT with what was tried", () => {
  it.each([
    ["garbage", "hello world\nthis is not a structure\n"],
    ["binary", "\u0000\u0001\u0002\u00ff\ufffd"],
    ["broken JSON", '{"sites": [1, 2'],
    ["JSON that is not a structure", '{"hello": "world"}'],
    ["numbers only", "1 2 3\n4 5 6\n"],
  ])("%s", (_name, content) => {
    const e = invalid(() => parseStructureFile(content));
    const t = tried(e);
    expect(t.length).toBeGreaterThan(0);
    expect(t.every((x) => !x.unexpected && x.reason.length > 0)).toBe(true);
    for (const x of t) expect(e.message).toContain(`${x.format}:`);
  });

  it("empty input", () => {
    for (const content of ["", "   \n\n\t"]) {
      const e = invalid(() => parseStructureFile(content, { filename: "POSCAR" }));
      expect(e.message).toMatch(/empty/);
      expect(tried(e).length).toBeGreaterThan(0);
    }
  });

  it("truncated POSCAR", () => {
    const cut = LIFEPO4.split("\n").slice(0, 20).join("\n");
    const e = invalid(() => parseStructureFile(cut, { filename: "POSCAR" }));
    expect(tried(e).find((t) => t.format === "poscar")?.reason).toMatch(/truncated.*28 atoms/);
    // Cut inside the header too.
    invalid(() => parseStructureFile(LIFEPO4.split("\n").slice(0, 4).join("\n"), { filename: "CONTCAR" }));
  });

  it("CIF without a cell", () => {
    const noCell = COD.replace(/^_cell_length_a.*$/m, "");
    const e = invalid(() => parseStructureFile(noCell, { filename: "x.cif" }));
    expect(e.message).toMatch(/no unit cell.*_cell_length.*a/);
  });

  it("CIF naming a space group without operations, tables not loaded", () => {
    const noOps = COD.replace(/loop_\n_symmetry_equiv_pos_site_id\n_symmetry_equiv_pos_as_xyz\n(.*\n){4}/, "");
    expect(noOps).not.toContain("_symmetry_equiv_pos_as_xyz");
    const e = invalid(() => parseStructureFile(noOps, { format: "cif" }));
    // This file never loads the space-group tables (the conformance tests read it with them).
    expect(e.message).toMatch(/P 1 21\/n 1.*initSymmetry/);
  });

  it("wrong counts", () => {
    // More atoms announced than coordinate lines.
    invalid(() => parseStructureFile(LIFEPO4.replace("4 4 16 4", "4 4 16 9"), { filename: "POSCAR" }));
    // Species and counts disagree.
    const e = invalid(() => parseStructureFile(LIFEPO4.replace("4 4 16 4", "4 4 16"), { filename: "POSCAR" }));
    expect(e.message).toMatch(/4 species .* 3 atom counts/);
    // XYZ: count says 13, 12 atoms follow.
    invalid(() => parseStructureFile(BENZENE.replace(/^12/, "13"), { filename: "benzene.xyz" }));
    // XYZ: count says 11, so the 12th atom line is read as the next frame's count.
    invalid(() => parseStructureFile(BENZENE.replace(/^12/, "11"), { filename: "benzene.xyz" }));
    // Extended XYZ: Properties promises more columns than the lines have.
    invalid(() => parseStructureFile(EXTXYZ.replace("pos:R:3", "pos:R:3:forces:R:3"), { filename: "w.extxyz" }));
    // CIF loop with a missing value.
    invalid(() =>
      parseStructureFile(COD.replace("CA Ca 0.5059(4) 0.5309(2) 0.2485(8) 0.0116(3) Uiso 1.0", "CA Ca 0.5059(4)"), {
        format: "cif",
      }),
    );
  });

  it("unknown format names and formats that do not fit", () => {
    expect(invalid(() => parseStructureFile(LIFEPO4, { format: "docx" })).message).toMatch(
      /Unknown structure format.*cif, poscar/,
    );
    const e = invalid(() => parseStructureFile(LIFEPO4, { format: "cif" }));
    expect(tried(e).map((t) => t.format)).toEqual(["cif"]);
    expect(invalid(() => writeStructureFile(parseStructureFile(LIFEPO4).structure, "docx")).code).toBe("INVALID_FORMAT");
  });

  it("a wrong file name falls back to the content", () => {
    const r = parseStructureFile(LIFEPO4, { filename: "structure.cif" });
    expect(r.format).toBe("poscar");
  });

  it("writers refuse what a format cannot hold", () => {
    const disordered = parseStructureFile(COD).structure;
    for (const f of ["poscar", "xyz", "extxyz", "pdb", "xdatcar"])
      expect(() => writeStructureFile(disordered, f)).toThrow(/partially occupied/);
    const molecule = new Structure({ lattice: null, species: [speciesOf("H")], cart: Float64Array.from([0, 0, 0]) });
    for (const f of ["poscar", "cif", "xdatcar"]) {
      let code = "";
      try {
        writeStructureFile(molecule, f);
      } catch (e) {
        code = isAtomStudioError(e) ? e.code : "other";
      }
      expect(code, f).toBe("MISSING_LATTICE");
    }
    const cubic = new Lattice([
      [3, 0, 0],
      [0, 3, 0],
      [0, 0, 3],
    ]);
    expect(
      writeStructureFile(
        new Structure({ lattice: cubic, species: [speciesOf("Cu")], cart: Float64Array.from([0, 0, 0]) }),
        "POSCAR",
      ),
    ).toContain("Cu");
  });
});

/** Parse, and require success with finite coordinates or an INVALID_FORMAT from our readers. */
const parsesCleanly = (content: string, filename?: string): void => {
  try {
    const r = parseStructureFile(content, filename ? { filename } : {});
    for (const s of r.frames ?? [r.structure]) {
      expect(s.length).toBeGreaterThan(0);
      expect(s.cart.every(Number.isFinite)).toBe(true);
    }
  } catch (e) {
    if (!isAtomStudioError(e)) throw e;
    expect(e.code).toBe("INVALID_FORMAT");
    const bugs = tried(e).filter((t) => t.unexpected);
    expect(bugs, JSON.stringify(bugs)).toEqual([]);
  }
};

const SAMPLES: [string, string][] = [
  [LIFEPO4, "POSCAR"],
  [COD, "x.cif"],
  [BENZENE, "benzene.xyz"],
  [MOF5, "MOF-5.pdb"],
  [XDATCAR.split("\n").slice(0, 200).join("\n"), "XDATCAR"],
  [EXTXYZ, "w.extxyz"],
];

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("dropLine" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("dupLine" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("replace" as const), at: fc.nat(), text: fc.string({ maxLength: 8 }) }),
  fc.record({
    kind: fc.constant("insert" as const),
    at: fc.nat(),
    text: fc.constantFrom(
      "-1",
      "1e999",
      "NaN",
      "loop_",
      "_cell_length_a",
      "'",
      ";",
      "\n",
      "999999999",
      "0",
      "Direct",
      "END",
      "MODEL",
    ),
  }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

const mutate = (content: string, m: Mutation): string => {
  const lines = content.split("\n");
  switch (m.kind) {
    case "truncate":
      return content.slice(0, m.at % (content.length + 1));
    case "dropLine":
      lines.splice(m.at % lines.length, 1);
      return lines.join("\n");
    case "dupLine": {
      const k = m.at % lines.length;
      lines.splice(k, 0, lines[k]!);
      return lines.join("\n");
    }
    case "replace": {
      const k = m.at % (content.length + 1);
      return content.slice(0, k) + m.text + content.slice(k + m.text.length);
    }
    case "insert": {
      const k = m.at % (content.length + 1);
      return content.slice(0, k) + m.text + content.slice(k);
    }
  }
};

describe("no input makes anything but INVALID_FORMAT escape (fast-check)", () => {
  it("random strings", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 300 }),
        fc.constantFrom(undefined, "POSCAR", "a.cif", "a.xyz", "a.pdb", "a.json", "XDATCAR", "a.extxyz"),
        (s, name) => parsesCleanly(s, name),
      ),
      { numRuns: 400 },
    );
  });

  it("random lines of plausible tokens", () => {
    const tok = fc.constantFrom(
      "1",
      "0",
      "-3",
      "2.5",
      "1e3",
      "Fe",
      "O",
      "x",
      "T",
      "F",
      "Direct",
      "loop_",
      "_atom_site_label",
      "data_x",
      "ATOM  ",
      "CRYST1",
      '"',
      "'",
      ";",
      'Lattice="1 0 0 0 1 0 0 0 1"',
      "Properties=species:S:1:pos:R:3",
    );
    const line = fc.array(tok, { maxLength: 6 }).map((t) => t.join(" "));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), (lines) => parsesCleanly(lines.join("\n"))),
      { numRuns: 400 },
    );
  });

  it("mutated real files", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SAMPLES),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        ([content, name], ms, named) =>
          parsesCleanly(
            ms.reduce((c, m) => mutate(c, m), content),
            named ? name : undefined,
          ),
      ),
      { numRuns: 600 },
    );
  });
});
