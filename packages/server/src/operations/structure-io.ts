/** Reading and writing structure files: `/api/structure/parse` and `/api/structure/export`. */
import {
  fromDict,
  initSymmetry,
  parseStructureFile,
  STRUCTURE_FORMATS,
  structureFormula,
  toDict,
  writeStructureFile,
  writeStructureFrames,
} from "atomstudio-core";
import { z } from "zod";
import { defineOperation } from "../registry/operation.ts";
import { StructureJSON } from "../registry/schemas.ts";

const FORMAT_IDS = STRUCTURE_FORMATS.map((f) => f.id);
const EXTENSION: Record<string, string> = {
  cif: "cif",
  poscar: "vasp",
  xdatcar: "XDATCAR",
  xyz: "xyz",
  extxyz: "extxyz",
  pdb: "pdb",
  json: "json",
};

/** A file the parser reads, so documentation and generated test cases (schemathesis) have a real one. */
const EXAMPLE_POSCAR = "Cu fcc\n3.61\n1 0 0\n0 1 0\n0 0 1\nCu\n4\nDirect\n0 0 0\n0.5 0.5 0\n0.5 0 0.5\n0 0.5 0.5\n";

export const parseOp = defineOperation({
  id: "parse_structure",
  method: "POST",
  path: "/api/structure/parse",
  tag: "structure",
  summary: "Parse a structure file (CIF, POSCAR/CONTCAR, XDATCAR, XYZ, extended XYZ, PDB, pymatgen JSON)",
  description:
    "JSON {content, filename?, format?} or a multipart upload (file field plus optional format). The format is detected from the file name and content unless given. Multi-frame files (XDATCAR, XYZ, extended XYZ, multi-model PDB) also return every frame.",
  input: z.object({
    content: z
      .string()
      .meta({ examples: [EXAMPLE_POSCAR] })
      .describe("the file's text"),
    filename: z.string().optional().describe("used for format detection, e.g. POSCAR or Fe2O3.cif"),
    format: z
      .string()
      .optional()
      .describe(`one of ${FORMAT_IDS.join(", ")} (or an alias such as vasp)`),
  }),
  output: z.object({
    structure: StructureJSON,
    format: z.string(),
    n_atoms: z.number().int(),
    formula: z.string(),
    frames: z.array(StructureJSON).optional(),
  }),
  errors: [
    { status: 400, code: "INVALID_FORMAT", when: "unknown or unreadable input; the message says which formats were tried" },
  ],
  handler: async ({ content, filename, format }) => {
    // CIFs that only name their space group need moyo's tables (loaded once).
    await initSymmetry();
    const parsed = parseStructureFile(content, { ...(filename ? { filename } : {}), ...(format ? { format } : {}) });
    return {
      structure: toDict(parsed.structure),
      format: parsed.format,
      n_atoms: parsed.structure.length,
      formula: structureFormula(parsed.structure),
      ...(parsed.frames ? { frames: parsed.frames.map(toDict) } : {}),
    };
  },
});

export const exportOp = defineOperation({
  id: "export_structure",
  method: "POST",
  path: "/api/structure/export",
  tag: "structure",
  summary: "Write a structure (or several frames) as CIF, POSCAR, XYZ, extended XYZ, PDB or pymatgen JSON",
  input: z.object({
    structure: StructureJSON,
    format: z
      .string()
      .meta({ enum: FORMAT_IDS })
      .describe(`one of ${FORMAT_IDS.join(", ")} (or an alias such as vasp)`),
    frames: z.array(StructureJSON).optional().describe("write these frames instead (formats that hold several)"),
  }),
  output: z.object({ content: z.string(), format: z.string(), filename: z.string(), n_atoms: z.number().int() }),
  errors: [
    { status: 400, code: "INVALID_FORMAT", when: "unknown format, or one that cannot hold this structure" },
    { status: 400, code: "INVALID_STRUCTURE", when: "structure JSON cannot be parsed" },
  ],
  handler: ({ structure, format, frames }) => {
    const s = fromDict(structure);
    const content = frames?.length ? writeStructureFrames(frames.map(fromDict), format) : writeStructureFile(s, format);
    const id = format.toLowerCase();
    const stem = structureFormula(s).replaceAll(" ", "") || "structure";
    const filename = id === "poscar" || id === "vasp" ? "POSCAR" : `${stem}.${EXTENSION[id] ?? id}`;
    return { content, format: id, filename, n_atoms: s.length };
  },
});

export const structureIo = [parseOp, exportOp];
