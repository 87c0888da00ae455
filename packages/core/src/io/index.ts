/**
 * Structure file formats: one registry, detection from file name and content, and two entry
 * points. Every failure to read is a 400 INVALID_FORMAT whose message and `details.tried` say
 * which formats were tried and why each one failed.
 */
import { AtomStudioError, isAtomStudioError } from "../errors.ts";
import type { Structure } from "../structure.ts";
import { cifFormat } from "./cif.ts";
import { jsonFormat } from "./json.ts";
import { pdbFormat } from "./pdb.ts";
import { poscarFormat, xdatcarFormat } from "./poscar.ts";
import { type FormatId, LIMIT_CODES, type ReadLimits, type StructureFormat } from "./util.ts";
import { extxyzFormat, xyzFormat } from "./xyz.ts";

export { MAX_SYMMETRY_OPERATIONS } from "./cif.ts";
export { cellFromParameters } from "./pdb.ts";
export type { FormatId, ReadLimits, StructureFormat } from "./util.ts";

/** Registry order breaks detection ties. */
export const STRUCTURE_FORMATS: readonly StructureFormat[] = [
  cifFormat,
  poscarFormat,
  xdatcarFormat,
  extxyzFormat,
  xyzFormat,
  pdbFormat,
  jsonFormat,
];

const ALIASES: Record<string, FormatId> = {
  vasp: "poscar",
  contcar: "poscar",
  mcif: "cif",
  ent: "pdb",
  exyz: "extxyz",
  "ext-xyz": "extxyz",
  pymatgen: "json",
};

/** The format for an id, alias or extension ("POSCAR", "vasp", ".cif"), or undefined. */
export const getStructureFormat = (name: string): StructureFormat | undefined => {
  const key = name.trim().toLowerCase().replace(/^\./, "");
  const id = ALIASES[key] ?? key;
  return STRUCTURE_FORMATS.find((f) => f.id === id || f.extensions.includes(key));
};

export interface FormatGuess {
  format: FormatId;
  confidence: number;
}

/** Formats that may fit, most likely first (file name beats content). */
export const detectStructureFormat = (content: string, filename?: string): FormatGuess[] =>
  STRUCTURE_FORMATS.map((f) => {
    let confidence = 0;
    try {
      confidence = f.detect(content, filename);
    } catch {
      confidence = 0;
    }
    return { format: f.id, confidence };
  })
    .filter((g) => g.confidence > 0)
    .sort((a, b) => b.confidence - a.confidence);

export interface ParseOptions {
  filename?: string;
  /** Format id or alias; skips detection. */
  format?: string;
  /** Caps on atoms and frames; a file over one is a 400 with the limit's code, whatever the format. */
  limits?: ReadLimits;
}

export interface ParsedStructureFile {
  structure: Structure;
  format: FormatId;
  /** Every frame, only when the file holds more than one. */
  frames?: Structure[];
}

interface Attempt {
  format: FormatId;
  reason: string;
  /** A reader failed in a way it did not foresee (a bug, not bad input). */
  unexpected?: true;
}

const knownFormats = (): string[] => STRUCTURE_FORMATS.map((f) => f.id);

const invalid = (message: string, details: Record<string, unknown>): AtomStudioError =>
  new AtomStudioError("INVALID_FORMAT", message, details);

/**
 * Read a structure file of any supported format. The first frame is `structure`; `frames` holds
 * all of them when there are several (XDATCAR, extended XYZ, multi-model PDB, multi-block CIF).
 */
export const parseStructureFile = (content: string, opts: ParseOptions = {}): ParsedStructureFile => {
  const filename = typeof opts.filename === "string" && opts.filename ? opts.filename : undefined;
  const where = filename ? ` ${JSON.stringify(filename)}` : "";
  if (typeof content !== "string") throw invalid("File content must be text", { tried: [] });
  let candidates: StructureFormat[];
  if (opts.format !== undefined && opts.format !== null && opts.format !== "") {
    const f = typeof opts.format === "string" ? getStructureFormat(opts.format) : undefined;
    if (!f)
      throw invalid(`Unknown structure format ${JSON.stringify(opts.format)}; known formats: ${knownFormats().join(", ")}`, {
        format: opts.format,
        known: knownFormats(),
        tried: [],
      });
    candidates = [f];
  } else {
    const guesses = detectStructureFormat(content, filename);
    // Nothing recognisable: try everything, so the error explains each format's objection.
    candidates = guesses.length
      ? guesses.map((g) => STRUCTURE_FORMATS.find((f) => f.id === g.format) as StructureFormat)
      : [...STRUCTURE_FORMATS];
  }
  if (content.trim() === "") {
    const tried = candidates.map((f) => ({ format: f.id, reason: "the file is empty" }));
    throw invalid(`Could not read the file${where}: it is empty (tried ${tried.map((t) => t.format).join(", ")})`, {
      tried,
      ...(filename ? { filename } : {}),
    });
  }
  const tried: Attempt[] = [];
  for (const f of candidates) {
    try {
      const frames = f.read(content, opts.limits);
      const first = frames[0];
      if (!first) throw invalid("no structure in the file", {});
      if (frames.some((s) => s.length === 0)) throw invalid("a frame has no atoms", {});
      return frames.length > 1 ? { structure: first, format: f.id, frames } : { structure: first, format: f.id };
    } catch (e) {
      const ours = isAtomStudioError(e);
      // Over a limit: the file was understood, it is too big; another format would not fix that.
      if (ours && LIMIT_CODES.has(e.code)) throw e;
      tried.push({
        format: f.id,
        reason: e instanceof Error ? e.message : String(e),
        ...(ours ? {} : { unexpected: true as const }),
      });
    }
  }
  const summary = tried.map((t) => `${t.format}: ${t.reason}`).join("; ");
  throw invalid(`Could not read the file${where} as a structure (tried ${summary})`, {
    tried,
    ...(filename ? { filename } : {}),
  });
};

const formatFor = (format: string): StructureFormat => {
  const f = typeof format === "string" ? getStructureFormat(format) : undefined;
  if (!f)
    throw invalid(`Unknown structure format ${JSON.stringify(format)}; known formats: ${knownFormats().join(", ")}`, {
      format,
      known: knownFormats(),
    });
  return f;
};

/** Write one structure; formats that cannot hold it (a molecule as POSCAR, partial occupancy as XYZ) say why. */
export const writeStructureFile = (s: Structure, format: string): string => formatFor(format).write(s);

/** Write a trajectory to a multi-frame format (xdatcar, xyz, extxyz, pdb, json). */
export const writeStructureFrames = (frames: readonly Structure[], format: string): string => {
  const f = formatFor(format);
  if (frames.length === 1 && frames[0]) return f.write(frames[0]);
  if (!f.writeFrames)
    throw invalid(`${f.name} holds one structure; write ${frames.length} frames as xdatcar, xyz, extxyz, pdb or json`, {
      format: f.id,
    });
  return f.writeFrames(frames);
};
