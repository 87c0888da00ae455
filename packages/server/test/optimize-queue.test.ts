/**
 * HTTP optimization and energy requests as BullMQ jobs (jobs/calculator-jobs.ts): the same rows
 * run against a service without Redis (the direct worker pool) and one with a real redis-server
 * (every request a job on `calc-<calculator>`) give the same answers and the same error bodies;
 * the job is in Redis, completed, with its attempts; QUEUE_FULL and a client leaving behave as
 * without Redis; a Python `atomstudio-worker --queue` serves a request when the service's own
 * pool takes no queue jobs (ATOMSTUDIO_QUEUE_CALCULATORS=0); GET /api/jobs/{id} and its error rows;
 * a redis-server killed under a waiting request: 503 QUEUE_UNAVAILABLE at once, and the job runs
 * when Redis is back.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fccCluster } from "atomstudio-testkit";
import { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { freePort, hasRedis, REDIS_SERVER, startRedis } from "../../studio/test/support.ts";
import type { ServiceConfig } from "../src/config.ts";
import type { ServiceContext } from "../src/context.ts";
import { buildApp } from "../src/http/app.ts";
import { redisConnection } from "../src/jobs/embedded-redis.ts";
import { calcQueue, QUEUE_PREFIX } from "../src/jobs/queue.ts";
import { operations } from "../src/operations/index.ts";
import { optimizeWsPlugin } from "../src/optimize/ws.ts";
import { openApiDocument } from "../src/registry/openapi.ts";
import { workflowPlugin } from "../src/workflow/plugin.ts";
import { responseValidator } from "./contract-support.ts";
import { testConfig } from "./helpers.ts";

const validate = responseValidator(openApiDocument(operations));

/** A JSON answer, read field by field by the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions check the shape
type Json = any;

const REPO = join(import.meta.dirname, "../../..");
const cluster = fccCluster(1, { jitter: 0.15 });
const longRun = { structure: fccCluster(3, { jitter: 0.15 }), calculator: "emt", fmax: 1e-6, max_steps: 5000 };
const silicon = { "@class": "Molecule", sites: [{ species: [{ element: "Si", occu: 1 }], xyz: [0, 0, 0] }] };

interface Service {
  app: FastifyInstance;
  ctx: ServiceContext;
  base: string;
}
const services: Service[] = [];
const children: ChildProcess[] = [];
let redis: { url: string; stop(): Promise<void> };
let direct: Service;
let queued: Service;

const start = async (over: Partial<ServiceConfig>, withQueue: boolean): Promise<Service> => {
  const { app, ctx } = await buildApp({
    config: testConfig(over),
    plugins: withQueue ? [workflowPlugin(), optimizeWsPlugin] : [optimizeWsPlugin],
  });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const s = { app, ctx, base };
  services.push(s);
  return s;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitFor = async (what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => {
  const end = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
};

const emtQueue = () => new Queue(calcQueue("emt"), { connection: redisConnection(redis.url), prefix: QUEUE_PREFIX });

const call = async (s: Service, method: string, path: string, body?: unknown, signal?: AbortSignal) => {
  const res = await fetch(s.base + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, Json> };
};

interface Msg {
  type: string;
  [k: string]: Json;
}
/** Open the optimization socket, send `start`, collect messages until a final one. */
const wsRun = (s: Service, start: unknown): Promise<Msg[]> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(`${s.base.replace("http", "ws")}/api/optimize/ws`);
    const msgs: Msg[] = [];
    ws.on("open", () => ws.send(JSON.stringify(start)));
    ws.on("message", (raw) => {
      const m = JSON.parse(raw.toString()) as Msg;
      msgs.push(m);
      if (["result", "cancelled", "error"].includes(m.type)) {
        ws.close();
        resolve(msgs);
      }
    });
    ws.on("error", reject);
  });

beforeAll(async () => {
  if (!hasRedis) return;
  redis = await startRedis();
  direct = await start({}, false);
  queued = await start({ queueUrl: redis.url }, true);
  // the service's own pool takes calc-emt once it has listed its calculators
  const q = emtQueue();
  await waitFor("the service's calc-emt worker", async () => (await q.getWorkersCount()) > 0);
  await q.close();
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const s of services) await s.app.close();
  await redis?.stop();
});

/** The answer without the fields that differ between two runs of the same thing. */
const comparable = (body: Record<string, Json>) => {
  const { job_id: _j, elapsed_s: _e, ...rest } = body;
  return rest;
};

const rows: Array<[string, string, string, unknown]> = [
  ["energy of a Cu cluster", "POST", "/api/optimize/energy", { structure: cluster, calculator: "emt" }],
  [
    "energy by GET",
    "GET",
    `/api/optimize/energy?${new URLSearchParams({ structure: JSON.stringify(cluster), calculator: "emt" })}`,
    undefined,
  ],
  ["BFGS relaxation", "POST", "/api/optimize/structure", { structure: cluster, calculator: "emt", fmax: 0.05 }],
  [
    "relaxation with frozen atoms and the trajectory",
    "POST",
    "/api/structure/optimize",
    { structure: cluster, calculator: "emt", fmax: 0.05, frozen_atoms: [0, 1], return_trajectory: true },
  ],
  ["UNSUPPORTED_ELEMENTS from the worker", "POST", "/api/optimize/energy", { structure: silicon, calculator: "emt" }],
  ["INVALID_FMAX before queueing", "POST", "/api/optimize/structure", { structure: cluster, calculator: "emt", fmax: 0 }],
  [
    "INVALID_INDEX before queueing",
    "POST",
    "/api/optimize/structure",
    { structure: cluster, calculator: "emt", frozen_atoms: [99] },
  ],
  ["UNKNOWN_CALCULATOR (no queue takes it)", "POST", "/api/optimize/energy", { structure: cluster, calculator: "nope" }],
  ["UFF refused", "POST", "/api/optimize/energy", { structure: cluster, calculator: "uff" }],
];

describe.skipIf(!hasRedis)("the same answers with and without the queue", () => {
  it.each(rows)(
    "%s",
    async (_name, method, path, body) => {
      const a = await call(direct, method, path, body);
      const b = await call(queued, method, path, body);
      expect(b.status).toBe(a.status);
      if (a.status === 200) {
        expect(a.body.job_id).toBeUndefined();
        expect(b.body.job_id).toMatch(/^j-emt-[0-9a-f]{24}$/);
        // EMT is deterministic: the same numbers from the same pool code, whichever path
        expect(comparable(b.body)).toEqual(comparable(a.body));
        // job_id is declared in the published output schema
        expect(validate(method, path.split("?")[0] as string, 200, b.body)).toEqual([]);
      } else expect(b.body).toEqual(a.body);
    },
    60_000,
  );

  it("a request went through BullMQ: its job is in Redis, completed, one attempt, with the answer", async () => {
    const res = await call(queued, "POST", "/api/optimize/energy", { structure: cluster, calculator: "emt" });
    expect(res.status).toBe(200);
    const q = emtQueue();
    const job = await q.getJob(res.body.job_id);
    expect(job).toBeDefined();
    expect(await job?.getState()).toBe("completed");
    expect(job?.attemptsMade).toBe(1);
    expect(job?.name).toBe("energy");
    expect((job?.returnvalue as Json)?.energy).toBe(res.body.energy);
    await q.close();
    const status = await call(queued, "GET", `/api/jobs/${res.body.job_id}`);
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      id: res.body.job_id,
      operation: "energy",
      queue: "calc-emt",
      state: "completed",
      attempts: 1,
    });
    expect(status.body.result.energy).toBe(res.body.energy);
    expect(validate("GET", "/api/jobs/{id}", 200, status.body)).toEqual([]);
    expect(Date.parse(status.body.finished_at)).toBeGreaterThanOrEqual(Date.parse(status.body.started_at));
  }, 60_000);

  it.each([
    ["an unknown id", "j-emt-000000000000000000000000", 404, "JOB_NOT_FOUND"],
    ["not a job id", "run_x", 404, "JOB_NOT_FOUND"],
    ["a queue that does not exist", "j-nope-000000000000000000000000", 404, "JOB_NOT_FOUND"],
    ["too long", "j".repeat(81), 422, "MALFORMED_REQUEST"],
  ])("GET /api/jobs/{id}, %s: %s %s", async (_name, id, status, code) => {
    const res = await call(queued, "GET", `/api/jobs/${id}`);
    expect([res.status, res.body.code]).toEqual([status, code]);
  });

  it("GET /api/jobs/{id} without Redis: 503 QUEUE_UNAVAILABLE", async () => {
    const res = await call(direct, "GET", "/api/jobs/j-emt-000000000000000000000000");
    expect([res.status, res.body.code]).toEqual([503, "QUEUE_UNAVAILABLE"]);
  });

  it("GET /api/jobs/{id} is protected like every route", async () => {
    const s = await start({ queueUrl: redis.url, token: "s3cret-token-for-tests", queueCalculators: false }, true);
    const res = await call(s, "GET", "/api/jobs/j-emt-000000000000000000000000");
    expect(res.status).toBe(401);
  });
});

describe.skipIf(!hasRedis)("the queue keeps the direct path's limits", () => {
  it("QUEUE_FULL beyond ATOMSTUDIO_QUEUE_MAX waiting jobs, and a client leaving stops its running job", async () => {
    // a Redis of its own: the jobs counted are this service's only
    const own = await startRedis();
    try {
      const s = await start({ queueUrl: own.url, queueMax: 1, workers: 1 }, true);
      const q = new Queue(calcQueue("emt"), { connection: redisConnection(own.url), prefix: QUEUE_PREFIX });
      await waitFor("the service's calc-emt worker", async () => (await q.getWorkersCount()) > 0);
      const leave = new AbortController();
      const long = call(s, "POST", "/api/optimize/structure", longRun, leave.signal).catch((e: Error) => e);
      await waitFor("the long job to run", async () => (await q.getActiveCount()) === 1);
      const waiting = call(s, "POST", "/api/optimize/energy", { structure: cluster, calculator: "emt" });
      await waitFor("the energy job to wait", async () => (await q.getWaitingCount()) === 1);
      const full = await call(s, "POST", "/api/optimize/energy", { structure: cluster, calculator: "emt" });
      expect([full.status, full.body.code]).toEqual([429, "QUEUE_FULL"]);
      expect(full.body.details).toMatchObject({ queue_max: 1 });
      expect(Number(full.headers.get("retry-after"))).toBeGreaterThan(0);
      const [longJob] = await q.getJobs(["active"]);
      leave.abort();
      expect(await long).toBeInstanceOf(Error);
      // the running optimization is stopped, so the waiting request is served
      const served = await waiting;
      expect(served.status).toBe(200);
      expect(served.body.job_id).toMatch(/^j-emt-/);
      await waitFor("the long job to fail", async () => (await longJob?.getState()) === "failed");
      const failed = await q.getJob(longJob?.id as string);
      expect(failed?.failedReason).toMatch(/^CANCELLED: /);
      await q.close();
    } finally {
      await own.stop();
    }
  }, 120_000);
});

describe.skipIf(!hasRedis)("a Python worker serves HTTP requests", () => {
  it("with ATOMSTUDIO_QUEUE_CALCULATORS=0, atomstudio-worker --queue answers POST /api/optimize/structure and the optimization socket", async () => {
    const own = await startRedis();
    try {
      const s = await start({ queueUrl: own.url, queueCalculators: false }, true);
      const env: Record<string, string> = { PYTHONPATH: join(REPO, "worker/src"), OMP_NUM_THREADS: "1" };
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("ATOMSTUDIO_")) env[k] ??= v;
      const child = spawn(
        join(REPO, ".venv/bin/python"),
        ["-m", "atomstudio_worker", "--queue", "--redis-url", own.url, "--calculators", "emt"],
        { env, stdio: ["ignore", "ignore", "pipe"] },
      );
      children.push(child);
      const pythonJobs: string[] = [];
      await new Promise<void>((resolve, reject) => {
        child.once("exit", (code) => reject(new Error(`worker exited with ${code}`)));
        createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
          const job = / job (\S+): /.exec(line);
          if (job) pythonJobs.push(job[1] as string);
          if (line.includes("taking jobs for")) resolve();
        });
      });
      // the worker advertises its calculators right after it starts taking jobs
      const probe = new Redis(redisConnection(own.url));
      await waitFor("the Python worker's record", async () => (await probe.keys(`${QUEUE_PREFIX}:worker:*`)).length > 0);
      probe.disconnect();
      const body = { structure: cluster, calculator: "emt", fmax: 0.05 };
      const res = await call(s, "POST", "/api/optimize/structure", body);
      expect(res.status).toBe(200);
      expect(pythonJobs).toContain(res.body.job_id);
      const ref = await call(direct, "POST", "/api/optimize/structure", body);
      expect(res.body.energy).toBeCloseTo(ref.body.energy, 8);
      expect(res.body.steps).toBe(ref.body.steps);
      // the optimization socket relays every step the Python worker reports, in order, with its structure
      const wsStart = { action: "start", ...body, fmax: 0.01 };
      const [viaPython, viaPool] = [await wsRun(s, wsStart), await wsRun(direct, wsStart)];
      expect(pythonJobs).toContain(viaPython.at(-1)?.job_id);
      expect(viaPython.map((m) => m.type)).toEqual(viaPool.map((m) => m.type));
      const steps = (msgs: Msg[]) => msgs.filter((m) => m.type === "step");
      for (const [i, [p, d]] of steps(viaPython)
        .map((m, j) => [m, steps(viaPool)[j] as Msg] as const)
        .entries()) {
        expect(p.step).toBe(i);
        expect(Object.keys(p).sort()).toEqual(Object.keys(d).sort());
        expect(p.energy).toBeCloseTo(d.energy, 8);
        expect(p.structure.sites).toHaveLength(d.structure.sites.length);
      }
      // a worker's coded failure comes back as the same ErrorResponse
      const bad = await call(s, "POST", "/api/optimize/energy", { structure: silicon, calculator: "emt" });
      const badRef = await call(direct, "POST", "/api/optimize/energy", { structure: silicon, calculator: "emt" });
      expect([bad.status, bad.body]).toEqual([badRef.status, badRef.body]);
    } finally {
      await own.stop();
    }
  }, 120_000);
});

/**
 * A redis-server that keeps every write in its append-only file before answering (fsync always),
 * on a fixed port, so it can be killed with SIGKILL and started again with its data, at the same URL.
 */
const killableRedis = async () => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "atomstudio-redis-"));
  let proc: ChildProcess | undefined;
  const up = async () => {
    const args = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", ""];
    const child = spawn(REDIS_SERVER, [...args, "--appendonly", "yes", "--appendfsync", "always"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    proc = child;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("redis-server did not start")), 10_000);
      child.stdout?.on("data", (d: Buffer) => {
        if (/Ready to accept connections/i.test(String(d))) {
          clearTimeout(t);
          resolve();
        }
      });
      child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}`)));
    });
  };
  const kill = async () => {
    const p = proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL");
    await gone;
  };
  await up();
  return {
    url: `redis://127.0.0.1:${port}`,
    kill,
    /** A frozen host: the connections stay open, nothing answers. */
    freeze: () => proc?.kill("SIGSTOP"),
    thaw: () => proc?.kill("SIGCONT"),
    restart: up,
    stop: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

/** An optimization of a fixed number of steps (fmax is never reached): a job that runs a few seconds. */
const stepsRun = (steps: number) => ({ ...longRun, structure: fccCluster(2, { jitter: 0.15 }), max_steps: steps });

describe.skipIf(!hasRedis)("Redis dies while a request waits on its job", () => {
  // how: killed (its connections close at once), or frozen (open connections that never answer: the ping finds it)
  it.each([
    ["waiting in the queue", "energy", "killed", true, 5000],
    ["running on a worker", "optimization", "killed", false, 5000],
    ["running on a worker", "optimization", "frozen", false, 7000],
    ["running on a worker", "optimization socket", "killed", false, 5000],
  ] as const)(
    "the job %s (%s), Redis %s: 503 QUEUE_UNAVAILABLE within seconds; when Redis is back the job completes",
    async (where, kind, how, behindAnother, withinMs) => {
      const r = await killableRedis();
      try {
        const s = await start({ queueUrl: r.url, workers: 1 }, true);
        const q = new Queue(calcQueue("emt"), { connection: redisConnection(r.url), prefix: QUEUE_PREFIX });
        await waitFor("the service's calc-emt worker", async () => (await q.getWorkersCount()) > 0);
        // the only worker is busy with another optimization, so the energy job waits behind it
        const blocker = behindAnother ? call(s, "POST", "/api/optimize/structure", stepsRun(40)) : undefined;
        if (blocker) await waitFor("the other job to run", async () => (await q.getActiveCount()) === 1);
        const body = kind === "energy" ? { structure: cluster, calculator: "emt" } : stepsRun(40);
        const path = kind === "energy" ? "/api/optimize/energy" : "/api/optimize/structure";
        // the socket's last message stands for the HTTP answer (it has no status)
        const pending =
          kind === "optimization socket"
            ? wsRun(s, { action: "start", ...body }).then((msgs) => ({ status: 503, body: msgs.at(-1) as Json }))
            : call(s, "POST", path, body);
        const state = behindAnother ? "waiting" : "active";
        let jobId = "";
        await waitFor(`the request's job to be ${state}`, async () => {
          const [job] = await q.getJobs([state]);
          jobId = job?.id ?? "";
          return Boolean(job);
        });
        await q.close();
        if (how === "killed") await r.kill();
        else r.freeze();
        const goneAt = Date.now();
        const answer = await pending;
        const waitedMs = Date.now() - goneAt;
        expect([answer.status, answer.body.code]).toEqual([503, "QUEUE_UNAVAILABLE"]);
        if (kind === "optimization socket") expect(answer.body.type).toBe("error");
        expect(answer.body.details).toEqual({ job_id: jobId });
        expect(answer.body.error).toContain(`GET /api/jobs/${jobId}`);
        expect(waitedMs).toBeLessThan(withinMs);
        if (blocker) expect((await blocker).body.code).toBe("QUEUE_UNAVAILABLE");
        // Redis back (with its append-only file after a kill): the job was kept, and it completes
        if (how === "killed") await r.restart();
        else r.thaw();
        let status: Record<string, Json> = {};
        await waitFor(
          "the job to complete",
          async () => {
            status = (await call(s, "GET", `/api/jobs/${jobId}`)).body;
            return status.state === "completed";
          },
          150_000,
        );
        const reference = await call(direct, "POST", path, body);
        expect(status.result.energy).toBe(reference.body.energy);
        // a short outage: the worker kept its lock, so the job ran once
        expect(status.attempts).toBe(1);
        console.log(`${where} (${kind}), Redis ${how}: 503 after ${waitedMs} ms`);
      } finally {
        r.thaw();
        await r.stop();
      }
    },
    240_000,
  );
});
