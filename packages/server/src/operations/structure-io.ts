/** Reading and writing structure files: `/api/structure/parse` and `/api/structure/export`. */
import {
  fromDict,
  initSymmetry,
  isAtomStudioError,
  type ParsedStructureFile,
  parseStructureFile,
  readTrajectory,
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
/** Frames returned as dictionaries by parse (each costs ~100 bytes per byte of input); the MD routes read whole files. */
export const PARSE_MAX_FRAMES = 1_000;
const MULTI_FRAME = new Set(["xdatcar", "extxyz", "xyz", "pdb"]);

/**
 * Multi-frame files go through the trajectory reader (one Float64Array, not F structures): the
 * first frame is read in full fidelity from its own text, later frames come from the trajectory,
 * at most PARSE_MAX_FRAMES of them. Files the trajectory reader refuses (frames of different
 * sizes in an XYZ) fall back to the structure readers.
 */
const parseFrames = (content: string, filename?: string, format?: string): ParsedStructureFile & { nFrames: number } => {
  const opts = { ...(filename ? { filename } : {}), ...(format ? { format } : {}) };
  let traj: ReturnType<typeof readTrajectory> | null = null;
  try {
    traj = readTrajectory(content, { ...opts, limits: { maxFrames: 1_000_000, maxAtomFrames: 50_000_000 } });
  } catch (e) {
    if (!isAtomStudioError(e) || (e.code !== "INVALID_FORMAT" && e.code !== "INCONSISTENT_FRAMES")) throw e;
  }
  if (!traj || traj.trajectory.nFrames < 2 || !MULTI_FRAME.has(traj.format) || traj.secondFrameAt <= 0) {
    const parsed = parseStructureFile(content, opts);
    const n = parsed.frames?.length ?? 1;
    return parsed.frames && n > PARSE_MAX_FRAMES
      ? { ...parsed, frames: parsed.frames.slice(0, PARSE_MAX_FRAMES), nFrames: n }
      : { ...parsed, nFrames: n };
  }
  const t = traj.trajectory;
  const first = parseStructureFile(content.slice(0, traj.secondFrameAt), { ...opts, format: traj.format });
  const kept = Math.min(t.nFrames, PARSE_MAX_FRAMES);
  const frames = [first.structure];
  for (let f = 1; f < kept; f++) frames.push(t.frame(f));
  return { structure: first.structure, format: first.format, frames, nFrames: t.nFrames };
};
const EXTENSION: Record<string, string> = {
  cif: "cif",
  poscar: "vasp",
  xdatcar: "XDATCAR",
  xyz: "xyz",
  extxyz: "extxyz",
  pdb: "pdb",
  json: "json",
};

export const parseOp = defineOperation({
  id: "parse_structure",
  method: "POST",
  path: "/api/structure/parse",
  tag: "structure",
  summary: "Parse a structure file (CIF, POSCAR/CONTCAR, XDATCAR, XYZ, extended XYZ, PDB, pymatgen JSON)",
  description:
    "JSON {content, filename?, format?} or a multipart upload (file field plus optional format). The format is detected from the file name and content unless given. Multi-frame files (XDATCAR, XYZ, extended XYZ, multi-model PDB) also return their frames, at most 1,000 (n_frames says how many the file holds; frames_truncated when cut); analyse long runs with the /api/md routes.",
  input: z.object({
    content: z.string().describe("the file's text"),
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
  ],
  handler: async ({ content, filename, format }) => {
    // CIFs that only name their space group need moyo's tables (loaded once).
    await initSymmetry();
    const parsed = parseFrames(content, filename, format);
    return {
      structure: toDict(parsed.structure),
      format: parsed.format,
      n_atoms: parsed.structure.length,
      formula: structureFormula(parsed.structure),
      ...(parsed.frames && parsed.frames.length > 1
        ? {
            frames: parsed.frames.map(toDict),
            n_frames: parsed.nFrames,
            ...(parsed.nFrames > parsed.frames.length ? { frames_truncated: true } : {}),
          }
        : {}),
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
    format: z.string().describe(`one of ${FORMAT_IDS.join(", ")}`),
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
