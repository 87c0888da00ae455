/**
 * The shapes of the workflow routes (README "Workflows"): what a client sends to create, run and
 * cancel a workflow and what it reads back. The studio's Workflows panel, the MCP tools and the
 * assistant tools are generated from these, so they stay stable.
 */
import { z } from "zod";

/** Caps checked before any work starts (coded 400 WORKFLOW_TOO_LARGE past them). */
export const WORKFLOW_LIMITS = {
  /** Nodes in one workflow. */
  maxNodes: 64,
  /** Bytes of one workflow's JSON (its nodes' params included). */
  maxDefinitionBytes: 1024 * 1024,
  /** Items one `map` node fans out over. */
  maxFanOut: 256,
  /** Retries a node may ask for. */
  maxRetries: 10,
  /** Longest per-node deadline, seconds. */
  maxTimeoutS: 24 * 3600,
  /** Jobs of one run that may be queued or running at once. */
  maxParallel: 64,
} as const;

export const NODE_ID = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

export const WorkflowNode = z.object({
  id: z.string().regex(NODE_ID).describe("unique within the workflow: a letter or _, then letters, digits, _ or -"),
  type: z
    .string()
    .min(1)
    .max(100)
    .describe(
      "an operation id of the registry (GET /api/workflow/node-types lists them), `map` (run params.operation once per item of inputs.items) or `select` (pick the best of inputs.items by params.by)",
    ),
  params: z
    .record(z.string(), z.unknown())
    .default({})
    .describe(
      "operation: its request fields. map: {operation, params?, item_key? (default structure)}. select: {by (a field of each item, e.g. energy), order? (min or max, default min)}",
    ),
  inputs: z
    .record(z.string(), z.string().max(300))
    .default({})
    .describe(
      'request field -> reference: "node.field[.field...]" (a field of another node\'s output, e.g. "slab.structure") or "$inputs.name" (a value given to POST /api/workflow/run)',
    ),
  retries: z.number().int().min(0).optional().describe("retries after a failure, with exponential backoff (default: the run's)"),
  timeout_s: z.number().positive().optional().describe("deadline of one attempt of this node (each map item), seconds"),
});
export type WorkflowNode = z.output<typeof WorkflowNode>;

export const WorkflowCreateRequest = z.object({
  name: z.string().min(1).max(200),
  nodes: z.array(WorkflowNode).min(1),
});

export const WorkflowCreateResponse = z.object({
  id: z.string().describe("workflow id (wf_...)"),
  status: z.literal("draft"),
});

export const WorkflowRunRequest = z.object({
  workflow_id: z.string().min(1).max(100),
  inputs: z.record(z.string(), z.unknown()).optional().describe('values the nodes read as "$inputs.name"'),
  max_parallel: z.number().int().min(1).optional().describe("jobs of this run queued or running at once (default 4)"),
  retries: z.number().int().min(0).optional().describe("default retries of every node (default 0)"),
  idempotency_key: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("same as the Idempotency-Key header (for MCP tools): a repeated run with the same key answers the same run"),
});

export const WorkflowRunResponse = z.object({
  run_id: z.string().describe("run id (run_...)"),
  workflow_id: z.string(),
  status: z.enum(["queued", "running", "completed", "failed", "cancelled"]).describe("queued for a new run"),
});

export const NODE_STATES = ["pending", "queued", "running", "completed", "failed", "cancelled", "skipped"] as const;
export const RUN_STATES = ["queued", "running", "completed", "failed", "cancelled"] as const;

const ErrorInfo = z.object({ code: z.string(), message: z.string() });

export const NodeStatus = z.object({
  id: z.string(),
  type: z.string(),
  state: z.enum(NODE_STATES),
  attempts: z.number().int().describe("attempts started so far (all items of a map)"),
  started_at: z.string().nullable().describe("ISO time the first attempt started"),
  finished_at: z.string().nullable(),
  error: ErrorInfo.nullable(),
  output: z
    .unknown()
    .nullable()
    .describe("the operation's response; map: {results, structures}; select: {index, value, result, structure}"),
  items: z
    .array(
      z.object({
        index: z.number().int(),
        state: z.enum(NODE_STATES),
        attempts: z.number().int(),
        started_at: z.string().nullable().optional(),
        finished_at: z.string().nullable().optional(),
        error: ErrorInfo.nullable(),
      }),
    )
    .optional()
    .describe("map only: each item's state"),
});

export const RunStatus = z.object({
  run_id: z.string(),
  status: z.enum(RUN_STATES),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  max_parallel: z.number().int(),
  retries: z.number().int(),
  error: ErrorInfo.nullable(),
  nodes: z.array(NodeStatus),
});

export const WorkflowStatusRequest = z.object({
  id: z.string().min(1).max(100).describe("a workflow id (wf_...: its definition and latest run) or a run id (run_...)"),
});

export const WorkflowStatusResponse = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(["draft", ...RUN_STATES]).describe("draft until the first run, then the latest run's status"),
  created_at: z.string(),
  nodes: z.array(WorkflowNode),
  run: RunStatus.nullable().describe("the run asked for, or the latest run of the workflow"),
  runs: z.array(z.string()).describe("run ids of this workflow, newest first (at most 20)"),
});

export const WorkflowCancelRequest = z.object({
  id: z.string().min(1).max(100).describe("a run id, or a workflow id (its running run)"),
});

export const WorkflowCancelResponse = z.object({
  run_id: z.string(),
  status: z.enum(RUN_STATES),
});

export const NodeTypesResponse = z.object({
  node_types: z.array(
    z.object({
      type: z.string(),
      summary: z.string(),
      queue: z.string().describe("ops (the services) or calc-<calculator> (calculator workers)"),
    }),
  ),
});
