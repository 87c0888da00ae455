/**
 * Puts the job queue and the workflow orchestrator on the service, when the service has a Redis
 * (`ATOMSTUDIO_REDIS_URL`, or the embedded one `atomstudio serve` started). This process then:
 * takes `ops` jobs (registry operations), takes `calc-<calculator>` jobs for the calculators its
 * own worker pool has (unless ATOMSTUDIO_QUEUE_CALCULATORS=0 leaves them to Python workers), and
 * sweeps the live runs. Without Redis nothing is registered and the workflow routes answer 503.
 */
import type { Job } from "bullmq";
import type { FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import type { z } from "zod";
import { provide, type ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";
import { redisConnection } from "../jobs/embedded-redis.ts";
import { CALCULATOR_OPERATIONS, calcQueue, JobQueues, OPS_QUEUE } from "../jobs/queue.ts";
import { operations as allOperations } from "../operations/index.ts";
import type { JobHandle } from "../optimize/pool.ts";
import { calculatorPool, checkEnvelope, type EnergyRequest, type OptimizeEnvelope, workerParams } from "../optimize/service.ts";
import type { Operation } from "../registry/operation.ts";
import { parseInput } from "../registry/validate.ts";
import { CANCEL_CHANNEL, jobFailure, type NodeJobData, Workflows } from "./engine.ts";

declare module "../context.ts" {
  interface Services {
    workflows: Workflows;
  }
}

/** Steps of an optimization reported as job progress at most this often. */
const PROGRESS_MS = 500;

/** Jobs running in this process, by job id, so a cancel published by any service stops them. */
const running = new Map<string, () => void>();

export const workflowPlugin =
  (operations: readonly Operation[] = allOperations) =>
  async (app: FastifyInstance, ctx: ServiceContext): Promise<void> => {
    const url = ctx.config.queueUrl;
    if (!url) return;
    const queues = new JobQueues(url, ctx.log, ctx.config.queueLockMs);
    // closed in this order: the orchestrator stops sweeping before the queue's connections go
    const workflows = provide(ctx, "workflows", new Workflows(queues, ctx, operations));
    provide(ctx, "queue", queues);
    const cancels = new Redis({ ...redisConnection(url), maxRetriesPerRequest: null, lazyConnect: true });
    cancels.on("error", () => {});
    cancels.on("message", (_channel: string, message: string) => {
      try {
        for (const id of JSON.parse(message) as string[]) running.get(id)?.();
      } catch {
        // not ours
      }
    });
    app.addHook("onClose", async () => {
      cancels.disconnect();
    });

    app.addHook("onReady", async () => {
      await queues.waitReady(3000);
      void cancels.connect().then(
        () => cancels.subscribe(CANCEL_CHANNEL),
        () => {},
      );
      const done = (job: Job<NodeJobData> | undefined) => job?.data?.run_id && workflows.nudge(job.data.run_id);
      const ops = queues.work<NodeJobData>(OPS_QUEUE, (job) => track(job, (signal) => workflows.processOps(job, signal)), {
        concurrency: ctx.config.computeThreads * 2,
      });
      ops.on("completed", done);
      ops.on("failed", done);
      workflows.startSweeping();
      if (ctx.config.queueCalculators) void startCalculatorWorkers(queues, ctx, workflows);
    });
  };

/** Run `work` as a job that a published cancel can stop. */
const track = async <T>(job: Job, work: (signal: AbortSignal) => Promise<T>): Promise<T> => {
  const abort = new AbortController();
  running.set(job.id as string, () => abort.abort());
  try {
    return await work(abort.signal);
  } finally {
    running.delete(job.id as string);
  }
};

/** Take calculator jobs for the calculators this service's worker pool has. */
const startCalculatorWorkers = async (queues: JobQueues, ctx: ServiceContext, workflows: Workflows): Promise<void> => {
  let listing: { calculators: Array<{ id: string; available: boolean; runs_in?: string }> };
  try {
    listing = await calculatorPool(ctx).calculators();
  } catch (e) {
    ctx.log.warn(
      { err: (e as Error).message },
      "job queue: no local calculator worker; calculator jobs wait for atomstudio-worker --queue",
    );
    return;
  }
  for (const calc of listing.calculators) {
    if (!calc.available || calc.runs_in === "browser") continue;
    const w = queues.work<NodeJobData>(calcQueue(calc.id), (job) => track(job, (signal) => runCalculatorJob(job, ctx, signal)), {
      concurrency: ctx.config.workers,
    });
    const done = (job: Job<NodeJobData> | undefined) => job?.data?.run_id && workflows.nudge(job.data.run_id);
    w.on("completed", done);
    w.on("failed", done);
  }
};

/** A calculator job on this service's worker pool: the same checks and worker calls as the HTTP routes. */
export const runCalculatorJob = async (job: Job<NodeJobData>, ctx: ServiceContext, signal: AbortSignal): Promise<unknown> => {
  let handle: JobHandle<unknown> | undefined;
  let flushed: Promise<unknown> = Promise.resolve();
  try {
    const method = CALCULATOR_OPERATIONS[job.data.operation];
    const op = allOperations.find((o) => o.id === job.data.operation);
    if (!method || !op) throw new Error(`not a calculator operation: ${job.data.operation}`);
    const input = parseInput(op, job.data.input, ctx.config) as Record<string, unknown>;
    const pool = calculatorPool(ctx);
    if (method === "optimize") {
      const env = input as z.output<typeof OptimizeEnvelope>;
      checkEnvelope(env, ctx.config);
      let last = 0;
      const report = (progress: object) => {
        // one after the other, so a relaying caller sees the steps in order, all before the result
        flushed = flushed.then(() => job.updateProgress(progress)).catch(() => {});
      };
      handle = pool.run(
        "optimize",
        workerParams(env),
        job.data.progress_steps
          ? {
              onEvent: (event, data) => {
                if (event === "step") report({ event: "step", data });
              },
              onQueued: (position) => report({ event: "queued", data: position }),
            }
          : {
              onEvent: (event, data) => {
                if (event !== "step" || Date.now() - last < PROGRESS_MS) return;
                last = Date.now();
                const { step, energy, fmax } = data as Record<string, unknown>;
                report({ step, energy, fmax });
              },
            },
      );
    } else {
      const req = input as z.output<typeof EnergyRequest>;
      handle = pool.run("energy", workerParams({ ...req, frozen_atoms: [] }));
    }
    const h = handle;
    signal.addEventListener("abort", () => h.cancel(), { once: true });
    const deadline = job.data.timeout_ms;
    let expired = false;
    let timer: NodeJS.Timeout | undefined;
    if (deadline)
      timer = setTimeout(() => {
        expired = true;
        h.cancel();
      }, deadline);
    try {
      const result = await h.result;
      await flushed;
      return result;
    } catch (e) {
      await flushed;
      if (expired)
        throw serviceError("DEADLINE_EXCEEDED", `The node did not finish within its deadline of ${(deadline ?? 0) / 1000} s`, {
          deadline_s: (deadline ?? 0) / 1000,
        });
      throw e;
    } finally {
      clearTimeout(timer);
    }
  } catch (e) {
    throw jobFailure(e);
  }
};
