/**
 * The workflow orchestrator: a small DAG scheduler of our own on top of BullMQ (BullMQ flows are
 * trees, a workflow is a DAG). README "Workflows" describes it for users; in short:
 *
 * - A definition is stored at create; a run is one JSON document in Redis (`atomstudio:wf:run:<id>`)
 *   holding every node's state, attempts, timings, error and output.
 * - Every operation a node runs is a BullMQ job with the deterministic id `run:node:item` (item 0
 *   for a plain node, the index for each item of a `map`), so enqueueing it again is harmless.
 * - `advance(run)` is idempotent: it reads the jobs' states from BullMQ, records what finished,
 *   and enqueues what became ready, up to `max_parallel` jobs at once. It runs under a short
 *   lock in Redis, after every job that finishes in this process, and from a sweep of the live
 *   runs every few hundred ms, so any service pointed at the Redis moves any run on, including
 *   runs started before a restart, and runs whose jobs were done by Python workers.
 * - A node's output is recorded once: from the completed job's return value, the first time the
 *   orchestrator sees it complete (a job id completes at most once in BullMQ).
 * - `select` nodes are computed by the orchestrator itself (a comparison, no job).
 */
import { createHash, randomBytes } from "node:crypto";
import { type AtomStudioError, isAtomStudioError } from "atomstudio-core";
import { type Job, UnrecoverableError } from "bullmq";
import type { Redis } from "ioredis";
import type { z } from "zod";
import type { ServiceContext } from "../context.ts";
import { serviceError, statusOf } from "../errors/codes.ts";
import { CALCULATOR_OPERATIONS, type JobQueues } from "../jobs/queue.ts";
import { checkEnvelope, type OptimizeEnvelope, workerParams } from "../optimize/service.ts";
import type { Operation } from "../registry/operation.ts";
import { parseInput } from "../registry/validate.ts";
import { dependencies, parseReference, queueOf, stepOperations, validateWorkflow, walk } from "./definition.ts";
import {
  NODE_STATES,
  type RUN_STATES,
  WORKFLOW_LIMITS,
  type WorkflowCreateRequest,
  type WorkflowNode,
  type WorkflowRunRequest,
  type WorkflowStatusResponse,
} from "./schemas.ts";

const KEY = "atomstudio:wf:";
const defKey = (id: string) => `${KEY}def:${id}`;
const runKey = (id: string) => `${KEY}run:${id}`;
const runsKey = (wf: string) => `${KEY}runs:${wf}`;
const activeKey = (wf: string) => `${KEY}active:${wf}`;
const idemKey = (wf: string, key: string) => `${KEY}idem:${wf}:${createHash("sha256").update(key).digest("hex")}`;
const lockKey = (run: string) => `${KEY}lock:${run}`;
/** Hash `node:item` → how many times its output was recorded, written with the run: the audit that outputs are recorded once. */
export const recordedKey = (run: string) => `${KEY}recorded:${run}`;
const LIVE = `${KEY}live`;
/** Channel on which a cancel names the job ids to stop; every process running jobs listens. */
export const CANCEL_CHANNEL = "atomstudio:jobs:cancel";

/** How long finished jobs and runs stay in Redis. */
const KEEP_S = 7 * 24 * 3600;
/**
 * The run's lock lives this long unless its holder renews it (every third of it, while it works):
 * a process killed while holding it (a SIGKILL, a lost machine) holds the run up for this long at
 * most, while a slow advance keeps its lock as long as it needs.
 */
const LOCK_MS = 3000;
const RENEW_SCRIPT =
  'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end';
const RELEASE_SCRIPT = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end';
const BACKOFF_MS = 1000;
const DEFAULT_PARALLEL = 4;

type NodeState = (typeof NODE_STATES)[number];
type RunState = (typeof RUN_STATES)[number];
interface ErrorInfo {
  code: string;
  message: string;
}
interface ItemRecord {
  state: NodeState;
  attempts: number;
  started_at: string | null;
  finished_at: string | null;
  error: ErrorInfo | null;
  output: unknown;
  queue?: string;
}
interface NodeRecord extends ItemRecord {
  /** map: one record per item, once the items are known. */
  items?: ItemRecord[];
}
interface RunRecord {
  run_id: string;
  workflow_id: string;
  status: RunState;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  max_parallel: number;
  retries: number;
  inputs: Record<string, unknown>;
  error: ErrorInfo | null;
  nodes: Record<string, NodeRecord>;
  /** Incremented by every write (compare-and-set in #save). */
  version?: number;
}
interface Definition {
  id: string;
  name: string;
  created_at: string;
  nodes: WorkflowNode[];
}

/** What a node job carries (the Python worker reads the same fields: worker/README.md). */
export interface NodeJobData {
  run_id: string;
  node_id: string;
  item: number;
  operation: string;
  input: Record<string, unknown>;
  /** Deadline of one attempt, ms (absent: the service's job deadline). */
  timeout_ms?: number;
  /**
   * An optimization whose caller relays every step (the optimization WebSocket): each step is
   * reported as progress `{event: "step", data}` with its structure, in order, and a wait for a
   * busy pool as `{event: "queued", data: position}`; otherwise progress is `{step, energy, fmax}`
   * at most every 500 ms.
   */
  progress_steps?: boolean;
}

/** KEYS: run, recorded audit. ARGV: document, expected version, expiry s, recorded fields... */
const SAVE_SCRIPT = `
local cur = redis.call("GET", KEYS[1])
if cur then
  local v = cjson.decode(cur)["version"] or 0
  if tonumber(v) ~= tonumber(ARGV[2]) then return 0 end
end
redis.call("SET", KEYS[1], ARGV[1], "EX", ARGV[3])
for i = 4, #ARGV do redis.call("HINCRBY", KEYS[2], ARGV[i], 1) end
if #ARGV >= 4 then redis.call("EXPIRE", KEYS[2], ARGV[3]) end
return 1`;

const now = () => new Date().toISOString();
const iso = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : null);
const newId = (prefix: string) => `${prefix}_${randomBytes(9).toString("base64url").replace(/[-_]/g, "x")}`;
const TERMINAL = new Set<NodeState>(["completed", "failed", "cancelled", "skipped"]);
const jobId = (run: string, node: string, item: number) => `${run}:${node}:${item}`;

const emptyRecord = (): NodeRecord => ({
  state: "pending",
  attempts: 0,
  started_at: null,
  finished_at: null,
  error: null,
  output: null,
});

/**
 * Where a failure's details and HTTP status follow its `CODE: message` in a BullMQ failed reason
 * (BullMQ keeps only a string), so a caller waiting for the job gets back the ErrorResponse the
 * direct call would have given. The Python worker writes the same (worker/README.md).
 */
export const FAILURE_DETAILS_MARK = "\n@error ";

/** A job failure as `CODE: message` (+ details); 4xx conditions are not retried. */
export const jobFailure = (e: unknown): Error => {
  const code = isAtomStudioError(e) ? e.code : "INTERNAL_ERROR";
  const status = isAtomStudioError(e) ? statusOf(e.code, (e as AtomStudioError).status) : 500;
  const details = isAtomStudioError(e) ? e.details : undefined;
  const message = `${code}: ${e instanceof Error ? e.message : String(e)}${FAILURE_DETAILS_MARK}${JSON.stringify({ status, ...(details === undefined ? {} : { details }) })}`;
  return status >= 400 && status < 500 && code !== "QUEUE_FULL" ? new UnrecoverableError(message) : new Error(message);
};

/** A failed reason back to {code, message} and, when the failure carried them, its details and status. */
export const parseFailureDetail = (reason: string | undefined): ErrorInfo & { details?: unknown; status?: number } => {
  let text = reason ?? "";
  let extra: { status?: number; details?: unknown } = {};
  const at = text.lastIndexOf(FAILURE_DETAILS_MARK);
  if (at >= 0) {
    try {
      extra = JSON.parse(text.slice(at + FAILURE_DETAILS_MARK.length)) as typeof extra;
      text = text.slice(0, at);
    } catch {
      // not ours: keep the whole text as the message
    }
  }
  const m = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/.exec(text);
  const info = m ? { code: m[1] as string, message: m[2] as string } : { code: "JOB_FAILED", message: text || "the job failed" };
  return { ...info, ...extra };
};

/** `CODE: message` back to {code, message}. */
export const parseFailure = (reason: string | undefined): ErrorInfo => {
  const { code, message } = parseFailureDetail(reason);
  return { code, message };
};

export const withDeadline = <T>(work: Promise<T>, ms: number | undefined, onExpire?: () => void): Promise<T> => {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onExpire?.();
      reject(
        serviceError("DEADLINE_EXCEEDED", `The node did not finish within its deadline of ${ms / 1000} s`, {
          deadline_s: ms / 1000,
        }),
      );
    }, ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
};

export class Workflows {
  readonly steps: Map<string, Operation>;
  readonly #redis: Redis;
  #sweep: NodeJS.Timeout | undefined;
  #closed = false;
  /** Runs this process was asked to advance while another held the lock. */
  readonly #again = new Set<string>();

  constructor(
    readonly queues: JobQueues,
    readonly ctx: ServiceContext,
    operations: readonly Operation[],
  ) {
    this.steps = stepOperations(operations);
    this.#redis = queues.redis;
  }

  /** Move every live run on, now and every `intervalMs`. */
  startSweeping(intervalMs = 250): void {
    const tick = async () => {
      if (this.#closed) return;
      try {
        if (this.queues.ready) for (const run of await this.#redis.smembers(LIVE)) await this.advance(run);
      } catch (e) {
        this.ctx.log.warn({ err: (e as Error).message }, "workflow sweep failed");
      }
      if (!this.#closed) this.#sweep = setTimeout(tick, intervalMs);
    };
    this.#sweep = setTimeout(tick, 0);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#sweep);
  }

  async create(body: z.output<typeof WorkflowCreateRequest>): Promise<{ id: string; status: "draft" }> {
    validateWorkflow(body, this.steps);
    this.queues.require();
    const def: Definition = { id: newId("wf"), name: body.name, created_at: now(), nodes: body.nodes };
    await this.#redis.set(defKey(def.id), JSON.stringify(def), "EX", KEEP_S * 4);
    return { id: def.id, status: "draft" };
  }

  async #definition(id: string): Promise<Definition> {
    const raw = /^wf_[A-Za-z0-9]{1,40}$/.test(id) ? await this.#redis.get(defKey(id)) : null;
    if (!raw) throw serviceError("WORKFLOW_NOT_FOUND", `No workflow with id ${JSON.stringify(id)}`, { id });
    return JSON.parse(raw) as Definition;
  }

  async #run(id: string): Promise<RunRecord | undefined> {
    const raw = /^run_[A-Za-z0-9]{1,40}$/.test(id) ? await this.#redis.get(runKey(id)) : null;
    return raw ? (JSON.parse(raw) as RunRecord) : undefined;
  }

  /**
   * Write the run if nobody wrote it since it was read (its version is unchanged), with the audit
   * of the outputs recorded by this write, atomically. The lock normally keeps writers apart;
   * this keeps "recorded once" true even if a lock expired under a slow writer. False: the write
   * was dropped (the next advance starts from the newer document).
   */
  async #save(run: RunRecord, recorded: readonly string[] = []): Promise<boolean> {
    const expected = run.version ?? 0;
    const doc = JSON.stringify({ ...run, version: expected + 1 });
    const ok = await this.#redis.eval(
      SAVE_SCRIPT,
      2,
      runKey(run.run_id),
      recordedKey(run.run_id),
      doc,
      expected,
      KEEP_S,
      ...recorded,
    );
    if (ok === 1) run.version = expected + 1;
    return ok === 1;
  }

  async run(
    req: z.output<typeof WorkflowRunRequest>,
    idempotencyKey: string | undefined,
  ): Promise<{ run_id: string; workflow_id: string; status: RunState }> {
    this.queues.require();
    const def = await this.#definition(req.workflow_id);
    const key = idempotencyKey ?? req.idempotency_key;
    if (key !== undefined && (key.length === 0 || key.length > 200))
      throw serviceError("INVALID_IDEMPOTENCY_KEY", "The Idempotency-Key must be 1 to 200 characters", { length: key.length });
    const maxParallel = Math.min(req.max_parallel ?? DEFAULT_PARALLEL, WORKFLOW_LIMITS.maxParallel);
    if ((req.retries ?? 0) > WORKFLOW_LIMITS.maxRetries)
      throw serviceError("INVALID_NODE_PARAMS", `retries must be at most ${WORKFLOW_LIMITS.maxRetries}`, {
        fields: ["retries"],
      });
    if (req.inputs && Buffer.byteLength(JSON.stringify(req.inputs)) > WORKFLOW_LIMITS.maxDefinitionBytes)
      throw serviceError("WORKFLOW_TOO_LARGE", "The run's inputs are too large", { limit: WORKFLOW_LIMITS.maxDefinitionBytes });
    if (key !== undefined) {
      const earlier = await this.#redis.get(idemKey(def.id, key));
      const run = earlier ? await this.#run(earlier) : undefined;
      if (run) return { run_id: run.run_id, workflow_id: def.id, status: run.status };
    }
    const runId = newId("run");
    // One run at a time: the active key is taken atomically; a stale one (its run finished) is replaced.
    if (!(await this.#redis.set(activeKey(def.id), runId, "NX"))) {
      const holder = await this.#redis.get(activeKey(def.id));
      const held = holder ? await this.#run(holder) : undefined;
      if (held && (held.status === "queued" || held.status === "running"))
        throw serviceError("WORKFLOW_ALREADY_RUNNING", `Workflow ${def.id} is already running (run ${held.run_id})`, {
          run_id: held.run_id,
          workflow_id: def.id,
        });
      await this.#redis.set(activeKey(def.id), runId);
    }
    if (key !== undefined) await this.#redis.set(idemKey(def.id, key), runId, "EX", KEEP_S);
    const run: RunRecord = {
      run_id: runId,
      workflow_id: def.id,
      status: "queued",
      created_at: now(),
      started_at: null,
      finished_at: null,
      max_parallel: maxParallel,
      retries: req.retries ?? 0,
      inputs: req.inputs ?? {},
      error: null,
      nodes: Object.fromEntries(def.nodes.map((n) => [n.id, emptyRecord()])),
    };
    await this.#save(run);
    await this.#redis.multi().lpush(runsKey(def.id), runId).ltrim(runsKey(def.id), 0, 99).sadd(LIVE, runId).exec();
    void this.advance(runId).catch((e) =>
      this.ctx.log.warn({ err: (e as Error).message, run: runId }, "workflow advance failed"),
    );
    return { run_id: runId, workflow_id: def.id, status: "queued" };
  }

  async status(id: string): Promise<z.input<typeof WorkflowStatusResponse>> {
    this.queues.require();
    let run: RunRecord | undefined;
    let def: Definition;
    if (id.startsWith("run_")) {
      run = await this.#run(id);
      if (!run) throw serviceError("WORKFLOW_NOT_FOUND", `No run with id ${JSON.stringify(id)}`, { id });
      def = await this.#definition(run.workflow_id);
    } else {
      def = await this.#definition(id);
      const latest = await this.#redis.lindex(runsKey(def.id), 0);
      run = latest ? await this.#run(latest) : undefined;
    }
    const runs = await this.#redis.lrange(runsKey(def.id), 0, 19);
    return {
      id: def.id,
      name: def.name,
      status: run?.status ?? "draft",
      created_at: def.created_at,
      nodes: def.nodes,
      runs,
      run: run
        ? {
            run_id: run.run_id,
            status: run.status,
            created_at: run.created_at,
            started_at: run.started_at,
            finished_at: run.finished_at,
            max_parallel: run.max_parallel,
            retries: run.retries,
            error: run.error,
            nodes: def.nodes.map((n) => {
              const r = run.nodes[n.id] ?? emptyRecord();
              return {
                id: n.id,
                type: n.type,
                state: r.state,
                attempts: r.attempts,
                started_at: r.started_at,
                finished_at: r.finished_at,
                error: r.error,
                output: r.output ?? null,
                ...(r.items
                  ? {
                      items: r.items.map((it, index) => ({
                        index,
                        state: it.state,
                        attempts: it.attempts,
                        started_at: it.started_at,
                        finished_at: it.finished_at,
                        error: it.error,
                      })),
                    }
                  : {}),
              };
            }),
          }
        : null,
    };
  }

  async cancel(id: string): Promise<{ run_id: string; status: RunState }> {
    this.queues.require();
    let runId = id;
    if (id.startsWith("wf_")) {
      const def = await this.#definition(id);
      runId = (await this.#redis.get(activeKey(def.id))) ?? (await this.#redis.lindex(runsKey(def.id), 0)) ?? "";
    }
    const found = await this.#run(runId);
    if (!found) throw serviceError("WORKFLOW_NOT_FOUND", `No run of ${JSON.stringify(id)} to cancel`, { id });
    return this.#locked(runId, async () => {
      const run = (await this.#run(runId)) as RunRecord;
      if (run.status !== "queued" && run.status !== "running") return { run_id: runId, status: run.status };
      const running: string[] = [];
      for (const [nodeId, rec] of Object.entries(run.nodes)) {
        const records = rec.items ?? [rec];
        for (const [i, r] of records.entries()) {
          if (TERMINAL.has(r.state)) continue;
          if ((r.state === "queued" || r.state === "running") && r.queue) {
            const job = await this.queues.getJob(r.queue, jobId(runId, nodeId, i));
            const state = job ? await job.getState() : "unknown";
            if (state === "active") running.push(jobId(runId, nodeId, i));
            else await job?.remove().catch(() => {});
          }
          r.state = "cancelled";
          r.finished_at = now();
        }
        if (!TERMINAL.has(rec.state)) {
          rec.state = "cancelled";
          rec.finished_at = now();
        }
      }
      if (running.length) await this.#redis.publish(CANCEL_CHANNEL, JSON.stringify(running));
      this.#finish(run, "cancelled", { code: "CANCELLED", message: "The run was cancelled" });
      if (!(await this.#save(run)))
        throw serviceError("QUEUE_UNAVAILABLE", "The run changed while it was being cancelled; try again", { run_id: runId });
      await this.#release(run);
      return { run_id: runId, status: run.status };
    });
  }

  /** Run `fn` holding the run's lock, waiting for it (a dead holder's lock expires within LOCK_MS). */
  async #locked<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const token = randomBytes(8).toString("hex");
    for (let i = 0; i < 200; i++) {
      if (await this.#redis.set(lockKey(runId), token, "PX", LOCK_MS, "NX")) return this.#holding(runId, token, fn);
      await new Promise((r) => setTimeout(r, 25));
    }
    throw serviceError("QUEUE_UNAVAILABLE", "The run is locked by another process for too long", { run_id: runId });
  }

  /** Run `fn` with the lock taken under `token`: renewed while it runs, released (if still ours) after. */
  async #holding<T>(runId: string, token: string, fn: () => Promise<T>): Promise<T> {
    const renew = setInterval(() => {
      this.#redis.eval(RENEW_SCRIPT, 1, lockKey(runId), token, LOCK_MS).catch(() => {});
    }, LOCK_MS / 3);
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      await this.#redis.eval(RELEASE_SCRIPT, 1, lockKey(runId), token);
    }
  }

  #finish(run: RunRecord, status: RunState, error: ErrorInfo | null): void {
    run.status = status;
    run.finished_at = now();
    run.error = error;
  }

  async #release(run: RunRecord): Promise<void> {
    await this.#redis.srem(LIVE, run.run_id);
    await this.#redis.eval(
      'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end',
      1,
      activeKey(run.workflow_id),
      run.run_id,
    );
  }

  /** Called when a job of this process finished: move its run on at once. */
  nudge(runId: string): void {
    void this.advance(runId).catch((e) =>
      this.ctx.log.warn({ err: (e as Error).message, run: runId }, "workflow advance failed"),
    );
  }

  /** Record finished jobs and enqueue ready ones (see the module comment). */
  async advance(runId: string): Promise<void> {
    if (this.#closed || !this.queues.ready) return;
    const token = randomBytes(8).toString("hex");
    if (!(await this.#redis.set(lockKey(runId), token, "PX", LOCK_MS, "NX"))) {
      // another process is at it; look again shortly so a change it did not see is not missed
      if (!this.#again.has(runId)) {
        this.#again.add(runId);
        setTimeout(() => {
          this.#again.delete(runId);
          this.nudge(runId);
        }, 50);
      }
      return;
    }
    await this.#holding(runId, token, () => this.#advanceLocked(runId));
  }

  async #advanceLocked(runId: string): Promise<void> {
    const run = await this.#run(runId);
    if (!run) {
      await this.#redis.srem(LIVE, runId);
      return;
    }
    if (run.status !== "queued" && run.status !== "running") {
      await this.#release(run);
      return;
    }
    const def = await this.#definition(run.workflow_id);
    const before = JSON.stringify(run);
    let inFlight = 0;
    const recorded: string[] = [];

    // 1. what the queue says about every job in flight
    for (const node of def.nodes) {
      const rec = run.nodes[node.id] as NodeRecord;
      const records = rec.items ?? [rec];
      for (const [i, r] of records.entries()) {
        if (r.state !== "queued" && r.state !== "running") continue;
        const job = r.queue ? await this.queues.getJob(r.queue, jobId(runId, node.id, i)) : undefined;
        if (!job) {
          // enqueue lost (e.g. Redis restarted without the job): enqueue again, same id
          r.state = "pending";
          continue;
        }
        // only queued or running records get here, so a completion now is its first
        if (this.#observe(r, job, await job.getState())) recorded.push(`${node.id}:${i}`);
        if (r.state === "queued" || r.state === "running") inFlight++;
      }
      if (rec.items) this.#rollUp(rec);
    }

    // 2. enqueue (or compute) what is ready, in definition order, up to max_parallel jobs
    for (const node of def.nodes) {
      const rec = run.nodes[node.id] as NodeRecord;
      if (TERMINAL.has(rec.state) && !rec.items) continue;
      if (rec.state === "failed" || rec.state === "cancelled" || rec.state === "completed") continue;
      const deps = dependencies(node).map((d) => run.nodes[d] as NodeRecord);
      if (deps.some((d) => d.state === "failed" || d.state === "skipped" || d.state === "cancelled")) {
        rec.state = "skipped";
        rec.finished_at = now();
        continue;
      }
      if (!deps.every((d) => d.state === "completed")) continue;
      if (rec.state === "pending" && !rec.items) {
        let input: Record<string, unknown>;
        try {
          input = this.#resolve(node, run);
        } catch (e) {
          this.#fail(rec, e);
          continue;
        }
        if (node.type === "select") {
          try {
            rec.output = select(node, input.items);
            rec.state = "completed";
            rec.started_at = rec.finished_at = now();
            rec.attempts = 1;
          } catch (e) {
            this.#fail(rec, e);
          }
          continue;
        }
        if (node.type === "map") {
          const items = input.items;
          if (!Array.isArray(items)) {
            this.#fail(rec, serviceError("INVALID_NODE_INPUT", `map ${node.id}: inputs.items is not a list`, { node: node.id }));
            continue;
          }
          if (items.length > WORKFLOW_LIMITS.maxFanOut) {
            this.#fail(
              rec,
              serviceError(
                "WORKFLOW_TOO_LARGE",
                `map ${node.id} would fan out over ${items.length} items, more than ${WORKFLOW_LIMITS.maxFanOut}`,
                {
                  node: node.id,
                  n_items: items.length,
                  limit: WORKFLOW_LIMITS.maxFanOut,
                },
              ),
            );
            continue;
          }
          rec.items = items.map(() => ({ ...emptyRecord() }));
          rec.started_at = now();
          if (items.length === 0) {
            rec.state = "completed";
            rec.output = { results: [], structures: [] };
            rec.finished_at = now();
            continue;
          }
          rec.state = "queued";
        }
      }
      // plain node or map items: enqueue pending jobs while there is room
      const records = rec.items ?? [rec];
      for (const [i, r] of records.entries()) {
        if (r.state !== "pending") continue;
        if (inFlight >= run.max_parallel) break;
        let data: NodeJobData;
        try {
          data = this.#jobData(node, run, i);
        } catch (e) {
          this.#fail(r, e);
          continue;
        }
        r.queue = queueOf(data.operation, data.input);
        const attempts = (node.retries ?? run.retries) + 1;
        await this.queues.queue(r.queue).add(data.operation, data, {
          jobId: jobId(runId, node.id, i),
          attempts,
          backoff: { type: "exponential", delay: BACKOFF_MS },
          removeOnComplete: { age: KEEP_S },
          removeOnFail: { age: KEEP_S },
        });
        r.state = "queued";
        inFlight++;
        if (run.status === "queued") {
          run.status = "running";
          run.started_at = now();
        }
      }
      if (rec.items) this.#rollUp(rec);
    }

    // 3. the run's own state
    const states = def.nodes.map((n) => (run.nodes[n.id] as NodeRecord).state);
    if (states.every((s) => TERMINAL.has(s))) {
      const failed = def.nodes.find((n) => (run.nodes[n.id] as NodeRecord).state === "failed");
      if (failed) {
        const err = (run.nodes[failed.id] as NodeRecord).error;
        this.#finish(run, "failed", {
          code: err?.code ?? "JOB_FAILED",
          message: `Node ${failed.id} failed: ${err?.message ?? ""}`,
        });
      } else this.#finish(run, "completed", null);
    } else if (run.status === "queued" && states.some((s) => s !== "pending")) {
      run.status = "running";
      run.started_at ??= now();
    }
    if (JSON.stringify(run) !== before && !(await this.#save(run, recorded))) return;
    if (run.status !== "queued" && run.status !== "running") await this.#release(run);
  }

  /** Fold a BullMQ job's state into a node (or item) record. */
  #observe(r: ItemRecord, job: Job, state: string): boolean {
    r.attempts = Math.max(r.attempts, job.attemptsStarted ?? job.attemptsMade ?? 0);
    r.started_at ??= iso(job.processedOn);
    if (state === "completed") {
      r.state = "completed";
      r.output = job.returnvalue ?? null;
      r.finished_at = iso(job.finishedOn) ?? now();
      r.error = null;
    } else if (state === "failed") {
      r.state = "failed";
      r.error = parseFailure(job.failedReason);
      r.finished_at = iso(job.finishedOn) ?? now();
    } else if (state === "active") r.state = "running";
    else r.state = "queued";
    // an earlier attempt's failure while the job waits for its retry
    if ((state === "delayed" || state === "waiting") && job.failedReason) r.error = parseFailure(job.failedReason);
    return state === "completed";
  }

  /** A map's state from its items. */
  #rollUp(rec: NodeRecord): void {
    const items = rec.items as ItemRecord[];
    rec.attempts = items.reduce((a, it) => a + it.attempts, 0);
    const failed = items.find((it) => it.state === "failed");
    if (failed) {
      rec.state = "failed";
      rec.error = failed.error;
      rec.finished_at ??= now();
      // the remaining items are not worth running once the map has failed
      for (const it of items) if (it.state === "pending") it.state = "skipped";
      return;
    }
    if (items.every((it) => it.state === "completed")) {
      rec.state = "completed";
      rec.finished_at ??= now();
      const results = items.map((it) => it.output);
      rec.output = { results, structures: results.map((r) => walk(r, ["structure"]) ?? null) };
      for (const it of items) it.output = null;
      return;
    }
    rec.state = items.some((it) => it.state === "running")
      ? "running"
      : items.some((it) => it.state !== "pending")
        ? "queued"
        : "pending";
  }

  #fail(r: ItemRecord, e: unknown): void {
    r.state = "failed";
    r.error = isAtomStudioError(e) ? { code: e.code, message: e.message } : { code: "INTERNAL_ERROR", message: String(e) };
    r.finished_at = now();
    r.started_at ??= r.finished_at;
  }

  /** The node's inputs from the outputs of the nodes it refers to and the run's inputs. */
  #resolve(node: WorkflowNode, run: RunRecord): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [key, ref] of Object.entries(node.inputs)) {
      const r = parseReference(ref) as { source: string; path: string[] };
      const value = r.source === "$inputs" ? walk(run.inputs, r.path) : walk((run.nodes[r.source] as NodeRecord).output, r.path);
      if (value === undefined)
        throw serviceError("INVALID_NODE_INPUT", `Node ${node.id}: ${ref} has no value`, {
          node: node.id,
          input: key,
          reference: ref,
        });
      out[key] = value;
    }
    return out;
  }

  /**
   * A calculator job's input checked and normalized here (defaults filled, envelope ranges,
   * structure and frozen indices), so a Python worker on another machine gets what the HTTP
   * route would have sent its worker, and a bad input fails the node before it is queued.
   */
  #normalize(data: NodeJobData): NodeJobData {
    if (!(data.operation in CALCULATOR_OPERATIONS)) return data;
    const op = this.steps.get(data.operation) as Operation;
    const input = parseInput(op, data.input, this.ctx.config) as Record<string, unknown>;
    if (CALCULATOR_OPERATIONS[data.operation] === "optimize") {
      checkEnvelope(input as OptimizeEnvelope, this.ctx.config);
      return { ...data, input: workerParams(input as OptimizeEnvelope) };
    }
    return { ...data, input: workerParams({ ...(input as { structure: Record<string, unknown> }), frozen_atoms: [] }) };
  }

  #jobData(node: WorkflowNode, run: RunRecord, item: number): NodeJobData {
    return this.#normalize(this.#rawJobData(node, run, item));
  }

  #rawJobData(node: WorkflowNode, run: RunRecord, item: number): NodeJobData {
    const resolved = this.#resolve(node, run);
    const timeout = node.timeout_s ? Math.round(node.timeout_s * 1000) : undefined;
    if (node.type === "map") {
      const { items, ...rest } = resolved;
      const key = (node.params.item_key as string | undefined) ?? "structure";
      const fixed = (node.params.params as Record<string, unknown> | undefined) ?? {};
      return {
        run_id: run.run_id,
        node_id: node.id,
        item,
        operation: node.params.operation as string,
        input: { ...fixed, ...rest, [key]: (items as unknown[])[item] },
        ...(timeout ? { timeout_ms: timeout } : {}),
      };
    }
    return {
      run_id: run.run_id,
      node_id: node.id,
      item,
      operation: node.type,
      input: { ...node.params, ...resolved },
      ...(timeout ? { timeout_ms: timeout } : {}),
    };
  }

  /** The processor of the `ops` queue: a registry operation, validated like its route. */
  processOps = async (job: Job<NodeJobData>, signal?: AbortSignal): Promise<unknown> => {
    try {
      const op = this.steps.get(job.data.operation);
      if (!op) throw serviceError("UNKNOWN_NODE_TYPE", `Unknown operation ${JSON.stringify(job.data.operation)}`);
      const input = parseInput(op, job.data.input, this.ctx.config);
      const abort = new AbortController();
      signal?.addEventListener("abort", () => abort.abort(), { once: true });
      const work = Promise.resolve(op.handler(input, { ...this.ctx, request: { headers: {}, query: {}, signal: abort.signal } }));
      return await withDeadline(work, job.data.timeout_ms ?? this.ctx.config.jobDeadlineMs, () => abort.abort());
    } catch (e) {
      throw jobFailure(e);
    }
  };
}

/** `select`: the item whose `by` field is smallest (or largest). */
export const select = (node: WorkflowNode, items: unknown): Record<string, unknown> => {
  if (!Array.isArray(items) || items.length === 0)
    throw serviceError("INVALID_NODE_INPUT", `select ${node.id}: inputs.items is not a non-empty list`, { node: node.id });
  const path = String(node.params.by).split(".");
  const max = node.params.order === "max";
  let best = -1;
  let bestValue = 0;
  for (const [i, item] of items.entries()) {
    const v = walk(item, path);
    if (typeof v !== "number" || !Number.isFinite(v))
      throw serviceError("INVALID_NODE_INPUT", `select ${node.id}: item ${i} has no number at ${node.params.by}`, {
        node: node.id,
        index: i,
      });
    if (best < 0 || (max ? v > bestValue : v < bestValue)) {
      best = i;
      bestValue = v;
    }
  }
  const result = items[best];
  return { index: best, value: bestValue, result, structure: walk(result, ["structure"]) ?? null };
};

export { NODE_STATES };
