/** Workflow routes (`/api/workflow/*`, README "Workflows"); the orchestrator is workflow/engine.ts. */

import { z } from "zod";
import type { ServiceContext } from "../context.ts";
import { CALCULATOR_OPERATIONS, requireQueue } from "../jobs/queue.ts";
import { defineOperation } from "../registry/operation.ts";
import { stepOperations } from "../workflow/definition.ts";
import type { Workflows } from "../workflow/engine.ts";
import {
  NodeTypesResponse,
  WorkflowCancelRequest,
  WorkflowCancelResponse,
  WorkflowCreateRequest,
  WorkflowCreateResponse,
  WorkflowRunRequest,
  WorkflowRunResponse,
  WorkflowStatusRequest,
  WorkflowStatusResponse,
} from "../workflow/schemas.ts";

const tag = "workflow";
const queueDown = { code: "QUEUE_UNAVAILABLE", when: "the service has no Redis, or it cannot be reached" };
const notFound = { code: "WORKFLOW_NOT_FOUND", when: "no workflow or run with this id" };

/** The orchestrator, or 503 QUEUE_UNAVAILABLE. */
const workflows = (ctx: ServiceContext): Workflows => {
  requireQueue(ctx);
  return ctx.services.workflows as Workflows;
};

const header = (ctx: ServiceContext, name: string): string | undefined => {
  const v = ctx.request?.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export const workflowCreateOp = defineOperation({
  id: "workflow_create",
  method: "POST",
  path: "/api/workflow/create",
  successStatus: 201,
  tag,
  summary: "Store a workflow (a DAG of operation, map and select nodes) after checking types, references and cycles",
  description:
    'Nodes: {id, type, params, inputs: {field: "node.field" | "$inputs.name"}, retries?, timeout_s?}. Nothing runs until POST /api/workflow/run.',
  input: WorkflowCreateRequest,
  output: WorkflowCreateResponse,
  errors: [
    { code: "UNKNOWN_NODE_TYPE", when: "a node type (or map params.operation) is not an operation, map or select" },
    { code: "CYCLE_DETECTED", when: "nodes depend on each other in a cycle" },
    { code: "DANGLING_REFERENCE", when: "an input refers to a node that is not in the workflow" },
    { code: "DUPLICATE_NODE_ID", when: "two nodes share an id" },
    { code: "INVALID_NODE_PARAMS", when: "a map or select node lacks what it needs; retries or timeout_s over their caps" },
    { code: "WORKFLOW_TOO_LARGE", when: "more than 64 nodes or over 1 MiB of JSON" },
    queueDown,
  ],
  handler: (input, ctx) => workflows(ctx).create(input),
  mcp: "svc_workflow_create",
  assistant: { name: "workflow_create", replacesStructure: false },
});

export const workflowRunOp = defineOperation({
  id: "workflow_run",
  method: "POST",
  path: "/api/workflow/run",
  successStatus: 202,
  tag,
  summary: "Start a run of a workflow; idempotent with an Idempotency-Key header (or idempotency_key)",
  description: "Answers at once; follow the run with GET /api/workflow/{id}. A second run while one is unfinished is 409.",
  input: WorkflowRunRequest,
  output: WorkflowRunResponse,
  errors: [
    notFound,
    { code: "WORKFLOW_ALREADY_RUNNING", when: "the workflow has an unfinished run (details.run_id)" },
    { code: "INVALID_IDEMPOTENCY_KEY", when: "the key is empty or over 200 characters" },
    { code: "INVALID_NODE_PARAMS", when: "retries over the cap (10)" },
    { code: "WORKFLOW_TOO_LARGE", when: "inputs over 1 MiB of JSON" },
    queueDown,
  ],
  handler: (input, ctx) => workflows(ctx).run(input, header(ctx, "idempotency-key")),
  mcp: "svc_workflow_run",
  assistant: { name: "workflow_run", replacesStructure: false },
});

export const workflowStatusOp = defineOperation({
  id: "workflow_status",
  method: "GET",
  path: "/api/workflow/:id",
  tag,
  summary: "A workflow with its latest run (or one run): every node's state, attempts, timings, error and output",
  input: WorkflowStatusRequest,
  output: WorkflowStatusResponse,
  errors: [notFound, queueDown],
  handler: ({ id }, ctx) => workflows(ctx).status(id),
  mcp: "svc_workflow_status",
  assistant: { name: "workflow_status", replacesStructure: false },
});

export const workflowCancelOp = defineOperation({
  id: "workflow_cancel",
  method: "POST",
  path: "/api/workflow/cancel",
  tag,
  summary: "Cancel a run: waiting jobs are removed, running ones stopped",
  input: WorkflowCancelRequest,
  output: WorkflowCancelResponse,
  errors: [notFound, queueDown],
  handler: ({ id }, ctx) => workflows(ctx).cancel(id),
  mcp: "svc_workflow_cancel",
});

export const workflowNodeTypesOp = defineOperation({
  id: "workflow_node_types",
  method: "GET",
  path: "/api/workflow/node-types",
  tag,
  summary: "The node types a workflow may use: the operations, map and select",
  input: z.object({}),
  output: NodeTypesResponse,
  handler: async () => {
    // the registry's list, read when asked (it includes this module)
    const { operations } = await import("./index.ts");
    return {
      node_types: [
        ...[...stepOperations(operations).values()].map((op) => ({
          type: op.id,
          summary: op.summary,
          queue: op.id in CALCULATOR_OPERATIONS ? "calc-<calculator>" : "ops",
        })),
        { type: "map", summary: "run params.operation once per item of inputs.items (a list of structures)", queue: "ops" },
        { type: "select", summary: "pick the item of inputs.items with the smallest (or largest) params.by", queue: "-" },
      ],
    };
  },
});

export const workflowOps = [workflowCreateOp, workflowRunOp, workflowNodeTypesOp, workflowStatusOp, workflowCancelOp];
