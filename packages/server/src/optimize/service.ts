/**
 * Geometry optimization and single-point energies through the calculator worker pool: the
 * envelope of decisions §8, checked here before any work is queued (shape by zod: 422; ranges and
 * names on a well-formed body: coded 400s).
 */
import { AtomStudioError, checkIndices, fail, fromDict, toDict } from "atomstudio-core";
import { z } from "zod";
import { redact } from "../chat/secrets.ts";
import type { ServiceConfig } from "../config.ts";
import { provide, type ServiceContext } from "../context.ts";
import { queueFor, requestCalculatorJob } from "../jobs/calculator-jobs.ts";
import { StructureJSON } from "../registry/schemas.ts";
import { WorkerPool, workerThreadEnv } from "./pool.ts";
import { WorkerProcess, workerPython } from "./worker.ts";

export const OPTIMIZERS = ["bfgs", "tr_min", "tr_ts", "irc"] as const;

export const OptimizeEnvelope = z.object({
  structure: StructureJSON,
  calculator: z
    .string()
    .describe(
      "calculator id: emt, gfn2, gfn1, gfn0, gfnff, mace, chgnet, m3gnet, or uff (molecules only; computed by the studio in the browser, refused by the HTTP API)",
    ),
  calculator_params: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      "e.g. {model, device}: `model` is a model id from GET /api/optimize/calculators (mace, chgnet, m3gnet); files are never named by path",
    ),
  optimizer: z.string().default("bfgs").describe("bfgs, tr_min, tr_ts or irc"),
  optimizer_params: z
    .object({ delta0: z.number().optional(), dx: z.number().optional() })
    .optional()
    .describe("delta0: initial trust radius (tr_min, tr_ts); dx: IRC step in Angstrom"),
  fmax: z.number().default(0.05).describe("force convergence criterion, eV/Angstrom; > 0"),
  max_steps: z.number().int().default(200).describe("1 to the service's ceiling (ATOMSTUDIO_MAX_STEPS, default 10000)"),
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

const JobId = z
  .string()
  .optional()
  .describe("the BullMQ job that ran it, when the service has a queue (GET /api/jobs/{id}); absent when it ran directly");

const IrcBranch = z.object({ structure: StructureJSON, energy: z.number(), converged: z.boolean(), steps: z.number().int() });

/** What the worker really sends (worker/PROTOCOL.md), every field declared: the schema is strict. */
export const OptimizeResult = z.object({
  structure: StructureJSON,
  converged: z.boolean(),
  steps: z.number().int(),
  initial_energy: z.number().describe("eV"),
  energy: z.number().describe("eV"),
  fmax: z.number().describe("largest force on a free atom, eV/Angstrom"),
  message: z.string(),
  trajectory: z
    .array(z.object({ step: z.number().int(), energy: z.number(), fmax: z.number(), structure: StructureJSON }))
    .optional()
    .describe("every step, with return_trajectory"),
  irc: z
    .object({ forward: IrcBranch.optional(), reverse: IrcBranch.optional() })
    .optional()
    .describe("irc only: the end of each branch"),
  calculator: z.string().describe("the calculator id that ran"),
  engine: z.string().nullable().describe("the library behind it (tblite, xtb, asap, ...)"),
  optimizer: z.string(),
  elapsed_s: z.number().describe("wall time of the run in the worker, seconds"),
  job_id: JobId,
});

export const EnergyResult = z.object({
  energy: z.number().describe("eV"),
  energy_per_atom: z.number(),
  forces: z.array(z.array(z.number())).describe("eV/Angstrom, one row per site"),
  fmax: z.number(),
  calculator: z.string().describe("the calculator id that ran"),
  stress: z.array(z.number()).nullable().optional().describe("periodic in 3 directions: Voigt order, eV/Angstrom^3"),
  job_id: JobId,
});

declare module "../context.ts" {
  interface Services {
    calculatorPool: WorkerPool;
  }
}

/**
 * What the worker may see of the service's environment: where programs and libraries are, the
 * language, thread settings, and the worker's own settings, given explicitly from the parsed
 * configuration. Never a provider key, never ATOMSTUDIO_TOKEN (decisions: child processes get a
 * minimal environment). `xtb`, which the worker may start, gets even less (worker/README.md).
 */
export const WORKER_ENV_PASSED = [
  "PATH",
  "HOME",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "TMPDIR",
  "PYTHONPATH",
  "XTBPATH",
  "OMP_NUM_THREADS",
  "OMP_STACKSIZE",
  "OPENBLAS_NUM_THREADS",
  "MKL_NUM_THREADS",
  "CUDA_VISIBLE_DEVICES",
] as const;

export const workerEnvironment = (config: ServiceConfig, poolSize = config.workers): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {};
  for (const name of WORKER_ENV_PASSED) if (config.environment[name]) env[name] = config.environment[name];
  const own: Record<string, string | number | undefined> = {
    ATOMSTUDIO_MODELS_DIR: config.modelsDir,
    ATOMSTUDIO_MACE_MODEL: config.maceModel,
    ATOMSTUDIO_CHGNET_MODEL: config.chgnetModel,
    ATOMSTUDIO_M3GNET_MODEL: config.m3gnetModel,
    ATOMSTUDIO_DEVICE: config.workerDevice,
    ATOMSTUDIO_XTB: config.xtbProgram,
    ATOMSTUDIO_XTB_TIMEOUT_S: config.xtbTimeoutS,
    ATOMSTUDIO_WORKER_LOG_LEVEL: config.workerLogLevel,
    // models come from the allowlist only: no library may fetch one from a hub at run time
    HF_HUB_OFFLINE: 1,
  };
  for (const [name, value] of Object.entries(own)) if (value !== undefined) env[name] = String(value);
  return workerThreadEnv(poolSize, env);
};

/** A pool of `size` workers started with the configured Python, the worker environment and limits. */
export const configuredPool = (config: ServiceConfig, size = config.workers, log?: ServiceContext["log"]): WorkerPool => {
  const python = workerPython(config.python);
  const env = workerEnvironment(config, size);
  const logging = { log, redact: (text: string) => redact(text, [], { ...config.environment }) };
  return new WorkerPool(size, () => new WorkerProcess(python, env, logging), {
    queueMax: config.queueMax,
    deadlineMs: config.jobDeadlineMs,
    graceMs: config.cancelGraceMs,
  });
};

/** The pool lives on the service context, started on first use and closed with the app. */
export const calculatorPool = (ctx: ServiceContext): WorkerPool =>
  ctx.services.calculatorPool ?? provide(ctx, "calculatorPool", configuredPool(ctx.config, ctx.config.workers, ctx.log));

/** Callers never name files on the server: models are picked by id from the server's allowlist. */
const refuseFilePaths = (params: Record<string, unknown> | undefined): void => {
  if (params && "model_path" in params)
    throw new AtomStudioError(
      "MODEL_PATH_NOT_ALLOWED",
      "calculator_params.model_path is not accepted: pick a server-side model by id with calculator_params.model (GET /api/optimize/calculators lists them)",
      { fields: ["calculator_params.model_path"] },
      400,
    );
};

/** Range checks of a well-formed envelope: coded 400s, before the job is queued. */
export const checkEnvelope = (env: OptimizeEnvelope, config: ServiceConfig): void => {
  if (!(OPTIMIZERS as readonly string[]).includes(env.optimizer))
    throw new AtomStudioError(
      "UNKNOWN_OPTIMIZER",
      `Unknown optimizer ${JSON.stringify(env.optimizer)}; one of ${OPTIMIZERS.join(", ")}`,
      { available: [...OPTIMIZERS] },
      400,
    );
  if (!(env.fmax > 0))
    throw new AtomStudioError("INVALID_FMAX", `fmax must be positive (eV/Angstrom), got ${env.fmax}`, { fields: ["fmax"] }, 400);
  if (env.max_steps < 1 || env.max_steps > config.maxSteps)
    throw new AtomStudioError(
      "INVALID_MAX_STEPS",
      `max_steps must be between 1 and ${config.maxSteps}, got ${env.max_steps}`,
      { fields: ["max_steps"], max: config.maxSteps },
      400,
    );
  for (const key of ["delta0", "dx"] as const) {
    const v = env.optimizer_params?.[key];
    if (v !== undefined && !(v > 0))
      throw new AtomStudioError(
        "INVALID_OPTIMIZER_PARAMS",
        `optimizer_params.${key} must be positive, got ${v}`,
        { fields: [`optimizer_params.${key}`] },
        400,
      );
  }
  refuseFilePaths(env.calculator_params);
};

/** UFF is computed by the studio (a Web Worker running atomstudio-core), never by the service. */
export const UFF_RUNS_IN_STUDIO =
  "UFF runs in the studio (in the browser, a Web Worker running atomstudio-core's UFF), not on the server: pick UFF in the studio's Optimize panel, or ask the studio's assistant";

/** Validate the structure and frozen indices here, so a bad request never waits in the queue. */
export const workerParams = (env: Pick<OptimizeEnvelope, "structure" | "frozen_atoms"> & Record<string, unknown>) => {
  if (env.calculator === "uff") fail("CALCULATOR_UNAVAILABLE", UFF_RUNS_IN_STUDIO);
  refuseFilePaths(env.calculator_params as Record<string, unknown> | undefined);
  const s = fromDict(env.structure);
  if (s.length === 0) fail("INVALID_STRUCTURE", "The structure has no atoms");
  if (env.frozen_atoms?.length) checkIndices(s, env.frozen_atoms, "frozen_atoms");
  return { ...env, structure: toDict(s) };
};

/**
 * One calculator request of an HTTP client: a BullMQ job when a queue takes this calculator
 * (jobs/calculator-jobs.ts), else the local pool; cancelled (dequeued, or stopped on its worker)
 * when the client goes away.
 */
const runCalculatorRequest = async <T extends object>(
  ctx: ServiceContext,
  calculator: string,
  params: Record<string, unknown>,
  methods: { queue: "energy" | "optimize_structure"; pool: "energy" | "optimize" },
): Promise<T> => {
  const queues = await queueFor(ctx, calculator);
  if (queues) return requestCalculatorJob<T>(ctx, queues, methods.queue, calculator, params, ctx.request?.signal);
  const job = calculatorPool(ctx).run<T>(methods.pool, params);
  cancelOnAbort(ctx, job.cancel);
  return job.result;
};

/** A single point. */
export const runEnergy = (ctx: ServiceContext, req: z.output<typeof EnergyRequest>) =>
  runCalculatorRequest<z.output<typeof EnergyResult>>(ctx, req.calculator, workerParams({ ...req, frozen_atoms: [] }), {
    queue: "energy",
    pool: "energy",
  });

/** An optimization. */
export const optimizeRequest = (ctx: ServiceContext, env: OptimizeEnvelope) => {
  checkEnvelope(env, ctx.config);
  return runCalculatorRequest<z.output<typeof OptimizeResult>>(ctx, env.calculator, workerParams(env), {
    queue: "optimize_structure",
    pool: "optimize",
  });
};

/** Cancel a job when the HTTP client goes away (or has already gone). */
export const cancelOnAbort = (ctx: ServiceContext, cancel: () => void): void => {
  const signal = ctx.request?.signal;
  if (signal?.aborted) cancel();
  else signal?.addEventListener("abort", cancel, { once: true });
};
