/**
 * The compute tasks: CPU-heavy core work that runs in the compute pool's worker threads, never
 * on the event loop (README.md here). Each task takes plain data (pymatgen dictionaries, numbers,
 * strings: what structured clone copies exactly) and returns the operation's response, so the
 * result is the one the same core function gives in process.
 *
 * Adding a task is one line in `tasks` below; the service's `run("name", args)` is typed from it.
 */
import {
  AtomStudioError,
  conventionalStandardStructure,
  fromDict,
  initSymmetry,
  isAtomStudioError,
  parseStructureFile,
  primitiveStandardStructure,
  type ReadLimits,
  type SlabOptions,
  slab,
  structureFormula,
  structureInfo,
  toDict,
} from "atomstudio-core";

import { placeDualTask, placeTask } from "../adsorption/placement.ts";
import { coreBuildTask } from "../build/core.ts";
import { type MdAnalysis, mdAnalyses } from "../md/analyses.ts";

type Dict = Record<string, unknown>;

const slabTask = (args: { structure: Dict } & SlabOptions) => {
  const { structure, ...opts } = args;
  const r = slab(fromDict(structure), opts);
  return {
    structure: toDict(r.structure),
    n_atoms: r.structure.length,
    miller: [...opts.miller],
    thickness_angstroms: r.thicknessAngstroms,
    vacuum_angstroms: r.vacuumAngstroms,
    formula: r.formula,
    surface_area: r.surfaceArea,
    n_terminations: r.nTerminations,
    termination_index: r.terminationIndex,
  };
};

const standardCellTask = ({ structure, kind }: { structure: Dict; kind: "conventional" | "primitive" }) => {
  const s = fromDict(structure);
  if (!s.lattice) throw new AtomStudioError("MISSING_LATTICE", `A ${kind} cell needs a periodic structure; this is a molecule`);
  const out = kind === "conventional" ? conventionalStandardStructure(s) : primitiveStandardStructure(s);
  if (!out) throw new AtomStudioError("INVALID_STRUCTURE", "No symmetry could be determined for this structure");
  return { structure: toDict(out), n_atoms: out.length, formula: structureFormula(out), original_n_atoms: s.length };
};

const parseTask = (args: { content: string; filename?: string; format?: string; limits: ReadLimits }) => {
  const parsed = parseStructureFile(args.content, args);
  return {
    structure: toDict(parsed.structure),
    format: parsed.format,
    n_atoms: parsed.structure.length,
    formula: structureFormula(parsed.structure),
    ...(parsed.frames ? { frames: parsed.frames.map(toDict) } : {}),
  };
};

export const tasks = {
  structureInfo: ({ structure }: { structure: Dict }) => structureInfo(fromDict(structure)),
  standardCell: standardCellTask,
  slab: slabTask,
  parse: parseTask,
  md: ({ analysis, input }: { analysis: MdAnalysis; input: unknown }) => (mdAnalyses[analysis] as (i: unknown) => unknown)(input),
  adsorptionPlace: placeTask,
  adsorptionPlaceDual: placeDualTask,
  build: coreBuildTask,
};

export type ComputeTasks = typeof tasks;
export type TaskName = keyof ComputeTasks;
export type TaskArgs<K extends TaskName> = Parameters<ComputeTasks[K]>[0];
export type TaskResult<K extends TaskName> = Awaited<ReturnType<ComputeTasks[K]>>;

export interface TaskMessage {
  name: TaskName;
  args: unknown;
}

/** What crosses back: structured clone keeps an Error's message only, so a coded error travels as data. */
export type TaskOutcome =
  | { ok: true; value: unknown }
  | { ok: false; error: { code: string; message: string; details: Record<string, unknown> | undefined; status: number } };

/** The worker thread's handler (worker.mjs exports it to the pool). */
export const runTask = async ({ name, args }: TaskMessage): Promise<TaskOutcome> => {
  const task = tasks[name] as ((a: unknown) => unknown) | undefined;
  if (!task) throw new Error(`unknown compute task ${String(name)}`);
  try {
    // Symmetry tables (moyo) load once per thread; symmetry, slabs and CIF space groups use them.
    await initSymmetry();
    return { ok: true, value: await task(args) };
  } catch (e) {
    if (!isAtomStudioError(e)) throw e;
    return { ok: false, error: { code: e.code, message: e.message, details: e.details, status: e.status } };
  }
};
