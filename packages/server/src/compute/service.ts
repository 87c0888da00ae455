/**
 * The compute pool: CPU-heavy core work (symmetry, slabs, standard cells, file parsing) runs in
 * worker threads (piscina) with a deadline, so the event loop keeps answering (`/api/health`
 * within milliseconds) while a heavy request runs. A task past its deadline is 504
 * DEADLINE_EXCEEDED and its thread is terminated and replaced: a runaway computation does not
 * keep burning a core. See README.md here.
 */
import { fileURLToPath } from "node:url";
import { AtomStudioError } from "atomstudio-core";
import { Piscina } from "piscina";
import type { ServiceConfig } from "../config.ts";
import { type Closable, provide, type ServiceContext } from "../context.ts";
import type { TaskArgs, TaskMessage, TaskName, TaskOutcome, TaskResult } from "./tasks.ts";

declare module "../context.ts" {
  interface Services {
    compute: ComputeService;
  }
}

export interface ComputeOptions {
  threads: number;
  /** Default deadline of a task, ms, from submission (queue wait included). */
  deadlineMs: number;
  /** Tasks that may wait for a thread. */
  maxQueue: number;
  /** Heap limit of each thread, MiB: a task that still exhausts it loses its thread, not the service. */
  memoryMb: number;
}

export interface RunOptions {
  /** Shorter (or longer) deadline for this call, ms. */
  deadlineMs?: number;
  /** The caller went away: the task is dropped (and its thread recycled if it was running). */
  signal?: AbortSignal | undefined;
}

/** What any operation run in the compute pool may also answer (for its `errors` table). */
export const COMPUTE_ERRORS = [
  { status: 504, code: "DEADLINE_EXCEEDED", when: "the computation ran past the deadline (ATOMSTUDIO_COMPUTE_DEADLINE_MS)" },
  { status: 429, code: "QUEUE_FULL", when: "too many computations are waiting (ATOMSTUDIO_COMPUTE_QUEUE)" },
];

const WORKER = fileURLToPath(new URL("./worker.mjs", import.meta.url));

export class ComputeService implements Closable {
  #pool: Piscina | undefined;
  constructor(readonly options: ComputeOptions) {}

  /** Threads start on first use, so an app that never computes starts none. */
  #get(): Piscina {
    this.#pool ??= new Piscina({
      filename: WORKER,
      minThreads: 1,
      maxThreads: this.options.threads,
      maxQueue: this.options.maxQueue,
      idleTimeout: 60_000,
      // worker.mjs registers tsx itself; flags of the parent process (--import, --inspect) stay out.
      execArgv: [],
      resourceLimits: { maxOldGenerationSizeMb: this.options.memoryMb },
    });
    return this.#pool;
  }

  /** Run a task of `tasks.ts` in a thread; its coded errors come back as the same AtomStudioError. */
  async run<K extends TaskName>(name: K, args: TaskArgs<K>, opts: RunOptions = {}): Promise<TaskResult<K>> {
    const deadlineMs = opts.deadlineMs ?? this.options.deadlineMs;
    const deadline = AbortSignal.timeout(deadlineMs);
    const signal = opts.signal ? AbortSignal.any([deadline, opts.signal]) : deadline;
    let outcome: TaskOutcome;
    try {
      outcome = await this.#get().run({ name, args } satisfies TaskMessage, { signal });
    } catch (err) {
      if (deadline.aborted)
        throw new AtomStudioError(
          "DEADLINE_EXCEEDED",
          `The computation did not finish within ${deadlineMs} ms and was stopped`,
          { deadline_ms: deadlineMs, task: name },
          504,
        );
      if (opts.signal?.aborted) throw new AtomStudioError("CLIENT_CLOSED_REQUEST", "The client went away", undefined, 499);
      const message = err instanceof Error ? err.message : String(err);
      if (/queue is at limit/i.test(message))
        throw new AtomStudioError(
          "QUEUE_FULL",
          `The compute queue is full (${this.options.maxQueue} tasks waiting); retry later`,
          { limit: this.options.maxQueue },
          429,
        );
      if ((err as { code?: unknown }).code === "ERR_WORKER_OUT_OF_MEMORY")
        throw new AtomStudioError(
          "COMPUTE_OUT_OF_MEMORY",
          `The computation needed more than ${this.options.memoryMb} MiB and was stopped`,
          { limit_mb: this.options.memoryMb, task: name },
          503,
        );
      throw err;
    }
    if (!outcome.ok) {
      const e = outcome.error;
      throw new AtomStudioError(e.code, e.message, e.details, e.status);
    }
    return outcome.value as TaskResult<K>;
  }

  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.destroy();
  }
}

export const computeOptions = (config: ServiceConfig): ComputeOptions => ({
  threads: config.computeThreads,
  deadlineMs: config.computeDeadlineMs,
  maxQueue: config.computeQueue,
  memoryMb: config.computeMemoryMb,
});

/** The service's compute pool, created on first use and closed with the app. */
export const compute = (ctx: ServiceContext): ComputeService =>
  ctx.services.compute ?? provide(ctx, "compute", new ComputeService(computeOptions(ctx.config)));
