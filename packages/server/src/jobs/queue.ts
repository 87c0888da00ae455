/**
 * The job queue (README "Workflows"): BullMQ on the Redis of `ATOMSTUDIO_REDIS_URL` or the
 * embedded one. Every long piece of work of a workflow is a BullMQ job with a deterministic id,
 * a state, attempts, progress, a deadline and a result, stored in Redis, so it survives a restart
 * of the service and can be taken by any service or worker pointed at the same Redis.
 *
 * Queues: `ops` (registry operations, run by every service) and `calc-<calculator>` (calculator
 * jobs, run only by processes that have that calculator: a service with its local worker pool, or
 * `atomstudio-worker --queue` on any machine). A job waits in the queue of what can run it.
 */
import { type Job, type Processor, Queue, QueueEvents, Worker, type WorkerOptions } from "bullmq";
import { Redis } from "ioredis";
import type { Closable, ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";
import { redisConnection } from "./embedded-redis.ts";

/** Key prefix of every queue (`atomstudio:<queue>:…`); the Python worker uses the same. */
export const QUEUE_PREFIX = "atomstudio";
export const OPS_QUEUE = "ops";
export const calcQueue = (calculator: string): string => `calc-${calculator}`;
/** Calculator operations go to the calculator's queue; everything else to `ops`. */
export const CALCULATOR_OPERATIONS: Readonly<Record<string, "optimize" | "energy">> = {
  optimize_structure: "optimize",
  structure_optimize: "optimize",
  energy: "energy",
};

/** How long closing waits for running jobs before leaving them to the stalled-job check. */
const CLOSE_WAIT_MS = 60_000;

/** How long a worker's lock on a job lasts before the job counts as stalled and goes to another worker. */
export const DEFAULT_LOCK_MS = 30_000;

/**
 * While a caller waits on a job, Redis is pinged this often; no answer within OUTAGE_PING_TIMEOUT_MS
 * counts as an outage (a Redis that went away without closing the connection: a network cut, a
 * frozen host). A Redis that dies closes the connection, which is noticed at once.
 */
const OUTAGE_PING_MS = 1000;
const OUTAGE_PING_TIMEOUT_MS = 3000;

/** A watch on Redis for one waiting caller: `lost` rejects (503 QUEUE_UNAVAILABLE) when Redis is unreachable. */
export interface OutageWatch {
  lost: Promise<never>;
  stop(): void;
}

declare module "../context.ts" {
  interface Services {
    queue: JobQueues;
  }
}

export interface QueueLog {
  warn: (o: unknown, m?: string) => void;
}

export class JobQueues implements Closable {
  /** Our own keys (workflow definitions, run state); fails fast when Redis is down. */
  readonly redis: Redis;
  readonly #connection: Record<string, unknown>;
  readonly #queues = new Map<string, Queue>();
  readonly #workers: Worker[] = [];
  readonly #events = new Map<string, QueueEvents>();
  #closed = false;
  /** Callers waiting on jobs, told when Redis becomes unreachable (watchOutage). */
  readonly #outageWatchers = new Set<(why: string) => void>();
  #outagePing: NodeJS.Timeout | undefined;

  constructor(
    readonly url: string,
    readonly log: QueueLog,
    readonly lockMs = DEFAULT_LOCK_MS,
  ) {
    this.#connection = { ...redisConnection(url), maxRetriesPerRequest: null };
    this.redis = new Redis({
      ...redisConnection(url),
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      // keep trying to reconnect, at most every 2 s: the queue comes back when Redis does
      retryStrategy: (times) => Math.min(2000, 50 * times),
    });
    this.redis.on("error", (e: Error) => log.warn({ err: e.message }, "job queue: redis error"));
    this.redis.on("close", () => this.#outage("the connection to Redis closed"));
  }

  /**
   * Watch Redis for a caller waiting on a job: BullMQ's own connections wait for Redis to come
   * back without limit (their commands queue up), so a waiting caller must learn of an outage here.
   */
  watchOutage(): OutageWatch {
    let reject: (e: Error) => void = () => {};
    const lost = new Promise<never>((_, r) => {
      reject = r;
    });
    lost.catch(() => {});
    const watcher = (why: string) => {
      this.#outageWatchers.delete(watcher);
      reject(serviceError("QUEUE_UNAVAILABLE", `The job queue's Redis (${redactUrl(this.url)}) became unreachable (${why})`));
    };
    this.#outageWatchers.add(watcher);
    if (!this.ready) watcher(`its connection is ${this.redis.status}`);
    else this.#pingWhileWatched();
    return { lost, stop: () => this.#outageWatchers.delete(watcher) };
  }

  #outage(why: string): void {
    for (const watcher of [...this.#outageWatchers]) watcher(why);
  }

  #pingWhileWatched(): void {
    if (this.#outagePing || this.#closed) return;
    const tick = async () => {
      if (this.#outageWatchers.size > 0 && !this.#closed) {
        let timer: NodeJS.Timeout | undefined;
        const answered = await Promise.race([
          this.redis.ping().then(
            () => true,
            () => false,
          ),
          new Promise<boolean>((r) => {
            timer = setTimeout(() => r(false), OUTAGE_PING_TIMEOUT_MS);
          }),
        ]);
        clearTimeout(timer);
        if (!answered)
          this.#outage(this.ready ? `no answer to a ping within ${OUTAGE_PING_TIMEOUT_MS / 1000} s` : "the connection is down");
      }
      this.#outagePing = this.#outageWatchers.size > 0 && !this.#closed ? setTimeout(tick, OUTAGE_PING_MS) : undefined;
    };
    this.#outagePing = setTimeout(tick, OUTAGE_PING_MS);
  }

  /** Wait until Redis answers (or the timeout passes); true when it does. */
  async waitReady(timeoutMs = 5000): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end && !this.#closed) {
      if (this.ready) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return this.ready;
  }

  get ready(): boolean {
    return this.redis.status === "ready";
  }

  /** 503 QUEUE_UNAVAILABLE unless Redis answers now. */
  require(): void {
    if (!this.ready) throw queueUnavailable(`Redis (${redactUrl(this.url)}) cannot be reached`);
  }

  queue(name: string): Queue {
    let q = this.#queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.#connection, prefix: QUEUE_PREFIX });
      q.on("error", (e: Error) => this.log.warn({ err: e.message, queue: name }, "job queue: queue error"));
      this.#queues.set(name, q);
    }
    return q;
  }

  /** The events (completed, failed, progress) of queue `name`, read from its stream by one blocking connection. */
  async events(name: string): Promise<QueueEvents> {
    let e = this.#events.get(name);
    if (!e) {
      e = new QueueEvents(name, { connection: this.#connection, prefix: QUEUE_PREFIX });
      e.on("error", (err: Error) => this.log.warn({ err: err.message, queue: name }, "job queue: events error"));
      // one listener per request waiting on this queue (jobs/calculator-jobs.ts): no fixed limit
      e.setMaxListeners(0);
      this.#events.set(name, e);
    }
    await e.waitUntilReady();
    return e;
  }

  /** Take jobs of queue `name` in this process. */
  work<T = unknown, R = unknown>(name: string, processor: Processor<T, R>, opts: Partial<WorkerOptions> = {}): Worker<T, R> {
    const w = new Worker<T, R>(name, processor, {
      connection: this.#connection,
      prefix: QUEUE_PREFIX,
      lockDuration: this.lockMs,
      stalledInterval: this.lockMs,
      maxStalledCount: 3,
      ...opts,
    });
    w.on("error", (e: Error) => this.log.warn({ err: e.message, queue: name }, "job queue: worker error"));
    this.#workers.push(w as unknown as Worker);
    return w;
  }

  async getJob(queue: string, id: string): Promise<Job | undefined> {
    return this.queue(queue).getJob(id);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#outagePing);
    // With Redis up, workers finish their running jobs first; with Redis down nothing can be
    // handed back, so they are closed at once (their jobs' locks expire and others take them).
    const force = !this.ready;
    const bounded = (p: Promise<unknown>) =>
      Promise.race([p.catch(() => {}), new Promise((r) => setTimeout(r, force ? 1000 : CLOSE_WAIT_MS).unref())]);
    await Promise.all(this.#workers.splice(0).map((w) => bounded(w.close(force))));
    await Promise.all([...this.#queues.values(), ...this.#events.values()].map((q) => bounded(q.close())));
    this.#events.clear();
    this.#queues.clear();
    this.redis.disconnect();
  }
}

export const queueUnavailable = (why: string) =>
  serviceError("QUEUE_UNAVAILABLE", `The job queue is unavailable: ${why}. Workflows need Redis (README "Workflows").`);

/** A URL fit for messages: no password. */
export const redactUrl = (url: string): string => url.replace(/\/\/([^@/]*)@/, "//[redacted]@");

/** The queue service of the context; 503 QUEUE_UNAVAILABLE when the service has none or Redis is down. */
export const requireQueue = (ctx: ServiceContext): JobQueues => {
  const q = ctx.services.queue;
  if (!q) throw queueUnavailable("this service has no Redis (set ATOMSTUDIO_REDIS_URL, or let `atomstudio serve` start one)");
  q.require();
  return q;
};
