/** Optimization endpoints (`/api/optimize/*`, `/api/structure/optimize`); the WebSocket is optimize/ws.ts. */
import { AtomStudioError } from "atomstudio-core";
import { z } from "zod";
import type { ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";
import {
  calculatorPool,
  EnergyRequest,
  EnergyResult,
  OptimizeEnvelope,
  OptimizeResult,
  optimizeRequest,
  runEnergy,
} from "../optimize/service.ts";
import { defineOperation } from "../registry/operation.ts";

const tag = "optimize";
const calcErrors = [
  { status: 400, code: "UNKNOWN_CALCULATOR", when: "the calculator id is not known" },
  {
    status: 400,
    code: "CALCULATOR_UNAVAILABLE",
    when: "the calculator's library or model is not installed (the message says how)",
  },
  { status: 400, code: "UNSUPPORTED_ELEMENTS", when: "the calculator cannot treat these elements or this periodicity" },
  { status: 400, code: "INVALID_STRUCTURE", when: "structure JSON cannot be parsed, or has no atoms" },
  { status: 400, code: "MODEL_PATH_NOT_ALLOWED", when: "calculator_params.model_path was given: models are picked by id" },
  { status: 400, code: "UNKNOWN_MODEL", when: "calculator_params.model is not a model id of this server (details.available)" },
  { status: 429, code: "QUEUE_FULL", when: "too many calculator jobs are waiting (ATOMSTUDIO_QUEUE_MAX); see Retry-After" },
  {
    status: 503,
    code: "QUEUE_UNAVAILABLE",
    when: "the job queue's Redis became unreachable while the request waited on its job (details.job_id: read it later at GET /api/jobs/{id})",
  },
  { status: 502, code: "WORKER_DIED", when: "the calculator worker died during the request (it is replaced)" },
  { status: 504, code: "DEADLINE_EXCEEDED", when: "the job ran past ATOMSTUDIO_JOB_DEADLINE_S and was stopped" },
];
const optErrors = [
  ...calcErrors,
  {
    status: 400,
    code: "OPTIMIZER_UNAVAILABLE",
    when: "tr_min, tr_ts or irc without Sella (the message has the install command)",
  },
  { status: 400, code: "INVALID_INDEX", when: "a frozen atom index out of bounds" },
  { status: 400, code: "UNKNOWN_OPTIMIZER", when: "the optimizer is not bfgs, tr_min, tr_ts or irc" },
  { status: 400, code: "INVALID_FMAX", when: "fmax is not positive" },
  { status: 400, code: "INVALID_MAX_STEPS", when: "max_steps is below 1 or above the ceiling (ATOMSTUDIO_MAX_STEPS)" },
  { status: 400, code: "INVALID_OPTIMIZER_PARAMS", when: "optimizer_params.delta0 or dx is not positive" },
];

const CalculatorInfo = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.string(),
  available: z.boolean(),
  status_message: z.string().nullable(),
  supports_pbc: z.boolean(),
  elements: z.array(z.string()).nullable().optional(),
  models: z
    .array(z.object({ id: z.string(), source: z.enum(["package", "models_dir", "environment"]), default: z.boolean() }))
    .nullable()
    .optional()
    .describe("ML potentials: the server's models, by id (calculator_params.model); null for the others"),
  runs_in: z.enum(["server", "browser"]).optional().describe("browser: computed by the studio (UFF), never by the service"),
});

export const calculatorsOp = defineOperation({
  id: "optimize_calculators",
  method: "GET",
  path: "/api/optimize/calculators",
  tag,
  summary: "Calculators and optimizers, with their real availability and why not",
  input: z.object({}),
  output: z.object({
    calculators: z.array(CalculatorInfo.passthrough()),
    optimizers: z.array(z.object({ id: z.string(), available: z.boolean() }).passthrough()),
  }),
  handler: async (_input, ctx) => {
    try {
      return await calculatorPool(ctx).calculators();
    } catch (e) {
      // Without a worker every server-side calculator is unavailable, for one stated reason.
      const reason = `calculator worker unavailable: ${(e as Error).message}. Install it with scripts/setup-python.`;
      const ids = ["emt", "gfn2", "gfn1", "gfn0", "gfnff", "mace", "chgnet", "m3gnet"];
      return {
        calculators: [
          ...ids.map((id) => ({
            id,
            name: id,
            kind: "server",
            available: false,
            status_message: reason,
            supports_pbc: false,
            runs_in: "server" as const,
          })),
          {
            id: "uff",
            name: "UFF (universal force field)",
            kind: "force field",
            available: true,
            status_message: null,
            supports_pbc: false,
            runs_in: "browser" as const,
          },
        ],
        optimizers: ["bfgs", "tr_min", "tr_ts", "irc"].map((id) => ({ id, available: false, status_message: reason })),
      };
    }
  },
  mcp: "svc_calculators",
});

const optimizeHandler = (env: z.output<typeof OptimizeEnvelope>, ctx: ServiceContext) => optimizeRequest(ctx, env);

export const optimizeOp = defineOperation({
  id: "optimize_structure",
  method: "POST",
  path: "/api/optimize/structure",
  tag,
  summary: "Relax a structure with a calculator and an optimizer; returns the final result",
  description: "Final structures carry per-site forces in properties.forces. Runs beyond the worker pool wait in a queue.",
  input: OptimizeEnvelope,
  output: OptimizeResult,
  errors: optErrors,
  handler: optimizeHandler,
  mcp: "svc_optimize",
  assistant: { name: "optimize_structure", inject: "structure", replacesStructure: true },
});

export const structureOptimizeOp = defineOperation({
  ...optimizeOp,
  id: "structure_optimize",
  path: "/api/structure/optimize",
  tag: "structure",
  summary: "Relax a structure (the same operation as POST /api/optimize/structure)",
  mcp: undefined,
  assistant: undefined,
});

export const energyOp = defineOperation({
  id: "energy",
  method: "POST",
  path: "/api/optimize/energy",
  tag,
  summary: "Single-point energy, forces and (periodic) stress",
  input: EnergyRequest,
  output: EnergyResult,
  errors: calcErrors,
  handler: (req, ctx) => runEnergy(ctx, req),
  mcp: "svc_energy",
});

export const energyGetOp = defineOperation({
  id: "energy_get",
  method: "GET",
  path: "/api/optimize/energy",
  tag,
  summary: "Single-point energy with the structure as a JSON query parameter",
  input: z.object({
    structure: z.string().describe("the StructureJSON, JSON-encoded"),
    calculator: z.string(),
  }),
  output: EnergyResult,
  errors: calcErrors,
  handler: ({ structure, calculator }, ctx) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(structure);
    } catch {
      throw serviceError("MALFORMED_REQUEST", "structure must be JSON-encoded StructureJSON", {
        fields: [{ path: "structure" }],
      });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new AtomStudioError("INVALID_STRUCTURE", "structure must be a JSON object", { field: "structure" });
    return runEnergy(ctx, { structure: parsed as Record<string, unknown>, calculator });
  },
});

export const optimizeOps = [calculatorsOp, optimizeOp, structureOptimizeOp, energyOp, energyGetOp];
