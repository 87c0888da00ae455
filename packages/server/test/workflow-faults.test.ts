/**
 * Workflows across real processes on loopback (README "Workflows"): `atomstudio serve` processes,
 * Python `atomstudio-worker --queue` processes and a real redis-server. Two services and two
 * workers on one Redis; a worker killed with SIGKILL mid-job; a service restarted mid-workflow
 * with its embedded Redis; a service killed with SIGKILL while a node runs on it, and a new one
 * started on its data directory. Every node output is recorded exactly once (the orchestrator's
 * audit hash in Redis).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { type ServeProcess, startServeProcess } from "atomstudio-testkit";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { hasRedis, startRedis } from "../../studio/test/support.ts";
import { redisConnection } from "../src/jobs/embedded-redis.ts";
import { recordedKey } from "../src/workflow/engine.ts";
import { SERVER_ROOT } from "./mcp-fixtures.ts";

/** A JSON answer, read field by field by the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions check the shape
type Json = any;

const REPO = join(SERVER_ROOT, "../..");
const PYTHON = join(REPO, ".venv/bin/python");
type Env = Record<string, string>;

const baseEnv = (): Env => {
  const env: Env = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("ATOMSTUDIO_")) env[k] = v;
  return env;
};

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** `atomstudio serve --port 0` in its own process; resolves with its URL once it listens. */
const serve = async (settings: Env): Promise<ServeProcess> => {
  const svc = await startServeProcess({ ATOMSTUDIO_LOG_LEVEL: "warn", ...settings });
  children.push(svc.child);
  return svc;
};

/** `atomstudio-worker --queue` for EMT; resolves once it takes jobs. `jobs` collects the job ids it started. */
const worker = (redisUrl: string): Promise<{ child: ChildProcess; jobs: string[] }> =>
  new Promise((resolve, reject) => {
    const env = { ...baseEnv(), PYTHONPATH: join(REPO, "worker/src"), ATOMSTUDIO_WORKER_LOG_LEVEL: "INFO", OMP_NUM_THREADS: "1" };
    const child = spawn(
      PYTHON,
      ["-m", "atomstudio_worker", "--queue", "--redis-url", redisUrl, "--calculators", "emt", "--lock-s", "2"],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    children.push(child);
    const jobs: string[] = [];
    let stderr = "";
    child.once("exit", (code) => reject(new Error(`worker exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
      stderr = (stderr + line).slice(-4000);
      const job = / job (\S+): /.exec(line);
      if (job) jobs.push(job[1] as string);
      if (line.includes("taking jobs for")) resolve({ child, jobs });
    });
  });

const call = async (base: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, Json> };
};

const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 120_000): Promise<T> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

const finished = (base: string, runId: string) =>
  waitFor(`run ${runId}`, async () => {
    const r = await call(base, "GET", `/api/workflow/${runId}`);
    return r.body.run && !["queued", "running"].includes(r.body.run.status) ? r.body : undefined;
  });

/** Cu fcc, 4 atoms, displaced a little: an EMT relaxation of a few dozen BFGS steps. */
const rattled = (a: number, shift: number) => ({
  "@class": "Structure",
  lattice: {
    matrix: [
      [a, 0, 0],
      [0, a, 0],
      [0, 0, a],
    ],
  },
  sites: [
    [shift, 0, 0],
    [0.5, 0.5 + shift / 2, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5 - shift],
  ].map((abc) => ({ species: [{ element: "Cu", occu: 1 }], abc })),
});

const relaxEach = (fmax: number, maxSteps: number) => ({
  name: "relax each, keep the lowest",
  nodes: [
    {
      id: "relax",
      type: "map",
      params: { operation: "optimize_structure", params: { calculator: "emt", fmax, max_steps: maxSteps } },
      inputs: { items: "$inputs.cells" },
    },
    { id: "best", type: "select", params: { by: "energy" }, inputs: { items: "relax.results" } },
  ],
});

const recordedOnce = async (redisUrl: string, runId: string, fields: string[]) => {
  const r = new Redis(redisConnection(redisUrl));
  try {
    const counts = await r.hgetall(recordedKey(runId));
    expect(Object.keys(counts).sort()).toEqual([...fields].sort());
    for (const f of fields) expect(counts[f], f).toBe("1");
  } finally {
    r.disconnect();
  }
};

describe.skipIf(!hasRedis)("workflows across processes", () => {
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
  afterAll(async () => {
    await redis?.stop();
  });

  it.each([
    ["the embedded Redis turned off", { ATOMSTUDIO_EMBEDDED_REDIS: "0" }],
    ["no redis-server on PATH", { PATH: "/nonexistent" }],
  ])(
    "atomstudio serve with %s: workflow routes 503 QUEUE_UNAVAILABLE, the rest works",
    async (_what, over) => {
      const dataDir = mkdtempSync(join(tmpdir(), "atomstudio-data-"));
      try {
        const svc = await serve({ ATOMSTUDIO_DATA_DIR: dataDir, ...over });
        const r = await call(svc.url, "POST", "/api/workflow/create", relaxEach(0.01, 10));
        expect(r.status).toBe(503);
        expect(r.body.code).toBe("QUEUE_UNAVAILABLE");
        expect((await call(svc.url, "GET", "/api/health")).status).toBe(200);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it("two services and two workers on one Redis: created on one, run and read on the other", async () => {
    redis = await startRedis();
    const settings = { ATOMSTUDIO_REDIS_URL: redis.url, ATOMSTUDIO_QUEUE_CALCULATORS: "0", ATOMSTUDIO_QUEUE_LOCK_S: "2" };
    const [a, b, w1, w2] = await Promise.all([serve(settings), serve(settings), worker(redis.url), worker(redis.url)]);
    const created = await call(a.url, "POST", "/api/workflow/create", relaxEach(0.01, 200));
    expect(created.status).toBe(201);
    const cells = [0, 1, 2, 3].map((i) => rattled(3.6 + 0.02 * i, 0.03));
    const run = await call(b.url, "POST", "/api/workflow/run", {
      workflow_id: created.body.id,
      inputs: { cells },
      max_parallel: 4,
    });
    expect(run.status).toBe(202);
    const done = await finished(a.url, run.body.run_id);
    expect(done.run.status).toBe("completed");
    const relax = done.run.nodes.find((n: Json) => n.id === "relax");
    expect(relax.output.results).toHaveLength(4);
    // both workers took jobs (each runs one at a time), and nothing ran twice
    expect(w1.jobs.length + w2.jobs.length).toBe(4);
    expect(new Set([...w1.jobs, ...w2.jobs]).size).toBe(4);
    await recordedOnce(redis.url, run.body.run_id, ["relax:0", "relax:1", "relax:2", "relax:3"]);
  }, 180_000);

  it("a worker killed with SIGKILL mid-job: the job completes on the other worker, recorded once", async () => {
    redis ??= await startRedis();
    const settings = { ATOMSTUDIO_REDIS_URL: redis.url, ATOMSTUDIO_QUEUE_CALCULATORS: "0", ATOMSTUDIO_QUEUE_LOCK_S: "2" };
    const svc = await serve(settings);
    // Both workers are up before the run starts, so the one that takes the job is killed while it
    // runs (a second worker started after the job began could come up after the job had ended).
    const a = await worker(redis.url);
    const b = await worker(redis.url);
    const created = await call(svc.url, "POST", "/api/workflow/create", relaxEach(1e-6, 3000));
    const run = await call(svc.url, "POST", "/api/workflow/run", {
      workflow_id: created.body.id,
      inputs: { cells: [rattled(3.7, 0.08)] },
    });
    const first = await waitFor("the job to start on a worker", async () => [a, b].find((w) => w.jobs.length), 60_000);
    const second = first === a ? b : a;
    first.child.kill("SIGKILL");
    const killedAt = Date.now();
    const done = await finished(svc.url, run.body.run_id);
    expect(done.run.status).toBe("completed");
    expect(second.jobs).toEqual(first.jobs);
    const relax = done.run.nodes.find((n: Json) => n.id === "relax");
    expect(relax.items[0].attempts).toBeGreaterThanOrEqual(2);
    await recordedOnce(redis.url, run.body.run_id, ["relax:0"]);
    console.log(`recovered and finished ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the SIGKILL`);
  }, 180_000);

  it("the service and its embedded Redis restarted mid-workflow: the workflow completes", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "atomstudio-data-"));
    try {
      const settings = { ATOMSTUDIO_DATA_DIR: dataDir, ATOMSTUDIO_QUEUE_LOCK_S: "2" };
      let svc = await serve(settings);
      const created = await call(svc.url, "POST", "/api/workflow/create", relaxEach(0.005, 400));
      const cells = [0, 1, 2, 3, 4, 5].map((i) => rattled(3.55 + 0.03 * i, 0.04));
      const run = await call(svc.url, "POST", "/api/workflow/run", {
        workflow_id: created.body.id,
        inputs: { cells },
        max_parallel: 1,
      });
      await waitFor("the first item to finish", async () => {
        const r = await call(svc.url, "GET", `/api/workflow/${run.body.run_id}`);
        return r.body.run.nodes[0].items?.[0]?.state === "completed" ? true : undefined;
      });
      // stop the service (and its redis-server, which writes its append-only file), start it again
      const exited = new Promise((r) => svc.child.once("exit", r));
      svc.child.kill("SIGTERM");
      await exited;
      svc = await serve(settings);
      const done = await finished(svc.url, run.body.run_id);
      expect(done.run.status).toBe("completed");
      expect(done.run.nodes[0].output.results).toHaveLength(6);
      expect(done.run.nodes[1].output.value).toBe(Math.min(...done.run.nodes[0].output.results.map((r: Json) => r.energy)));
      const url = `unix://${join(dataDir, "redis", "redis.sock")}`;
      await recordedOnce(
        url,
        run.body.run_id,
        [0, 1, 2, 3, 4, 5].map((i) => `relax:${i}`),
      );
      const exited2 = new Promise((r) => svc.child.once("exit", r));
      svc.child.kill("SIGTERM");
      await exited2;
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it("the service killed with SIGKILL while a node runs: a new service on its data directory completes the workflow, each output recorded once", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "atomstudio-data-"));
    const redisPid = () => Number(readFileSync(join(dataDir, "redis", "redis.pid"), "utf8"));
    try {
      const settings = { ATOMSTUDIO_DATA_DIR: dataDir, ATOMSTUDIO_QUEUE_LOCK_S: "2" };
      const first = await serve(settings);
      // a registry operation (the ops queue), a relaxation and an energy (the calc-emt queue), in a chain
      const created = await call(first.url, "POST", "/api/workflow/create", {
        name: "double, relax, energy",
        nodes: [
          { id: "double", type: "supercell", params: { scaling: [2, 1, 1] }, inputs: { structure: "$inputs.cell" } },
          {
            id: "relax",
            type: "optimize_structure",
            params: { calculator: "emt", fmax: 1e-4, max_steps: 2000 },
            inputs: { structure: "double.structure" },
          },
          { id: "energy", type: "energy", params: { calculator: "emt" }, inputs: { structure: "relax.structure" } },
        ],
      });
      expect(created.status).toBe(201);
      const run = await call(first.url, "POST", "/api/workflow/run", {
        workflow_id: created.body.id,
        inputs: { cell: rattled(3.7, 0.08) },
      });
      expect(run.status).toBe(202);
      const node = (body: Json, id: string) => body.run.nodes.find((n: Json) => n.id === id);
      await waitFor("the relaxation to run", async () => {
        const r = await call(first.url, "GET", `/api/workflow/${run.body.run_id}`);
        return node(r.body, "relax").state === "running" ? true : undefined;
      });
      // no shutdown at all: its jobs' locks, the orchestrator's lock and the embedded Redis are left behind
      const killed = new Promise((r) => first.child.once("exit", r));
      first.child.kill("SIGKILL");
      await killed;
      const killedAt = Date.now();
      const second = await serve(settings);
      const upAt = Date.now();
      const done = await finished(second.url, run.body.run_id);
      const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
      console.log(
        `new service listening ${s(upAt - killedAt)} after the SIGKILL, the run finished ${s(Date.now() - killedAt)} after it`,
      );
      expect(done.run.status).toBe("completed");
      expect(done.run.nodes.map((n: Json) => n.state)).toEqual(["completed", "completed", "completed"]);
      // the relaxation started on the killed service and ran again on the new one
      expect(node(done, "relax").attempts).toBeGreaterThanOrEqual(2);
      expect(node(done, "relax").output.structure.sites).toHaveLength(8);
      expect(node(done, "energy").output.energy).toBeCloseTo(node(done, "relax").output.energy, 8);
      await recordedOnce(`unix://${join(dataDir, "redis", "redis.sock")}`, run.body.run_id, ["double:0", "relax:0", "energy:0"]);
      // the new service adopted the embedded Redis the killed one left, and stops it with itself
      const pid = redisPid();
      await second.stop();
      expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      try {
        process.kill(redisPid(), "SIGKILL");
      } catch {
        // already stopped
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
