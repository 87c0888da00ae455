/**
 * Geometry optimization and single-point energies through the calculator worker pool: the
 * envelope of decisions §8, checked here before any work is queued.
 */
import { checkIndices, fail, fromDict, toDict } from "atomstudio-core";
import { z } from "zod";
import type { ServiceConfig } from "../config.ts";
import { provide, type ServiceContext } from "../context.ts";
import { StructureJSON } from "../registry/schemas.ts";
import { type RunOptions, WorkerPool, workerThreadEnv } from "./pool.ts";
import { WorkerProcess, workerPython } from "./worker.ts";

export const OptimizeEnvelope = z.object({
  structure: StructureJSON,
  calculator: z
    .string()
    .describe("calculator id: emt, gfn2, gfn1, gfn0, gfnff, mace, chgnet, m3gnet (uff is browser-side and not served)"),
  calculator_params: z.record(z.string(), z.unknown()).optional().describe("e.g. {model_path, device}"),
  optimizer: z.string().default("bfgs").describe("bfgs, tr_min, tr_ts or irc"),
  optimizer_params: z
    .object({ delta0: z.number().optional(), dx: z.number().optional() })
    .optional()
    .describe("delta0: initial trust radius (tr_min, tr_ts); dx: IRC step in Angstrom"),
  fmax: z.number().positive().default(0.05).describe("force convergence criterion, eV/Angstrom"),
  max_steps: z.number().int().min(0).default(200),
  optimize_cell: z.boolean().default(false).describe("also relax cell shape and volume"),
  frozen_atoms: z.array(z.number().int()).default([]).describe("site indices held exactly fixed"),
  return_trajectory: z.boolean().default(false),
});
export type OptimizeEnvelope = z.output<typeof OptimizeEnvelope>;

export const EnergyRequest = z.object({
  structure: StructureJSON,
  calculator: z.string(),
  calculator_params: z.record(z.string(), z.unknown()).optional(),
});

const IrcEnd = z.object({ structure: StructureJSON, energy: z.number(), converged: z.boolean(), steps: z.number().int() });

/** What the worker answers (worker/src/atomstudio_worker/runner.py); the contract test holds the two together. */
export const OptimizeResult = z.object({
  structure: StructureJSON,
  converged: z.boolean(),
  steps: z.number().int(),
  initial_energy: z.number().describe("eV"),
  energy: z.number().describe("eV"),
  fmax: z.number().describe("largest force on a free atom, eV/Angstrom"),
  message: z.string(),
  calculator: z.string().describe("the calculator id that ran"),
  engine: z.string().nullable().describe("the library behind it (tblite, xtb, asap, ...)"),
  optimizer: z.string(),
  elapsed_s: z.number().describe("wall time in the worker, seconds"),
  irc: z.record(z.string(), IrcEnd).optional().describe("irc only: the end of each direction (forward, reverse)"),
  trajectory: z
    .array(z.object({ step: z.number().int(), energy: z.number(), fmax: z.number(), structure: StructureJSON }))
    .optional()
    .describe("with return_trajectory: every step"),
});

export const EnergyResult = z.object({
  energy: z.number().describe("eV"),
  energy_per_atom: z.number(),
  forces: z.array(z.array(z.number())).describe("eV/Angstrom, one row per site"),
  fmax: z.number(),
  calculator: z.string().describe("the calculator id that ran"),
  stress: z.array(z.number()).nullable().optional().describe("periodic in 3 directions: Voigt order, eV/Angstrom^3"),
});

declare module "../context.ts" {
  interface Services {
    calculatorPool: WorkerPool;
  }
}

/** A pool of `size` workers started with the configured Python and the process environment. */
export const configuredPool = (config: ServiceConfig, size = config.workers): WorkerPool => {
  const python = workerPython(config.python);
  return new WorkerPool(size, () => new WorkerProcess(python, workerThreadEnv(size, { ...config.environment })));
};

/** The pool lives on the service context, started on first use and closed with the app. */
export const calculatorPool = (ctx: ServiceContext): WorkerPool =>
  ctx.services.calculatorPool ?? provide(ctx, "calculatorPool", configuredPool(ctx.config));

/** Validate the structure and frozen indices here, so a bad request never waits in the queue. */
export const workerParams = (env: Pick<OptimizeEnvelope, "structure" | "frozen_atoms"> & Record<string, unknown>) => {
  const s = fromDict(env.structure);
  if (s.length === 0) fail("INVALID_STRUCTURE", "The structure has no atoms");
  if (env.frozen_atoms?.length) checkIndices(s, env.frozen_atoms, "frozen_atoms");
  return { ...env, structure: toDict(s) };
};

export const runOptimization = (ctx: ServiceContext, env: OptimizeEnvelope, opts: RunOptions = {}) =>
  calculatorPool(ctx).run<z.output<typeof OptimizeResult>>("optimize", workerParams(env), opts);

export const runEnergy = (ctx: ServiceContext, req: z.output<typeof EnergyRequest>) =>
  calculatorPool(ctx).run<z.output<typeof EnergyResult>>("energy", workerParams({ ...req, frozen_atoms: [] })).result;
