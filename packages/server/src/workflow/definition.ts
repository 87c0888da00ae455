/**
 * What makes a workflow valid, checked at create before anything is stored: node types (registry
 * operations, `map`, `select`), unique ids, references to nodes that exist, no cycles, and the
 * caps of WORKFLOW_LIMITS. Also the reference syntax shared by validation and the orchestrator.
 */
import type { z } from "zod";
import { serviceError } from "../errors/codes.ts";
import { CALCULATOR_OPERATIONS, calcQueue, OPS_QUEUE } from "../jobs/queue.ts";
import type { Operation } from "../registry/operation.ts";
import { WORKFLOW_LIMITS, type WorkflowCreateRequest, type WorkflowNode } from "./schemas.ts";

/** Operation tags that are not work on structures (the chat, the viewer, the service itself, workflows). */
const NOT_STEPS = new Set(["chat", "view", "service", "workflow"]);

/** Operations a workflow node may run: the POST operations that transform or compute on structures. */
export const stepOperations = (operations: readonly Operation[]): Map<string, Operation> =>
  new Map(operations.filter((op) => op.method === "POST" && !NOT_STEPS.has(op.tag)).map((op) => [op.id, op]));

/** The queue a node's job goes to: `calc-<calculator>` for calculator operations, else `ops`. */
export const queueOf = (operation: string, input: Record<string, unknown>): string =>
  operation in CALCULATOR_OPERATIONS && typeof input.calculator === "string" && /^[a-z0-9_-]{1,32}$/.test(input.calculator)
    ? calcQueue(input.calculator)
    : OPS_QUEUE;

export interface Reference {
  /** A node id, or `$inputs` for the run's inputs. */
  source: string;
  path: string[];
}

/** `"node.field.sub"` → {source: node, path: [field, sub]}; `"$inputs.name"` → {source: "$inputs", path: [name]}. */
export const parseReference = (ref: string): Reference | undefined => {
  const parts = ref.split(".");
  if (parts.length < 2 || parts.some((p) => p === "")) return undefined;
  return { source: parts[0] as string, path: parts.slice(1) };
};

/** Walk `path` into `value`; undefined when a step is missing. Own properties only. */
export const walk = (value: unknown, path: readonly string[]): unknown => {
  let v = value;
  for (const key of path) {
    if (v === null || typeof v !== "object" || !Object.hasOwn(v, key)) return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
};

const tooLarge = (message: string, details: Record<string, unknown>) => serviceError("WORKFLOW_TOO_LARGE", message, details);
const badNode = (id: string, message: string) =>
  serviceError("INVALID_NODE_PARAMS", `Node ${JSON.stringify(id)}: ${message}`, { node: id });

/** The node ids each node depends on (through its inputs). */
export const dependencies = (node: WorkflowNode): string[] => [
  ...new Set(
    Object.values(node.inputs)
      .map((ref) => parseReference(ref)?.source)
      .filter((s): s is string => s !== undefined && s !== "$inputs"),
  ),
];

/** Throws the coded 400 of the first problem; returns the nodes in an order where every node comes after its inputs. */
export const validateWorkflow = (
  body: z.output<typeof WorkflowCreateRequest>,
  steps: ReadonlyMap<string, Operation>,
): WorkflowNode[] => {
  const { nodes } = body;
  if (nodes.length > WORKFLOW_LIMITS.maxNodes)
    throw tooLarge(`The workflow has ${nodes.length} nodes, more than the limit of ${WORKFLOW_LIMITS.maxNodes}`, {
      n_nodes: nodes.length,
      limit: WORKFLOW_LIMITS.maxNodes,
    });
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > WORKFLOW_LIMITS.maxDefinitionBytes)
    throw tooLarge(`The workflow is ${bytes} bytes of JSON, more than the limit of ${WORKFLOW_LIMITS.maxDefinitionBytes}`, {
      bytes,
      limit: WORKFLOW_LIMITS.maxDefinitionBytes,
    });
  const ids = new Set<string>();
  for (const node of nodes) {
    if (ids.has(node.id))
      throw serviceError("DUPLICATE_NODE_ID", `Two nodes have the id ${JSON.stringify(node.id)}`, { node: node.id });
    ids.add(node.id);
  }
  for (const node of nodes) {
    if (node.retries !== undefined && node.retries > WORKFLOW_LIMITS.maxRetries)
      throw badNode(node.id, `retries must be at most ${WORKFLOW_LIMITS.maxRetries}`);
    if (node.timeout_s !== undefined && node.timeout_s > WORKFLOW_LIMITS.maxTimeoutS)
      throw badNode(node.id, `timeout_s must be at most ${WORKFLOW_LIMITS.maxTimeoutS}`);
    if (node.type === "map") {
      const op = node.params.operation;
      if (typeof op !== "string" || !steps.has(op))
        throw serviceError(
          "UNKNOWN_NODE_TYPE",
          `Node ${JSON.stringify(node.id)}: map needs params.operation, one of the operations (GET /api/workflow/node-types); got ${JSON.stringify(op)}`,
          { node: node.id, type: op ?? null },
        );
      const inner = node.params.params;
      if (inner !== undefined && (typeof inner !== "object" || inner === null || Array.isArray(inner)))
        throw badNode(node.id, "map params.params must be an object (the operation's fixed request fields)");
      const key = node.params.item_key;
      if (key !== undefined && (typeof key !== "string" || key.length === 0 || key.length > 64))
        throw badNode(node.id, "map params.item_key must be a field name");
      if (!("items" in node.inputs)) throw badNode(node.id, 'map needs inputs.items, e.g. "supercells.structures"');
    } else if (node.type === "select") {
      const by = node.params.by;
      if (typeof by !== "string" || by.length === 0 || by.length > 200)
        throw badNode(node.id, 'select needs params.by, the field to compare (e.g. "energy")');
      const order = node.params.order;
      if (order !== undefined && order !== "min" && order !== "max") throw badNode(node.id, "select params.order is min or max");
      if (!("items" in node.inputs)) throw badNode(node.id, 'select needs inputs.items, e.g. "relax.results"');
    } else if (!steps.has(node.type))
      throw serviceError(
        "UNKNOWN_NODE_TYPE",
        `Node ${JSON.stringify(node.id)} has the unknown type ${JSON.stringify(node.type)}: an operation id (GET /api/workflow/node-types), map or select`,
        { node: node.id, type: node.type },
      );
    for (const [key, ref] of Object.entries(node.inputs)) {
      const parsed = parseReference(ref);
      if (!parsed || (parsed.source !== "$inputs" && !ids.has(parsed.source)))
        throw serviceError(
          "DANGLING_REFERENCE",
          `Node ${JSON.stringify(node.id)} input ${JSON.stringify(key)} refers to ${JSON.stringify(ref)}, which is not "node.field" of a node of this workflow or "$inputs.name"`,
          { node: node.id, input: key, reference: ref },
        );
    }
  }
  // Kahn's algorithm: what cannot be ordered is on a cycle.
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const indegree = new Map(nodes.map((n) => [n.id, dependencies(n).length]));
  const dependents = new Map<string, string[]>();
  for (const n of nodes) for (const d of dependencies(n)) dependents.set(d, [...(dependents.get(d) ?? []), n.id]);
  const ready = nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  const order: WorkflowNode[] = [];
  while (ready.length) {
    const id = ready.shift() as string;
    order.push(byId.get(id) as WorkflowNode);
    for (const m of dependents.get(id) ?? []) {
      const left = (indegree.get(m) as number) - 1;
      indegree.set(m, left);
      if (left === 0) ready.push(m);
    }
  }
  if (order.length < nodes.length) {
    const cycle = nodes.filter((n) => (indegree.get(n.id) ?? 0) > 0).map((n) => n.id);
    throw serviceError("CYCLE_DETECTED", `The nodes ${cycle.join(", ")} depend on each other in a cycle`, { nodes: cycle });
  }
  return order;
};
