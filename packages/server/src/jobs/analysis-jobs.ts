/**
 * Analysis requests as BullMQ jobs (jobs/README.md, "Analysis requests as jobs"). Every route that
 * goes through `runAnalysis` (bands, DOS, COHP, the `/api/build/*` routes run in Python, adsorption
 * sites, heterostructures, MD clustering) gets a job id, a state, attempts, timings and a failure
 * reason in Redis when the service has a job queue, and `GET /api/jobs/{id}` reads them.
 *
 * Only this service can run the job: the files are in its private upload store, held by the
 * request. So each service start has its own queue `analysis-<service id>` (the id random per
 * start: a successor must not take a dead service's job, whose files are no longer held) and one
 * BullMQ worker on it in this process. The worker's processor runs the request's own closure
 * (today's pool call: deadline, cancellation when the client leaves, the pool's FIFO) and hands
 * the result to the waiting request in-process (a Map from job id to waiter): a bands or COHP
 * answer can be several MB, and it never goes through Redis. The job's `returnvalue` is a small
 * summary (`{method, fields}`); the answer itself is the HTTP response, not stored.
 *
 * Analysis never depends on Redis: without a queue, or with Redis down when the request arrives,
 * the request runs on the pool directly; if Redis goes away while the job waits to be taken, the
 * request runs it directly then (the job, should Redis come back with it, fails as "answered
 * directly"). A running job's result reaches its request in-process whatever Redis does.
 */
import { randomBytes } from "node:crypto";
import type { Job, Worker } from "bullmq";
import type { ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";
import { JsonText } from "../registry/json-text.ts";
import { jobFailure } from "../workflow/engine.ts";
import type { JobQueues } from "./queue.ts";

/** Response header naming the job of an analysis or calculator request (absent when it ran without a queue). */
export const JOB_HEADER = "x-atomstudio-job";

/** Finished analysis jobs stay readable this long, and at most this many per service (their summaries are small). */
const KEEP = { age: 3600, count: 1000 };

/**
 * Jobs this service's BullMQ worker takes at once. The analysis pool keeps its own FIFO in front
 * of its processes (as without Redis), so the BullMQ worker hands jobs on at once rather than
 * making them wait twice.
 */
const CONCURRENCY = 256;

/** After its run, how long a request waits for the job to be recorded finished before it answers anyway. */
const RECORD_WAIT_MS = 1000;

/** How long the reason a request gave up on a job that was not yet taken is kept for its processor. */
const GONE_KEEP_MS = 10 * 60_000;

/** Job ids `a-<service id>-<hex>`: the queue is read off the id (GET /api/jobs/{id}). */
const JOB_ID = /^a-([0-9a-f]{12})-[0-9a-f]{24}$/;

/** The queue of analysis job `id`, or undefined when `id` is not an analysis job's. */
export const analysisQueueOf = (id: string): string | undefined => {
  const m = JOB_ID.exec(id);
  return m ? `analysis-${m[1]}` : undefined;
};

/** What the job records in Redis: names and hashes, never paths or content. */
interface AnalysisJobData {
  method: string;
  files: Record<string, { sha256: string; filename?: string }>;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** The request waiting on a job, as the processor sees it. */
interface Waiter {
  /** The run, once: undefined when the request already gave up or ran it directly. */
  take(): (() => Promise<unknown>) | undefined;
  /** Why the request gave up before the job was taken (the job fails with it). */
  gone?: Error;
  /** The run finished (called by the processor before the job is recorded). */
  ran(outcome: Outcome): void;
  /** The job is recorded finished in Redis (the worker's completed/failed event). */
  recorded(): void;
}

declare module "../context.ts" {
  interface Services {
    analysisJobs: AnalysisJobs;
  }
}

export class AnalysisJobs {
  readonly serviceId = randomBytes(6).toString("hex");
  readonly queueName = `analysis-${this.serviceId}`;
  readonly #waiters = new Map<string, Waiter>();
  readonly worker: Worker<AnalysisJobData>;

  constructor(readonly queues: JobQueues) {
    this.worker = queues.work<AnalysisJobData>(this.queueName, (job) => this.#process(job), {
      concurrency: CONCURRENCY,
      // a job whose lock lapsed is not run twice: its request already has (or lost) its answer
      maxStalledCount: 0,
    });
    const recorded = (job: Job | undefined) => {
      const w = job?.id ? this.#waiters.get(job.id) : undefined;
      w?.recorded();
    };
    this.worker.on("completed", recorded);
    this.worker.on("failed", recorded);
  }

  async #process(job: Job<AnalysisJobData>): Promise<{ method: string; fields: string[] }> {
    const w = this.#waiters.get(job.id as string);
    const run = w?.take();
    if (!w || !run) {
      this.#waiters.delete(job.id as string);
      throw jobFailure(w?.gone ?? serviceError("CANCELLED", "No request waits on this job any more (the service restarted?)"));
    }
    try {
      const value = await run();
      w.ran({ ok: true, value });
      // a small summary: the answer itself went to the request in-process
      const fields =
        value instanceof JsonText ? value.topLevelKeys() : value && typeof value === "object" ? Object.keys(value) : [];
      return { method: job.data.method, fields };
    } catch (error) {
      w.ran({ ok: false, error });
      throw jobFailure(error);
    }
  }

  /** Run `run` as a job of this service's analysis queue and answer with its result. */
  async request<T>(
    ctx: ServiceContext,
    method: string,
    files: Record<string, { sha256: string; filename?: string }>,
    run: () => Promise<T>,
  ): Promise<T> {
    const id = `a-${this.serviceId}-${randomBytes(12).toString("hex")}`;
    const startedAt = Date.now();
    const signal = ctx.request?.signal;
    // where the job stands for this request (written by the closures below)
    const job: { state: "waiting" | "taken" | "direct" | "gone" } = { state: "waiting" };
    let onTaken: () => void = () => {};
    let onRan: (o: Outcome) => void = () => {};
    let onRecorded: () => void = () => {};
    const taken = new Promise<void>((r) => {
      onTaken = r;
    });
    const ranPromise = new Promise<Outcome>((r) => {
      onRan = r;
    });
    const recordedPromise = new Promise<void>((r) => {
      onRecorded = r;
    });
    const waiter: Waiter = {
      take: () => {
        if (job.state !== "waiting") return undefined;
        job.state = "taken";
        onTaken();
        return run;
      },
      ran: onRan,
      recorded: onRecorded,
    };
    this.#waiters.set(id, waiter);

    // Before the job is taken, the request may stop waiting: its client left, its deadline
    // passed (measured from the request's start, as without Redis), or Redis went away (then it
    // runs directly). Once taken, the run itself handles the client leaving and the deadline.
    let settleEarly: (o: Outcome | "direct") => void = () => {};
    const early = new Promise<Outcome | "direct">((r) => {
      settleEarly = r;
    });
    const giveUp = (error: Error) => {
      if (job.state !== "waiting") return;
      job.state = "gone";
      waiter.gone = error;
      settleEarly({ ok: false, error });
    };
    const runDirectly = () => {
      if (job.state !== "waiting") return;
      job.state = "direct";
      waiter.gone = serviceError("CANCELLED", "Redis was unreachable before the job was taken: the request ran directly");
      settleEarly("direct");
    };
    const onAbort = () => giveUp(serviceError("CANCELLED", "The client went away before the analysis started"));
    signal?.addEventListener("abort", onAbort, { once: true });
    const deadline = setTimeout(
      () => giveUp(serviceError("DEADLINE_EXCEEDED", `The analysis took longer than ${ctx.config.analysisTimeoutMs / 1000} s`)),
      Math.max(0, ctx.config.analysisTimeoutMs - (Date.now() - startedAt)),
    );
    const outage = this.queues.watchOutage();
    outage.lost.catch(runDirectly);
    ctx.request?.setHeader?.(JOB_HEADER, id);
    const data: AnalysisJobData = { method, files };
    this.queues
      .queue(this.queueName)
      .add(method, data, { jobId: id, attempts: 1, removeOnComplete: KEEP, removeOnFail: KEEP })
      .catch(runDirectly);
    try {
      const first = await Promise.race([early, taken.then(() => "taken" as const)]);
      clearTimeout(deadline);
      signal?.removeEventListener("abort", onAbort);
      if (first === "direct") return await run();
      if (first !== "taken") return unwrap<T>(first);
      const outcome = await ranPromise;
      // answer once Redis has the job finished (so GET /api/jobs/{id} right after shows it), but
      // not later than RECORD_WAIT_MS, nor after Redis went away: the answer is here already
      let recordTimer: NodeJS.Timeout | undefined;
      await Promise.race([
        recordedPromise,
        outage.lost.catch(() => {}),
        new Promise((r) => {
          recordTimer = setTimeout(r, RECORD_WAIT_MS);
        }),
      ]);
      clearTimeout(recordTimer);
      return unwrap<T>(outcome);
    } finally {
      clearTimeout(deadline);
      signal?.removeEventListener("abort", onAbort);
      outage.stop();
      // a job not taken yet keeps its waiter (with the reason) for its processor to fail it with
      if (job.state === "taken") this.#waiters.delete(id);
      else setTimeout(() => this.#waiters.delete(id), GONE_KEEP_MS).unref();
    }
  }
}

const unwrap = <T>(o: Outcome): T => {
  if (o.ok) return o.value as T;
  throw o.error;
};

/**
 * Run one analysis request (`run`: the pool call of `runAnalysis`) as a job when the service has
 * a job queue whose Redis answers now, else directly.
 */
export const runAsAnalysisJob = <T>(
  ctx: ServiceContext,
  method: string,
  files: Record<string, { sha256: string; filename?: string }>,
  run: () => Promise<T>,
): Promise<T> => {
  const queues = ctx.services.queue;
  if (!queues?.ready) return run();
  let jobs = ctx.services.analysisJobs;
  if (!jobs || jobs.queues !== queues) {
    jobs = new AnalysisJobs(queues);
    ctx.services.analysisJobs = jobs;
  }
  const names = Object.fromEntries(
    Object.entries(files).map(([name, f]) => [name, { sha256: f.sha256, ...(f.filename ? { filename: f.filename } : {}) }]),
  );
  return jobs.request(ctx, method, names, run);
};
