/**
 * A pool of long-lived calculator workers (models stay loaded between requests). Each worker
 * runs one job at a time; jobs beyond the pool wait in a bounded FIFO queue (429 QUEUE_FULL
 * beyond `queueMax`) and are told their position. A dead worker is replaced when the next job
 * needs its slot.
 *
 * No caller holds a worker for ever: a running job past its deadline, or cancelled (the client
 * left), is asked to stop; a worker that has not answered within the grace period (an energy
 * calculation cannot be interrupted) is killed with the programs it started.
 */

import { availableParallelism } from "node:os";
import { AtomStudioError, isAtomStudioError } from "atomstudio-core";
import type { WorkerProcess } from "./worker.ts";

/**
 * Threads per worker for BLAS/OpenMP/torch: the cores shared out between the pool's workers,
 * unless the environment already says. Oversubscribed BLAS threads made BFGS steps several
 * times slower in measurements here (each worker spinning as many threads as there are cores).
 */
export const workerThreadEnv = (poolSize: number, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => {
  if (env.OMP_NUM_THREADS) return env;
  const n = String(Math.max(1, Math.floor(availableParallelism() / Math.max(1, poolSize))));
  return { ...env, OMP_NUM_THREADS: n, OPENBLAS_NUM_THREADS: n, MKL_NUM_THREADS: n };
};

/** The last optimizer state a cancelled run reported, without its (possibly large) structure. */
const lastState = (details: Record<string, unknown> | undefined): Record<string, unknown> => {
  const { steps, energy, fmax } = details ?? {};
  return Object.fromEntries(Object.entries({ steps, energy, fmax }).filter(([, v]) => v !== undefined && v !== null));
};

export interface JobHandle<T> {
  result: Promise<T>;
  cancel: () => void;
}

export interface PoolLimits {
  /** Jobs that may wait for a worker (default: unbounded). */
  queueMax?: number;
  /** Time a job may run on a worker, ms (default: none). */
  deadlineMs?: number;
  /** Time a worker asked to stop may take before it is killed, ms (default 5000). */
  graceMs?: number;
  /** Start a replacement as soon as a job's worker died (default: when the next job needs it). */
  respawn?: boolean;
}

export interface RunOptions {
  onEvent?: (event: string, data: unknown) => void;
  /** Called with the 1-based queue position while the job waits for a worker. */
  onQueued?: (position: number) => void;
  /** The result as the worker's JSON text (a `JsonText`, worker.ts), not parsed: for an HTTP reply. */
  text?: boolean;
}

interface Job {
  /** Runs the job on a worker; settles when the worker answers or dies. */
  start: (w: WorkerProcess) => Promise<unknown>;
  onQueued: ((position: number) => void) | undefined;
  reject: (e: Error) => void;
}

/** Retry-After of a 429 QUEUE_FULL: a guess at when a slot frees, a fraction of the deadline, at least a few seconds. */
export const retryAfterSeconds = (deadlineMs: number): number => Math.max(5, Math.min(60, Math.ceil(deadlineMs / 1000 / 60)));

export class WorkerPool {
  readonly size: number;
  #workers: Array<WorkerProcess | undefined>;
  #busy: boolean[];
  #queue: Job[] = [];
  #make: () => WorkerProcess;
  #calculators: Promise<unknown> | undefined;
  #limits: Required<PoolLimits>;
  #closed = false;

  /** `make` starts one worker (the service's: the configured Python with the worker environment). */
  constructor(size: number, make: () => WorkerProcess, limits: PoolLimits = {}) {
    this.size = Math.max(1, size);
    this.#workers = new Array(this.size).fill(undefined);
    this.#busy = new Array(this.size).fill(false);
    this.#make = make;
    this.#limits = {
      queueMax: limits.queueMax ?? Number.POSITIVE_INFINITY,
      deadlineMs: limits.deadlineMs ?? Number.POSITIVE_INFINITY,
      graceMs: limits.graceMs ?? 5000,
      respawn: limits.respawn ?? false,
    };
  }

  /** Live worker processes (for tests and diagnostics). */
  get workers(): WorkerProcess[] {
    return this.#workers.filter((w): w is WorkerProcess => w?.alive === true);
  }

  /** Jobs waiting for a worker. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * The worker's calculator listing, asked once (it does not change while a worker runs). The
   * worker answers it at once even while it computes, so it does not wait in the job queue.
   */
  calculators<T>(): Promise<T> {
    if (!this.#calculators) {
      let w = this.#workers[0];
      if (!w?.alive) {
        w = this.#make();
        this.#workers[0] = w;
      }
      this.#calculators = w.request<T>("calculators", {}).result.catch((e) => {
        this.#calculators = undefined;
        throw e;
      });
    }
    return this.#calculators as Promise<T>;
  }

  run<T>(method: string, params: unknown, opts: RunOptions = {}): JobHandle<T> {
    if (this.#queue.length >= this.#limits.queueMax && this.#busy.every(Boolean)) {
      const retryAfterS = retryAfterSeconds(this.#limits.deadlineMs);
      throw new AtomStudioError(
        "QUEUE_FULL",
        `${this.#queue.length} calculator jobs are already waiting for a worker; try again later`,
        { queue_max: this.#limits.queueMax, retry_after_s: retryAfterS },
        429,
      );
    }
    let stopRunning: (() => void) | undefined;
    let job!: Job;
    const result = new Promise<T>((resolve, reject) => {
      job = {
        onQueued: opts.onQueued,
        reject,
        start: (w) => {
          const { id, result: r } = w.request<T>(method, params, opts.onEvent, opts.text);
          let expired = false;
          let stopped = false;
          let done = false;
          let graceTimer: NodeJS.Timeout | undefined;
          // ask the worker to stop; kill it (and its children) if it has not answered in time.
          // Once the job has settled the worker may already run the next one: nothing to stop.
          const stop = () => {
            if (done) return;
            stopped = true;
            w.cancel(id);
            graceTimer ??= setTimeout(() => w.kill(), this.#limits.graceMs);
          };
          stopRunning = stop;
          const deadline = Number.isFinite(this.#limits.deadlineMs)
            ? setTimeout(() => {
                expired = true;
                stop();
              }, this.#limits.deadlineMs)
            : undefined;
          const settled = r.finally(() => {
            done = true;
            clearTimeout(deadline);
            clearTimeout(graceTimer);
          });
          settled.then(resolve, (e) => {
            const stoppedHere = stopped && isAtomStudioError(e) && (e.code === "CANCELLED" || e.code === "WORKER_DIED");
            if (stoppedHere && expired)
              return reject(
                new AtomStudioError(
                  "DEADLINE_EXCEEDED",
                  `The calculation did not finish within the job deadline of ${this.#limits.deadlineMs / 1000} s and was stopped`,
                  { deadline_s: this.#limits.deadlineMs / 1000, ...lastState(e.details) },
                  504,
                ),
              );
            // a worker killed because it did not stop in time still means: cancelled as asked
            if (stoppedHere && e.code === "WORKER_DIED")
              return reject(new AtomStudioError("CANCELLED", "Cancelled; the calculation was stopped", undefined, 409));
            reject(e);
          });
          return settled;
        },
      };
    });
    this.#queue.push(job);
    this.#dispatch();
    const position = this.#queue.indexOf(job);
    if (position >= 0) opts.onQueued?.(position + 1);
    const cancel = () => {
      const i = this.#queue.indexOf(job);
      if (i >= 0) {
        this.#queue.splice(i, 1);
        job.reject(new AtomStudioError("CANCELLED", "Cancelled while waiting for a calculator worker", undefined, 409));
        this.#notifyPositions();
      } else stopRunning?.();
    };
    return { result, cancel };
  }

  #notifyPositions(): void {
    for (const [i, q] of this.#queue.entries()) q.onQueued?.(i + 1);
  }

  #dispatch(): void {
    for (let slot = 0; slot < this.size && this.#queue.length; slot++) {
      if (this.#busy[slot]) continue;
      const job = this.#queue.shift() as Job;
      this.#busy[slot] = true;
      let w = this.#workers[slot];
      if (!w?.alive) {
        w = this.#make();
        this.#workers[slot] = w;
      }
      const free = () => {
        this.#busy[slot] = false;
        // warm up the replacement now (its imports) rather than when the next job arrives
        if (this.#limits.respawn && !this.#closed && !this.#workers[slot]?.alive) this.#workers[slot] = this.#make();
        this.#dispatch();
        this.#notifyPositions();
      };
      job.start(w).then(free, free);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queue.splice(0))
      q.reject(new AtomStudioError("SHUTTING_DOWN", "The service is shutting down", undefined, 503));
    await Promise.all(this.#workers.map((w) => w?.shutdown()));
  }
}
