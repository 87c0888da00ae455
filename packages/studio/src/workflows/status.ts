/**
 * What `GET /api/workflow/{id}` says, as the panel shows it: one row per node with its state,
 * attempts, timings, error and output; whether the run is over; how long to wait before asking
 * again (back off while nothing changes, come back quickly when something did); and where in
 * a node's output the structures are (to open one in the viewer).
 */

export type NodeState = "pending" | "queued" | "running" | "succeeded" | "failed" | "cancelled" | "skipped";
export type RunState = "draft" | "queued" | "running" | "succeeded" | "failed" | "cancelled";

export interface NodeView {
  id: string;
  type: string | null;
  state: NodeState;
  attempts: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** Finished − started, or now − started while it runs; null before it started. */
  durationMs: number | null;
  error: { code: string | null; message: string } | null;
  output: unknown;
  /** Fan-out progress of a map node: items done of items in all, when the service reports it. */
  progress: { done: number; total: number } | null;
}

export interface WorkflowView {
  id: string;
  name: string | null;
  state: RunState;
  runId: string | null;
  nodes: NodeView[];
  terminal: boolean;
  error: { code: string | null; message: string } | null;
}

const NODE_STATES: Record<string, NodeState> = {
  pending: "pending",
  waiting: "pending",
  "waiting-children": "pending",
  blocked: "pending",
  draft: "pending",
  created: "pending",
  queued: "queued",
  delayed: "queued",
  prioritized: "queued",
  retrying: "queued",
  active: "running",
  running: "running",
  started: "running",
  completed: "succeeded",
  succeeded: "succeeded",
  success: "succeeded",
  done: "succeeded",
  failed: "failed",
  error: "failed",
  cancelled: "cancelled",
  canceled: "cancelled",
  skipped: "skipped",
};

const RUN_STATES: Record<string, RunState> = {
  draft: "draft",
  created: "draft",
  queued: "queued",
  pending: "queued",
  waiting: "queued",
  running: "running",
  active: "running",
  cancelling: "running",
  completed: "succeeded",
  succeeded: "succeeded",
  success: "succeeded",
  done: "succeeded",
  failed: "failed",
  error: "failed",
  cancelled: "cancelled",
  canceled: "cancelled",
};

/** BullMQ's and the orchestrator's words for a node's state, in the panel's seven. */
export const nodeState = (s: unknown): NodeState => NODE_STATES[String(s ?? "").toLowerCase()] ?? "pending";
export const runState = (s: unknown): RunState => RUN_STATES[String(s ?? "").toLowerCase()] ?? "queued";
export const isTerminal = (s: RunState): boolean => s === "succeeded" || s === "failed" || s === "cancelled";

const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** A time as epoch milliseconds: numbers (ms or s) and ISO strings. */
export const toMillis = (v: unknown): number | null => {
  if (typeof v === "number" && Number.isFinite(v)) return v < 1e11 ? v * 1000 : v;
  if (typeof v === "string" && v) {
    const t = Date.parse(v);
    return Number.isNaN(t) ? null : t;
  }
  return null;
};

const errorOf = (v: unknown): NodeView["error"] => {
  if (v === null || v === undefined || v === "") return null;
  if (typeof v === "string") return { code: null, message: v };
  const r = asRecord(v);
  const message = String(r.error ?? r.message ?? JSON.stringify(v));
  return { code: typeof r.code === "string" ? r.code : null, message };
};

const first = (r: Record<string, unknown>, ...keys: string[]): unknown => {
  for (const k of keys) if (r[k] !== undefined) return r[k];
  return undefined;
};

const readNode = (id: string, raw: unknown, now: number): NodeView => {
  const r = asRecord(raw);
  const timings = asRecord(r.timings);
  const startedAt = toMillis(first(r, "started_at", "startedAt") ?? first(timings, "started_at", "started", "start"));
  const finishedAt = toMillis(
    first(r, "finished_at", "finishedAt", "ended_at") ?? first(timings, "finished_at", "finished", "ended_at", "end"),
  );
  const reported = first(r, "duration_ms", "elapsed_ms") ?? first(timings, "duration_ms", "elapsed_ms");
  const state = nodeState(first(r, "state", "status"));
  let durationMs: number | null = typeof reported === "number" ? reported : null;
  if (durationMs === null && startedAt !== null) durationMs = (finishedAt ?? (state === "running" ? now : startedAt)) - startedAt;
  // A map node's items: how many of them are done.
  const items = Array.isArray(r.items) ? r.items.map((i) => nodeState(asRecord(i).state)) : null;
  const progress = asRecord(r.progress);
  const done = items ? items.filter((s) => s === "succeeded").length : first(progress, "done", "completed");
  const total = items ? items.length : first(progress, "total", "n");
  return {
    id,
    type: typeof r.type === "string" ? r.type : null,
    state,
    attempts: Number(first(r, "attempts", "attempts_made", "attemptsMade") ?? 0) || 0,
    startedAt,
    finishedAt,
    durationMs,
    error: errorOf(r.error),
    output: first(r, "output", "result", "outputs") ?? null,
    progress: typeof done === "number" && typeof total === "number" ? { done, total } : null,
  };
};

/** The status response, read leniently: nodes as a list (`[{id, …}]`) or a map (`{id: {…}}`). */
export const readStatus = (json: unknown, now = Date.now()): WorkflowView => {
  const r = asRecord(json);
  const run = asRecord(r.run);
  // The workflow's own `nodes` are its definition; the run's are their states. Before the first
  // run, every defined node is shown as pending.
  const rawNodes = r.run ? run.nodes : r.nodes;
  const nodes: NodeView[] = Array.isArray(rawNodes)
    ? rawNodes.map((n) => readNode(String(asRecord(n).id ?? asRecord(n).node ?? ""), n, now))
    : Object.entries(asRecord(rawNodes)).map(([id, n]) => readNode(id, n, now));
  const state = runState(first(r, "status", "state") ?? first(run, "status", "state"));
  const runId = first(run, "run_id", "id") ?? first(r, "run_id");
  return {
    id: String(r.id ?? r.workflow_id ?? ""),
    name: typeof r.name === "string" ? r.name : null,
    state,
    runId: typeof runId === "string" ? runId : null,
    nodes,
    terminal: isTerminal(state),
    error: errorOf(run.error ?? r.error),
  };
};

/** Polling delays: 250 ms after a change, then ×1.6 while nothing changes, at most 5 s. */
export const POLL_MIN_MS = 250;
export const POLL_MAX_MS = 5000;
export const nextPollDelay = (previousMs: number | null, changed: boolean): number =>
  changed || previousMs === null ? POLL_MIN_MS : Math.min(POLL_MAX_MS, Math.round(previousMs * 1.6));

/** What changed between two polls, in the terms the panel draws (state, attempts, error per node). */
export const fingerprint = (v: WorkflowView): string =>
  JSON.stringify([v.state, v.nodes.map((n) => [n.id, n.state, n.attempts, n.error?.message ?? null, n.progress?.done ?? null])]);

export interface FoundStructure {
  /** Where in the output: "structure", "results[2].structure", … */
  path: string;
  dict: Record<string, unknown>;
  /** A nearby energy (same object), to label the choice. */
  energy: number | null;
}

const looksLikeStructure = (v: Record<string, unknown>): boolean =>
  Array.isArray(v.sites) && (v["@class"] === "Structure" || v["@class"] === "Molecule" || "lattice" in v || v.sites.length > 0);

/** Every structure (a pymatgen dictionary: `sites`, with or without `lattice`) in a node's output, depth-first. */
export const findStructures = (output: unknown, limit = 500): FoundStructure[] => {
  const found: FoundStructure[] = [];
  const walk = (v: unknown, path: string, parent: Record<string, unknown> | null, depth: number): void => {
    if (found.length >= limit || depth > 8 || v === null || typeof v !== "object") return;
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        walk(x, `${path}[${i}]`, null, depth + 1);
      });
      return;
    }
    const r = v as Record<string, unknown>;
    if (looksLikeStructure(r)) {
      const e = parent?.energy;
      found.push({ path: path || "output", dict: r, energy: typeof e === "number" ? e : null });
      return;
    }
    for (const [k, x] of Object.entries(r)) walk(x, path ? `${path}.${k}` : k, r, depth + 1);
  };
  walk(output, "", null, 0);
  return found;
};

export const formatDuration = (ms: number | null): string => {
  if (ms === null) return "";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
};
