/**
 * A pool of long-lived calculator workers (models stay loaded between requests). Each worker
 * runs one job at a time; jobs beyond the pool wait in a FIFO queue and are told their position.
 * A dead worker is replaced when the next job needs its slot.
 */

import { availableParallelism } from "node:os";
import { AtomStudioError } from "atomstudio-core";
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

export interface JobHandle<T> {
  result: Promise<T>;
  cancel: () => void;
}

export interface RunOptions {
  onEvent?: (event: string, data: unknown) => void;
  /** Called with the 1-based queue position while the job waits for a worker. */
  onQueued?: (position: number) => void;
}

interface Job {
  /** Runs the job on a worker; settles when the worker answers or dies. */
  start: (w: WorkerProcess) => Promise<unknown>;
  onQueued: ((position: number) => void) | undefined;
  reject: (e: Error) => void;
}

export class WorkerPool {
  readonly size: number;
  #workers: Array<WorkerProcess | undefined>;
  #busy: boolean[];
  #queue: Job[] = [];
  #make: () => WorkerProcess;
  #calculators: Promise<unknown> | undefined;

  /** `make` starts one worker; default: the repository's Python with the process environment. */
  constructor(size: number, make: () => WorkerProcess) {
    this.size = Math.max(1, size);
    this.#workers = new Array(this.size).fill(undefined);
    this.#busy = new Array(this.size).fill(false);
    this.#make = make;
  }

  /** Live worker processes (for tests and diagnostics). */
  get workers(): WorkerProcess[] {
    return this.#workers.filter((w): w is WorkerProcess => w?.alive === true);
  }

  /** The worker's calculator listing, asked once (it does not change while a worker runs). */
  calculators<T>(): Promise<T> {
    if (!this.#calculators) {
      this.#calculators = this.run<T>("calculators", {}).result.catch((e) => {
        this.#calculators = undefined;
        throw e;
      });
    }
    return this.#calculators as Promise<T>;
  }

  run<T>(method: string, params: unknown, opts: RunOptions = {}): JobHandle<T> {
    let cancelRunning: (() => void) | undefined;
    let job!: Job;
    const result = new Promise<T>((resolve, reject) => {
      job = {
        onQueued: opts.onQueued,
        reject,
        start: (w) => {
          const { id, result: r } = w.request<T>(method, params, opts.onEvent);
          cancelRunning = () => w.cancel(id);
          r.then(resolve, reject);
          return r;
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
      } else cancelRunning?.();
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
        this.#dispatch();
        this.#notifyPositions();
      };
      job.start(w).then(free, free);
    }
  }

  async close(): Promise<void> {
    for (const q of this.#queue.splice(0))
      q.reject(new AtomStudioError("SHUTTING_DOWN", "The service is shutting down", undefined, 503));
    await Promise.all(this.#workers.map((w) => w?.shutdown()));
  }
}
