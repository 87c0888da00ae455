/**
 * HTTP optimization and energy requests as BullMQ jobs (README "Workflows", "Calculator requests
 * as jobs"). When the service has a queue and some process (this service's own pool, or an
 * `atomstudio-worker --queue` anywhere) takes jobs of the calculator's queue, a request becomes
 * a job of the same shape a workflow's calculator node is (`NodeJobData`, taken by the same
 * processors), and the handler waits for its result. Otherwise the request runs on the local
 * worker pool directly, as it always did: without Redis everything still works.
 *
 * What a caller sees does not change: the checks run before the job is queued, a failure comes
 * back as the same ErrorResponse (code, message, details, status carried in the failed reason),
 * 429 QUEUE_FULL when `ATOMSTUDIO_QUEUE_MAX` jobs already wait, the job deadline of the pool,
 * and a client that leaves takes its job with it (removed while waiting, stopped while running).
 * The answer adds `job_id`; `GET /api/jobs/{id}` reads the job.
 */
import { randomBytes } from "node:crypto";
import { AtomStudioError } from "atomstudio-core";
import type { Job, Queue, QueueEvents } from "bullmq";
import type { ServiceContext } from "../context.ts";
import { serviceError, statusOf } from "../errors/codes.ts";
import { retryAfterSeconds } from "../optimize/pool.ts";
import { CANCEL_CHANNEL, type NodeJobData, parseFailureDetail } from "../workflow/engine.ts";
import { analysisQueueOf, JOB_HEADER } from "./analysis-jobs.ts";
import { calcQueue, type JobQueues, QUEUE_PREFIX } from "./queue.ts";

/** The operation a calculator job names (the keys of CALCULATOR_OPERATIONS). */
export type CalculatorOperation = "optimize_structure" | "energy";

/** How long a request's finished job stays readable at GET /api/jobs/{id}. */
const KEEP_S = 24 * 3600;

/** Job ids `j-<calculator>-<hex>`: the queue is read off the id, and BullMQ forbids `:` in plain ids. */
const JOB_ID = /^j-([a-z0-9_]{1,32})-([0-9a-f]{24})$/;
const newJobId = (calculator: string) => `j-${calculator}-${randomBytes(12).toString("hex")}`;

/** The queue to send `calculator` work to, or undefined when it must run on the local pool. */
export const queueFor = async (ctx: ServiceContext, calculator: string): Promise<JobQueues | undefined> => {
  const queues = ctx.services.queue;
  if (!queues?.ready || !/^[a-z0-9_]{1,32}$/.test(calculator)) return undefined;
  try {
    // only a queue someone takes: an unknown or unavailable calculator gets its error from the local pool, at once
    if ((await queues.queue(calcQueue(calculator)).getWorkersCount()) > 0) return queues;
    return (await advertisedCalculators(queues)).has(calculator) ? queues : undefined;
  } catch {
    return undefined;
  }
};

/** How long the list of calculators Python workers advertise is reused. */
const ADVERTISED_TTL_MS = 2000;
let advertised: { at: number; queues: JobQueues; calculators: Promise<Set<string>> } | undefined;

/**
 * Calculators advertised by `atomstudio-worker --queue` processes (`atomstudio:worker:<id>`,
 * renewed by their heartbeat): their connections are not named the way BullMQ counts workers.
 */
const advertisedCalculators = (queues: JobQueues): Promise<Set<string>> => {
  if (advertised && advertised.queues === queues && Date.now() - advertised.at < ADVERTISED_TTL_MS) return advertised.calculators;
  const calculators = (async () => {
    const found = new Set<string>();
    let cursor = "0";
    do {
      const [next, keys] = await queues.redis.scan(cursor, "MATCH", `${QUEUE_PREFIX}:worker:*`, "COUNT", 1000);
      cursor = next;
      for (const info of keys.length ? await queues.redis.mget(...keys) : []) {
        try {
          for (const c of (JSON.parse(info ?? "{}") as { calculators?: string[] }).calculators ?? []) found.add(c);
        } catch {
          // not a worker's record
        }
      }
    } while (cursor !== "0");
    return found;
  })();
  advertised = { at: Date.now(), queues, calculators };
  calculators.catch(() => {
    advertised = undefined;
  });
  return calculators;
};

/** What a caller relaying an optimization's steps hears (the optimization WebSocket). */
export interface JobListener {
  onStep?: (data: unknown) => void;
  /** The job waits: its 1-based position among the waiting jobs of its queue. */
  onQueued?: (position: number) => void;
}

/** A queued calculator job: its result (with job_id) and a cancel that removes or stops it. */
export interface QueuedJob<T> {
  id: string;
  result: Promise<T & { job_id: string }>;
  cancel: () => void;
}

/** How long a new job may wait for a free worker before its caller is told it is queued. */
const QUEUED_AFTER_MS = 100;

/**
 * Queue a checked and normalized calculator input (what `workerParams` returns) as a job:
 * 429 QUEUE_FULL before adding when `ATOMSTUDIO_QUEUE_MAX` jobs already wait.
 */
export const startCalculatorJob = async <T extends object>(
  ctx: ServiceContext,
  queues: JobQueues,
  operation: CalculatorOperation,
  calculator: string,
  input: Record<string, unknown>,
  listener?: JobListener,
): Promise<QueuedJob<T>> => {
  const name = calcQueue(calculator);
  const queue = queues.queue(name);
  const id = newJobId(calculator);
  // from here on Redis may die: every wait below also ends, with a 503, when it does
  const outage = queues.watchOutage();
  const lost = outage.lost.catch((e: AtomStudioError) => {
    throw queueLost(e, id);
  });
  lost.catch(() => {});
  const orLost = <R>(p: Promise<R>): Promise<R> => Promise.race([p, lost]);
  let onProgress: ((args: { jobId: string; data: unknown }) => void) | undefined;
  let events: QueueEvents | undefined;
  const unlisten = () => {
    if (onProgress) events?.off("progress", onProgress);
  };
  let job: Job;
  try {
    const waiting = await orLost(queue.getJobCountByTypes("waiting", "prioritized", "delayed"));
    if (waiting >= ctx.config.queueMax)
      throw new AtomStudioError(
        "QUEUE_FULL",
        `${waiting} calculator jobs are already waiting for a worker; try again later`,
        { queue_max: ctx.config.queueMax, retry_after_s: retryAfterSeconds(ctx.config.jobDeadlineMs) },
        429,
      );
    events = await orLost(queues.events(name));
    const data: NodeJobData = {
      // not part of a workflow run: nothing to advance when it finishes
      run_id: "",
      node_id: "",
      item: 0,
      operation,
      input,
      // the pool's own deadline (the same error as a direct call) fires first on a service; this bounds a Python worker
      timeout_ms: ctx.config.jobDeadlineMs + ctx.config.cancelGraceMs + 5000,
      ...(listener ? { progress_steps: true } : {}),
    };
    if (listener) {
      onProgress = ({ jobId, data: progress }) => {
        if (jobId !== id || !progress || typeof progress !== "object") return;
        const p = progress as { event?: string; data?: unknown };
        if (p.event === "step") listener.onStep?.(p.data);
        else if (p.event === "queued" && typeof p.data === "number") listener.onQueued?.(p.data);
      };
      events.on("progress", onProgress);
    }
    job = await orLost(
      queue.add(operation, data, {
        jobId: id,
        attempts: 1,
        removeOnComplete: { age: KEEP_S },
        removeOnFail: { age: KEEP_S },
      }),
    );
  } catch (e) {
    outage.stop();
    unlisten();
    throw e;
  }
  let rejectCancel: (e: Error) => void = () => {};
  const cancelled = new Promise<never>((_, reject) => {
    rejectCancel = reject;
  });
  cancelled.catch(() => {});
  let queuedTimer: NodeJS.Timeout | undefined;
  if (listener?.onQueued)
    queuedTimer = setTimeout(() => {
      void waitingPosition(queue, job).then((position) => position && listener.onQueued?.(position));
    }, QUEUED_AFTER_MS);
  const finished = events;
  const result = (async () => {
    try {
      return { ...((await Promise.race([job.waitUntilFinished(finished), cancelled, lost])) as T), job_id: id };
    } catch (e) {
      if (e instanceof AtomStudioError) throw e;
      throw failureOf((e as Error).message);
    } finally {
      outage.stop();
      clearTimeout(queuedTimer);
      unlisten();
    }
  })();
  return {
    id,
    result,
    cancel: () => {
      void stopJob(queues, job).then((removed) => {
        // a job removed before it ran never finishes: its caller is answered here
        if (removed) rejectCancel(serviceError("CANCELLED", "The job was cancelled before it ran"));
      });
    },
  };
};

/**
 * Redis went away while a caller waited on job `id`: 503 QUEUE_UNAVAILABLE at once, naming the
 * job. Nothing can be removed or stopped without Redis; the job is left as it is, so when Redis
 * comes back with its data (the embedded Redis keeps an append-only file) a waiting job is taken
 * by a worker and a running one completes (or, past its lock, is run again by the stalled-job
 * check), and its result is readable at GET /api/jobs/{id} for a day.
 */
const queueLost = (e: AtomStudioError, id: string): AtomStudioError =>
  serviceError(
    "QUEUE_UNAVAILABLE",
    `${e.message}. Job ${id} was left in the queue: when Redis is back with its data the job runs (or finishes) there; read its result at GET /api/jobs/${id}`,
    { job_id: id },
  );

/** The job's 1-based position among its queue's waiting jobs, or 0 when it no longer waits. */
const waitingPosition = async (queue: Queue, job: Job): Promise<number> => {
  try {
    if ((await job.getState()) !== "waiting") return 0;
    const waiting = await queue.getWaiting(0, -1);
    return waiting.filter((j) => j.timestamp <= job.timestamp).length;
  } catch {
    return 0;
  }
};

/** Run a calculator input as a job and wait for its result; `signal` (the HTTP client leaving) removes or stops it. */
export const requestCalculatorJob = async <T extends object>(
  ctx: ServiceContext,
  queues: JobQueues,
  operation: CalculatorOperation,
  calculator: string,
  input: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<T & { job_id: string }> => {
  if (signal?.aborted) throw cancelledByClient();
  const job = await startCalculatorJob<T>(ctx, queues, operation, calculator, input);
  ctx.request?.setHeader?.(JOB_HEADER, job.id);
  const left = new Promise<never>((_, reject) => {
    const onAbort = () => {
      job.cancel();
      reject(cancelledByClient());
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
  left.catch(() => {});
  return Promise.race([job.result, left]);
};

const cancelledByClient = () => serviceError("CANCELLED", "The client went away; the job was cancelled");

/** A waiting job is removed (true); a running one is stopped by whichever process runs it. */
const stopJob = async (queues: JobQueues, job: Job): Promise<boolean> => {
  try {
    const state = await job.getState();
    if (state === "active") await queues.redis.publish(CANCEL_CHANNEL, JSON.stringify([job.id]));
    else if (state !== "completed" && state !== "failed") {
      await job.remove();
      return true;
    }
  } catch {
    // it finished (or Redis went away) meanwhile: nothing left to stop
  }
  return false;
};

/** The ErrorResponse the job failed with, exactly as the direct call would have thrown it. */
const failureOf = (reason: string): AtomStudioError => {
  const f = parseFailureDetail(reason);
  const details =
    f.details && typeof f.details === "object" && !Array.isArray(f.details) ? (f.details as Record<string, unknown>) : undefined;
  return new AtomStudioError(f.code, f.message, details, statusOf(f.code, f.status));
};

/**
 * GET /api/jobs/{id}: a calculator or analysis job's state, attempts, progress, timings and result
 * or error. An analysis job's result is a summary ({method, fields}): its answer was the HTTP response.
 */
export const jobStatus = async (ctx: ServiceContext, id: string) => {
  const queues = ctx.services.queue;
  if (!queues)
    throw serviceError("QUEUE_UNAVAILABLE", "This service has no job queue (no Redis): requests run directly, without job ids");
  queues.require();
  const m = JOB_ID.exec(id);
  // calculator jobs `j-<calculator>-<hex>`, analysis jobs `a-<service>-<hex>` (jobs/analysis-jobs.ts)
  const queue = m ? calcQueue(m[1] as string) : analysisQueueOf(id);
  let job = queue ? await queues.getJob(queue, id) : undefined;
  if (!job)
    throw serviceError(
      "JOB_NOT_FOUND",
      `No job ${JSON.stringify(id)} (finished calculator jobs are kept for a day, analysis jobs for an hour)`,
      { id },
    );
  const state = await job.getState();
  // the job was read before its state: one that finished in between is read again, so a
  // completed job never shows a result (or a failed one an error) it did not have yet
  if (queue && (state === "completed" || state === "failed")) job = (await queues.getJob(queue, id)) ?? job;
  const iso = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : null);
  const failure = state === "failed" ? parseFailureDetail(job.failedReason) : undefined;
  return {
    id,
    operation: job.name,
    queue: job.queueName,
    state,
    attempts: job.attemptsStarted ?? job.attemptsMade ?? 0,
    progress: job.progress ?? null,
    created_at: iso(job.timestamp) as string,
    started_at: iso(job.processedOn),
    finished_at: iso(job.finishedOn),
    result: state === "completed" ? (job.returnvalue ?? null) : null,
    error: failure
      ? { error: failure.message, code: failure.code, ...(failure.details === undefined ? {} : { details: failure.details }) }
      : null,
  };
};
