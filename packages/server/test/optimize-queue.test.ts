/**
 * HTTP optimization and energy requests as BullMQ jobs (jobs/calculator-jobs.ts): the same rows
 * run against a service without Redis (the direct worker pool) and one with a real redis-server
 * (every request a job on `calc-<calculator>`) give the same answers and the same error bodies;
 * the job is in Redis, completed, with its attempts; QUEUE_FULL and a client leaving behave as
 * without Redis; a Python `atomstudio-worker --queue` serves a request when the service's own
 * pool takes no queue jobs (ATOMSTUDIO_QUEUE_CALCULATORS=0); GET /api/jobs/{id} and its error rows.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fccCluster } from "atomstudio-testkit";
import { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { hasRedis, startRedis } from "../../studio/test/support.ts";
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
