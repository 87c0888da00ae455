/** Reading and writing structure files: `/api/structure/parse` and `/api/structure/export`. */
import {
  fromDict,
  MAX_SYMMETRY_OPERATIONS,
  STRUCTURE_FORMATS,
  structureFormula,
  writeStructureFile,
  writeStructureFrames,
} from "atomstudio-core";
import { z } from "zod";
import { COMPUTE_ERRORS, compute } from "../compute/service.ts";
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
    "JSON {content, filename?, format?} or a multipart upload (file field plus optional format). The format is detected from the file name and content unless given. Multi-frame files (XDATCAR, XYZ, extended XYZ, multi-model PDB) also return every frame, up to ATOMSTUDIO_MAX_FRAMES (default 1,000; more is 400 TOO_MANY_FRAMES); analyse longer runs with the /api/md routes, which read whole files.",
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
    n_frames: z.number().int().optional().describe("frames in the file (multi-frame files)"),
    frames_truncated: z.boolean().optional().describe("true when frames holds only the first 1,000"),
  }),
  errors: [
    { status: 400, code: "INVALID_FORMAT", when: "unknown or unreadable input; the message says which formats were tried" },
    {
      status: 400,
      code: "TOO_MANY_ATOMS",
      when: "a structure (a CIF after symmetry expansion included) over ATOMSTUDIO_MAX_ATOMS, or all frames over ATOMSTUDIO_MAX_TOTAL_ATOMS",
    },
    { status: 400, code: "TOO_MANY_FRAMES", when: "more frames than ATOMSTUDIO_MAX_FRAMES" },
    {
      status: 400,
      code: "TOO_MANY_SYMMETRY_OPERATIONS",
      when: `a CIF lists more than ${MAX_SYMMETRY_OPERATIONS} distinct symmetry operations`,
    },
    ...COMPUTE_ERRORS,
  ],
  // Parsing (CIF symmetry expansion, long trajectories) runs in the compute pool, capped as it reads.
  handler: ({ content, filename, format }, ctx) =>
    compute(ctx).run(
      "parse",
      {
        content,
        ...(filename ? { filename } : {}),
        ...(format ? { format } : {}),
        limits: { maxAtoms: ctx.config.maxAtoms, maxFrames: ctx.config.maxFrames, maxTotalAtoms: ctx.config.maxTotalAtoms },
      },
      { signal: ctx.request?.signal },
    ),
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
