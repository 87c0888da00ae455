/**
 * Analysis requests as BullMQ jobs (jobs/analysis-jobs.ts) against a real redis-server and the
 * real analysis worker: with a queue, a request through `runAnalysis` is a job of the service's
 * own queue `analysis-<service id>`, named in the X-AtomStudio-Job header and readable at
 * GET /api/jobs/{id} (state, attempts, a small summary), and its answer is the one a service
 * without Redis gives; a client that leaves fails its job (the worker is freed); the deadline is
 * a 504 and a failed job; with Redis frozen under a request it answers directly (and the job,
 * once Redis wakes, fails as answered directly); with Redis killed the next request answers on the
 * pool directly. Calculator requests carry the same header, readable by pages of allowed origins.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fccCluster, testdataPath } from "atomstudio-testkit";
import { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, hasRedis, REDIS_SERVER, startRedis } from "../../studio/test/support.ts";
import type { ServiceConfig } from "../src/config.ts";
import type { ServiceContext } from "../src/context.ts";
import { buildApp } from "../src/http/app.ts";
import { JOB_HEADER } from "../src/jobs/analysis-jobs.ts";
import { redisConnection } from "../src/jobs/embedded-redis.ts";
import { calcQueue, QUEUE_PREFIX } from "../src/jobs/queue.ts";
import { workflowPlugin } from "../src/workflow/plugin.ts";
import { cuCell, testConfig } from "./helpers.ts";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field
type Json = Record<string, any>;

const file = (rel: string) => ({
  content: readFileSync(testdataPath(rel)).toString("base64"),
  encoding: "base64",
  filename: rel.split("/").pop(),
});
const bands = { vasprun: file("vasp/vasprun_Si_bands.xml.gz"), kpoints: file("vasp/KPOINTS_Si_bands"), emin: -5, emax: 5 };
const defect = { structure: cuCell, defect_type: "vacancy", site_index: -1 };

interface Service {
  app: FastifyInstance;
  ctx: ServiceContext;
  base: string;
}
const services: Service[] = [];
let redis: { url: string; stop(): Promise<void> } | undefined;
let direct: Service;
let queued: Service;

const start = async (over: Partial<ServiceConfig>, withQueue: boolean): Promise<Service> => {
  const { app, ctx } = await buildApp({
    config: testConfig({ ...(withQueue && redis ? { queueUrl: redis.url } : {}), ...over }),
    plugins: withQueue ? [workflowPlugin()] : [],
  });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const s = { app, ctx, base };
  services.push(s);
  return s;
};
const stop = async (s: Service) => {
  services.splice(services.indexOf(s), 1);
  await s.app.close();
};

const call = async (s: Service, method: string, path: string, body?: unknown, signal?: AbortSignal) => {
  const res = await fetch(s.base + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  return { status: res.status, job: res.headers.get(JOB_HEADER), body: (await res.json()) as Json };
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitFor = async (what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> => {
  const end = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
};

/** The analysis queue of a service (created with its first analysis request). */
const analysisQueue = (s: Service) =>
  new Queue(s.ctx.services.analysisJobs?.queueName as string, {
    connection: redisConnection(redis?.url ?? ""),
    prefix: QUEUE_PREFIX,
  });

beforeAll(async () => {
  if (!hasRedis) return;
  redis = await startRedis();
  [direct, queued] = await Promise.all([start({}, false), start({}, true)]);
  const q = new Queue(calcQueue("emt"), { connection: redisConnection(redis.url), prefix: QUEUE_PREFIX });
  await waitFor("the service's calc-emt worker", async () => (await q.getWorkersCount()) > 0);
  await q.close();
}, 120_000);

afterAll(async () => {
  for (const s of [...services]) await s.app.close();
  await redis?.stop();
});

describe.skipIf(!hasRedis)("analysis requests as jobs", () => {
  const rows: Array<[string, string, unknown, string]> = [
    ["bands (JSON files)", "/api/bands", bands, "bands"],
    ["a defect built by the Python worker", "/api/build/defect", defect, "build_defect"],
  ];
  it.each(rows)(
    "%s: a job named in the header, completed with one attempt; the answer is the one without Redis",
    async (_name, path, body, method) => {
      const [plain, viaJob] = [await call(direct, "POST", path, body), await call(queued, "POST", path, body)];
      expect(plain.status, JSON.stringify(plain.body).slice(0, 300)).toBe(200);
      expect(plain.job).toBeNull();
      expect(viaJob.status, JSON.stringify(viaJob.body).slice(0, 300)).toBe(200);
      expect(viaJob.body).toEqual(plain.body);
      expect(viaJob.job).toMatch(/^a-[0-9a-f]{12}-[0-9a-f]{24}$/);
      const job = await call(queued, "GET", `/api/jobs/${viaJob.job}`);
      expect(job.status).toBe(200);
      expect(job.body).toMatchObject({
        id: viaJob.job,
        operation: method,
        queue: queued.ctx.services.analysisJobs?.queueName,
        state: "completed",
        attempts: 1,
        error: null,
        // a summary: the answer itself was the HTTP response, not stored in Redis
        result: { method, fields: Object.keys(plain.body) },
      });
      expect(job.body.finished_at).not.toBeNull();
    },
    120_000,
  );

  it("a calculator request carries its job id in the same header", async () => {
    const res = await call(queued, "POST", "/api/optimize/energy", { structure: fccCluster(1), calculator: "emt" });
    expect(res.status).toBe(200);
    expect(res.job).toBe(res.body.job_id);
  }, 60_000);

  it("a page of an allowed origin may read the header", async () => {
    const svc = await start({ corsOrigins: ["https://lab.example"] }, false);
    try {
      const res = await fetch(`${svc.base}/api/health`, { headers: { origin: "https://lab.example" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-expose-headers")?.toLowerCase().split(/,\s*/)).toContain(JOB_HEADER);
    } finally {
      await stop(svc);
    }
  });

  it("a client that leaves while its job runs: the job fails CANCELLED, the worker is freed", async () => {
    // a fresh service: its first request waits for the worker to start and import pymatgen
    const svc = await start({}, true);
    try {
      const abort = new AbortController();
      const request = call(svc, "POST", "/api/bands", bands, abort.signal).catch((e: Error) => e);
      await waitFor("the analysis queue", async () => svc.ctx.services.analysisJobs !== undefined);
      const q = analysisQueue(svc);
      try {
        await waitFor("the job to run", async () => (await q.getActiveCount()) > 0);
        abort.abort();
        expect(await request).toBeInstanceOf(Error);
        await waitFor("the job to fail", async () => (await q.getFailedCount()) > 0, 30_000);
        const [failed] = await q.getFailed();
        const job = await call(svc, "GET", `/api/jobs/${failed?.id}`);
        expect(job.body).toMatchObject({ state: "failed", attempts: 1, result: null, error: { code: "CANCELLED" } });
        expect(await q.getCompletedCount()).toBe(0);
      } finally {
        await q.close();
      }
      // the pool's one worker was stopped with the request: the next one is served
      const next = await call(svc, "POST", "/api/bands", bands);
      expect(next.status).toBe(200);
      expect(next.job).not.toBeNull();
    } finally {
      await stop(svc);
    }
  }, 120_000);

  it("past the deadline: 504 DEADLINE_EXCEEDED, the header names the job, and the job failed", async () => {
    // a fresh worker takes longer than this to import pymatgen alone
    const svc = await start({ analysisTimeoutMs: 400 }, true);
    try {
      const res = await call(svc, "POST", "/api/bands", bands);
      expect(res.status).toBe(504);
      expect(res.body.code).toBe("DEADLINE_EXCEEDED");
      expect(res.job).toMatch(/^a-/);
      const job = await call(svc, "GET", `/api/jobs/${res.job}`);
      expect(job.body).toMatchObject({ state: "failed", attempts: 1, error: { code: "DEADLINE_EXCEEDED" } });
    } finally {
      await stop(svc);
    }
  }, 120_000);

  it("with Redis frozen under a request (connections open, no answers), it answers 200 directly; the job fails once Redis is back", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "atomstudio-redis-"));
    const frozen = spawn(REDIS_SERVER, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    await new Promise<void>((resolve) =>
      frozen.stdout?.on("data", (d: Buffer) => /Ready to accept/i.test(String(d)) && resolve()),
    );
    const svc = await start({ queueUrl: `redis://127.0.0.1:${port}`, queueCalculators: false }, true);
    try {
      expect((await call(svc, "POST", "/api/build/defect", defect)).job).not.toBeNull();
      frozen.kill("SIGSTOP");
      const t = Date.now();
      const res = await call(svc, "POST", "/api/build/defect", defect);
      expect(res.status).toBe(200);
      // the outage is seen by a ping unanswered for 3 s
      expect(Date.now() - t).toBeLessThan(15_000);
      frozen.kill("SIGCONT");
      // the job reached Redis when it woke up: it fails, its request having been answered directly
      await waitFor(
        "the job to fail",
        async () => (await call(svc, "GET", `/api/jobs/${res.job}`)).body.state === "failed",
        30_000,
      );
      const job = await call(svc, "GET", `/api/jobs/${res.job}`);
      expect(job.body.error).toMatchObject({ code: "CANCELLED", error: expect.stringMatching(/ran directly/) });
    } finally {
      frozen.kill("SIGCONT");
      await stop(svc);
      frozen.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("with Redis killed, the next analysis request answers 200 on the pool directly", async () => {
    const before = await call(queued, "POST", "/api/bands", bands);
    expect(before.job).not.toBeNull();
    await redis?.stop();
    redis = undefined;
    const t = Date.now();
    const after = await call(queued, "POST", "/api/bands", bands);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before.body);
    // not held up by the queue's reconnecting
    expect(Date.now() - t).toBeLessThan(10_000);
    const job = await call(queued, "GET", `/api/jobs/${before.job}`);
    expect([job.status, job.body.code]).toEqual([503, "QUEUE_UNAVAILABLE"]);
  }, 60_000);
});
