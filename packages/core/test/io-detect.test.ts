/** Format detection from the file name and, without one, from the content. */
import { readTestdata } from "atomstudio-testkit";
import { describe, expect, it } from "vitest";
import { detectStructureFormat, getStructureFormat, parseStructureFile, writeStructureFile } from "../src/index.ts";

const FILES: [string, string, string][] = [
  ["structures/Cod_2100513.cif", "Cod_2100513.cif", "cif"],
  ["structures/POSCAR_LiFePO4", "POSCAR_LiFePO4", "poscar"],
  ["lobster/NaCl/CONTCAR.gz", "CONTCAR", "poscar"],
  ["structures/benzene.xyz", "benzene.xyz", "xyz"],
  ["structures/MOF-5.pdb", "MOF-5.pdb", "pdb"],
  ["md/XDATCAR.MD", "XDATCAR.MD", "xdatcar"],
  ["md/water.extxyz.gz", "water.extxyz", "extxyz"],
  ["md/water.pdb.gz", "water.pdb", "pdb"],
];

describe("format detection", () => {
  it.each(FILES)("%s by name and by content", (path, name, format) => {
    const content = readTestdata(path);
    expect(parseStructureFile(content, { filename: name }).format).toBe(format);
    expect(parseStructureFile(content).format).toBe(format);
    expect(detectStructureFormat(content)[0]?.format).toBe(format);
  });

  it.each([
    ["POSCAR", "poscar"],
    ["CONTCAR.relax", "poscar"],
    ["Si.vasp", "poscar"],
    ["run/XDATCAR", "xdatcar"],
    ["C:\\data\\x.CIF", "cif"],
    ["a.xyz", "xyz"],
    ["a.extxyz", "extxyz"],
    ["a.pdb", "pdb"],
    ["a.json", "json"],
  ])("file name %s", (filename, format) => {
    expect(detectStructureFormat("", filename)[0]).toEqual({ format, confidence: 1 });
  });

  it("an ASE extended XYZ saved as .xyz keeps its cell", () => {
    const content = readTestdata("md/water.extxyz.gz");
    const r = parseStructureFile(content, { filename: "water.xyz" });
    expect(r.format).toBe("extxyz");
    expect(r.structure.lattice?.matrix[0]).toEqual([15, 0, 0]);
  });

  it("pymatgen JSON by content, and format aliases", () => {
    const s = parseStructureFile(readTestdata("structures/POSCAR_LiFePO4")).structure;
    const json = writeStructureFile(s, "json");
    expect(parseStructureFile(json).format).toBe("json");
    expect(["vasp", "CONTCAR", ".cif", "ent", "XYZ"].map((n) => getStructureFormat(n)?.id)).toEqual([
      "poscar",
      "poscar",
      "cif",
      "pdb",
      "xyz",
    ]);
  });
});
