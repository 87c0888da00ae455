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
    .describe(
      "calculator id: emt, gfn2, gfn1, gfn0, gfnff, mace, chgnet, m3gnet, or uff (molecules only; computed by the studio in the browser, refused by the HTTP API)",
    ),
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

export const OptimizeResult = z.object({
  structure: StructureJSON,
  converged: z.boolean(),
  steps: z.number().int(),
  initial_energy: z.number(),
  energy: z.number(),
  fmax: z.number(),
  message: z.string(),
  trajectory: z.array(z.unknown()).optional(),
});

export const EnergyResult = z.object({
  energy: z.number(),
  energy_per_atom: z.number(),
  forces: z.array(z.array(z.number())),
  fmax: z.number(),
  stress: z.array(z.number()).nullable().optional(),
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

/** UFF is computed by the studio (a Web Worker running atomstudio-core), never by the service. */
export const UFF_RUNS_IN_STUDIO =
  "UFF runs in the studio (in the browser, a Web Worker running atomstudio-core's UFF), not on the server: pick UFF in the studio's Optimize panel, or ask the studio's assistant";

/** Validate the structure and frozen indices here, so a bad request never waits in the queue. */
export const workerParams = (env: Pick<OptimizeEnvelope, "structure" | "frozen_atoms"> & Record<string, unknown>) => {
  if (env.calculator === "uff") fail("CALCULATOR_UNAVAILABLE", UFF_RUNS_IN_STUDIO);
  const s = fromDict(env.structure);
  if (s.length === 0) fail("INVALID_STRUCTURE", "The structure has no atoms");
  if (env.frozen_atoms?.length) checkIndices(s, env.frozen_atoms, "frozen_atoms");
  return { ...env, structure: toDict(s) };
};

export const runOptimization = (ctx: ServiceContext, env: OptimizeEnvelope, opts: RunOptions = {}) =>
  calculatorPool(ctx).run<z.output<typeof OptimizeResult>>("optimize", workerParams(env), opts);

export const runEnergy = (ctx: ServiceContext, req: z.output<typeof EnergyRequest>) =>
  calculatorPool(ctx).run<z.output<typeof EnergyResult>>("energy", workerParams({ ...req, frozen_atoms: [] })).result;
