/**
 * The workflow graph as the panel edits it and as `POST /api/workflow/create` takes it:
 * `{name, nodes: [{id, type, params, inputs: {param: "node.output"}}]}`. Pure functions (no DOM)
 * so the checks the studio makes before sending are unit-tested: the same three conditions the
 * service refuses with a coded 400 (`UNKNOWN_NODE_TYPE`, `DANGLING_REFERENCE`, `CYCLE_DETECTED`),
 * found here first so each is shown beside its node without a round trip.
 */

export interface WorkflowNode {
  id: string;
  type: string;
  params: Record<string, unknown>;
  /** Parameter name → "upstreamNode.outputField" (the upstream output fills that parameter). */
  inputs: Record<string, string>;
  /** Retries after a failure (with the service's exponential backoff); absent: the run's. */
  retries?: number;
  /** Deadline of one attempt, seconds; absent: the service's. */
  timeout_s?: number;
}

/** The service's caps on a node's retries and deadline (its WORKFLOW_LIMITS). */
export const NODE_LIMITS = { maxRetries: 10, maxTimeoutS: 24 * 3600 } as const;

export interface WorkflowDraft {
  name: string;
  nodes: WorkflowNode[];
}

export type GraphIssueCode =
  | "UNKNOWN_NODE_TYPE"
  | "DANGLING_REFERENCE"
  | "CYCLE_DETECTED"
  | "DUPLICATE_NODE_ID"
  | "INVALID_NODE_PARAMS"
  // what the service's request schema refuses (a bad node id, no nodes) as 422
  | "MALFORMED_REQUEST";

export interface GraphIssue {
  /** The node the issue belongs to; null for the workflow as a whole. */
  node: string | null;
  code: GraphIssueCode | string;
  message: string;
  /** The input (parameter name) whose reference is wrong, when there is one. */
  input?: string;
}

export interface Reference {
  node: string;
  /** The output field, possibly dotted ("result.structure"). */
  output: string;
}

/** Node ids as the service takes them: a letter or `_`, then letters, digits, `_` or `-`, 64 at most. */
export const NODE_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** References to values given to the run (`POST /api/workflow/run` `inputs`), not to a node. */
export const RUN_INPUT_PREFIX = "$inputs.";

/** "relax.structure" → {node: "relax", output: "structure"}; the service reads no bare node name, nor empty parts. */
export const parseReference = (ref: string): Reference | null => {
  if (typeof ref !== "string") return null;
  const parts = ref.split(".");
  if (parts.length < 2 || parts.some((p) => p === "")) return null;
  return { node: parts[0] as string, output: parts.slice(1).join(".") };
};

export const isRunInput = (ref: string): boolean =>
  typeof ref === "string" && ref.startsWith(RUN_INPUT_PREFIX) && ref.length > RUN_INPUT_PREFIX.length;

export const formatReference = (r: Reference): string => `${r.node}.${r.output}`;

/** Upstream node ids of each node (its inputs' references), unknown ones included. */
const dependencies = (node: WorkflowNode): string[] => {
  const out: string[] = [];
  for (const ref of Object.values(node.inputs)) {
    if (isRunInput(ref)) continue;
    const r = parseReference(ref);
    if (r && !out.includes(r.node)) out.push(r.node);
  }
  return out;
};

/**
 * The nodes in an order where every node comes after its inputs (Kahn's algorithm), and the
 * nodes left on a cycle (empty when there is none). References to missing nodes are ignored here.
 */
export const topologicalOrder = (nodes: readonly WorkflowNode[]): { order: string[]; cyclic: string[] } => {
  const ids = new Set(nodes.map((n) => n.id));
  const indegree = new Map<string, number>();
  const downstream = new Map<string, string[]>();
  for (const n of nodes) {
    indegree.set(n.id, 0);
    downstream.set(n.id, []);
  }
  for (const n of nodes)
    for (const d of dependencies(n)) {
      if (!ids.has(d)) continue;
      indegree.set(n.id, (indegree.get(n.id) ?? 0) + 1);
      downstream.get(d)?.push(n.id);
    }
  const ready = nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  const order: string[] = [];
  while (ready.length) {
    const id = ready.shift() as string;
    order.push(id);
    for (const next of downstream.get(id) ?? []) {
      const left = (indegree.get(next) ?? 0) - 1;
      indegree.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  const done = new Set(order);
  return { order, cyclic: nodes.map((n) => n.id).filter((id) => !done.has(id)) };
};

/**
 * Every reason the service would refuse this workflow that the studio can see by itself.
 * `knownTypes`: the node types the service offers (its operations plus `map` and `select`).
 */
export const validateWorkflow = (draft: WorkflowDraft, knownTypes: ReadonlySet<string>): GraphIssue[] => {
  const issues: GraphIssue[] = [];
  if (!draft.nodes.length) issues.push({ node: null, code: "MALFORMED_REQUEST", message: "Add at least one node" });
  const seen = new Set<string>();
  for (const n of draft.nodes) {
    if (!NODE_ID_PATTERN.test(n.id))
      issues.push({
        node: n.id,
        code: "MALFORMED_REQUEST",
        message: `Node id ${JSON.stringify(n.id)}: a letter or _, then letters, digits, _ or - (64 at most)`,
      });
    if (n.retries !== undefined && !(Number.isInteger(n.retries) && n.retries >= 0 && n.retries <= NODE_LIMITS.maxRetries))
      issues.push({
        node: n.id,
        code: "INVALID_NODE_PARAMS",
        message: `retries: a whole number from 0 to ${NODE_LIMITS.maxRetries}`,
      });
    if (n.timeout_s !== undefined && !(n.timeout_s > 0 && n.timeout_s <= NODE_LIMITS.maxTimeoutS))
      issues.push({
        node: n.id,
        code: "INVALID_NODE_PARAMS",
        message: `timeout: more than 0 and at most ${NODE_LIMITS.maxTimeoutS} s`,
      });
    if (seen.has(n.id)) issues.push({ node: n.id, code: "DUPLICATE_NODE_ID", message: `Two nodes are called ${n.id}` });
    seen.add(n.id);
  }
  for (const n of draft.nodes) {
    if (!knownTypes.has(n.type))
      issues.push({ node: n.id, code: "UNKNOWN_NODE_TYPE", message: `Unknown node type ${JSON.stringify(n.type)}` });
    for (const [input, ref] of Object.entries(n.inputs)) {
      if (isRunInput(ref)) continue;
      const r = parseReference(ref);
      if (!r)
        issues.push({
          node: n.id,
          input,
          code: "DANGLING_REFERENCE",
          message: `${input}: ${JSON.stringify(ref)} is not node.output`,
        });
      else if (!seen.has(r.node))
        issues.push({ node: n.id, input, code: "DANGLING_REFERENCE", message: `${input}: no node called ${r.node}` });
      else if (r.node === n.id)
        issues.push({ node: n.id, input, code: "CYCLE_DETECTED", message: `${input}: a node cannot read its own output` });
    }
  }
  const { cyclic } = topologicalOrder(draft.nodes);
  for (const id of cyclic)
    if (!issues.some((i) => i.node === id && i.code === "CYCLE_DETECTED"))
      issues.push({ node: id, code: "CYCLE_DETECTED", message: `On a cycle: ${cyclic.join(" → ")}` });
  return issues;
};

/** Nodes downstream of `id` (those reading its output, directly or not): never offered as its inputs. */
export const descendants = (nodes: readonly WorkflowNode[], id: string): Set<string> => {
  const out = new Set<string>();
  const stack = [id];
  while (stack.length) {
    const cur = stack.pop() as string;
    for (const n of nodes)
      if (!out.has(n.id) && dependencies(n).includes(cur)) {
        out.add(n.id);
        stack.push(n.id);
      }
  }
  return out;
};

/**
 * The references a node's input may pick: every output of every node that is neither the node
 * itself nor downstream of it (picking one of those would make a cycle).
 */
export const inputChoices = (
  nodes: readonly WorkflowNode[],
  id: string,
  outputsOf: (type: string) => readonly string[],
): string[] => {
  const below = descendants(nodes, id);
  const out: string[] = [];
  for (const n of nodes) {
    if (n.id === id || below.has(n.id)) continue;
    for (const o of outputsOf(n.type)) out.push(`${n.id}.${o}`);
  }
  return out;
};

/** A fresh node id for a type: the type's name, numbered when taken ("slab", "slab2", …). */
export const freshId = (nodes: readonly WorkflowNode[], type: string): string => {
  const base = type.replace(/[^A-Za-z0-9_-]/g, "_").replace(/^[^A-Za-z]+/, "") || "node";
  const taken = new Set(nodes.map((n) => n.id));
  if (!taken.has(base)) return base.slice(0, 64);
  for (let i = 2; ; i++) if (!taken.has(`${base}${i}`)) return `${base}${i}`.slice(0, 64);
};

/** Rename a node and every reference to it. */
export const renameNode = (draft: WorkflowDraft, from: string, to: string): WorkflowDraft => ({
  ...draft,
  nodes: draft.nodes.map((n) => ({
    ...n,
    id: n.id === from ? to : n.id,
    inputs: Object.fromEntries(
      Object.entries(n.inputs).map(([k, ref]) => {
        const r = parseReference(ref);
        return [k, r && r.node === from ? formatReference({ node: to, output: r.output }) : ref];
      }),
    ),
  })),
});

/** The body of `POST /api/workflow/create`: only the fields the service takes. */
export const createRequest = (draft: WorkflowDraft): WorkflowDraft => ({
  name: draft.name,
  nodes: draft.nodes.map((n) => ({
    id: n.id,
    type: n.type,
    params: n.params,
    inputs: n.inputs,
    ...(n.retries !== undefined ? { retries: n.retries } : {}),
    ...(n.timeout_s !== undefined ? { timeout_s: n.timeout_s } : {}),
  })),
});

interface ServiceErrorBody {
  error?: string;
  code?: string;
  details?: unknown;
}

const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/**
 * The nodes a coded error from the service is about, so it is shown beside them: `details.node`
 * (or `node_id`), `details.nodes`, or `details.cycle`; a workflow-wide issue otherwise.
 */
export const issuesFromServiceError = (body: ServiceErrorBody): GraphIssue[] => {
  const code = body.code ?? "ERROR";
  const message = body.error ?? code;
  const d = asRecord(body.details);
  const input = typeof d.input === "string" ? d.input : typeof d.key === "string" ? d.key : undefined;
  const named = [
    d.node,
    d.node_id,
    ...(Array.isArray(d.nodes) ? d.nodes : []),
    ...(Array.isArray(d.cycle) ? d.cycle : []),
  ].filter((x): x is string => typeof x === "string");
  const nodes = [...new Set(named)];
  if (!nodes.length) return [{ node: null, code, message }];
  return nodes.map((node) => ({ node, code, message, ...(input ? { input } : {}) }));
};
