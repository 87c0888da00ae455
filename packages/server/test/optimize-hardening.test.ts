/**
 * Hardening of the calculator worker, through the real service and the real Python worker:
 * models only from the server-side allowlist (a malicious pickle never runs), a minimal worker
 * environment (no provider key, no token), range checks with codes, the max_steps ceiling, job
 * deadlines, energy jobs cancelled when the client leaves, a bounded queue, no raw worker stderr
 * in error bodies, and results that match the published output schema exactly.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Ajv } from "ajv";
import { fccCluster, runPython } from "atomstudio-testkit";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { hasRedis, startRedis } from "../../studio/test/support.ts";
import type { ServiceConfig } from "../src/config.ts";
import type { ServiceContext } from "../src/context.ts";
import { buildApp } from "../src/http/app.ts";
import { calcQueue } from "../src/jobs/queue.ts";
import { calculatorPool } from "../src/optimize/service.ts";
import { optimizeWsPlugin } from "../src/optimize/ws.ts";
import type { Plugin } from "../src/plugins.ts";
import { workflowPlugin } from "../src/workflow/plugin.ts";
import { cuCell, testConfig, water } from "./helpers.ts";

const cuCluster = (reps: number, jitter = 0.15) => fccCluster(reps, { jitter });
/** A long EMT run: an fmax no optimizer reaches on a 108-atom cluster. */
const longRun = { structure: cuCluster(3), calculator: "emt", fmax: 1e-6, max_steps: 5000 };

/** A 64-atom silicon cluster cut from the crystal: many seconds of GFN2 in the xtb program. */
const si64 = () => {
  const basis = [
    [0, 0, 0],
    [0, 0.5, 0.5],
    [0.5, 0, 0.5],
    [0.5, 0.5, 0],
    [0.25, 0.25, 0.25],
    [0.25, 0.75, 0.75],
    [0.75, 0.25, 0.75],
    [0.75, 0.75, 0.25],
  ] as const;
  const sites = [];
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 2; j++)
      for (let k = 0; k < 2; k++)
        for (const [x, y, z] of basis)
          sites.push({ species: [{ element: "Si", occu: 1 }], xyz: [(i + x) * 5.43, (j + y) * 5.43, (k + z) * 5.43] });
  return { "@class": "Molecule", sites };
};
const hasXtb = (process.env.PATH ?? "").split(":").some((d) => existsSync(join(d, "xtb")));

interface Service {
  app: FastifyInstance;
  ctx: ServiceContext;
  base: string;
  logs: string[];
}
const services: Service[] = [];
/**
 * Where redis-server is installed, rows marked so run twice: on a service without Redis (the
 * direct worker pool) and on one with a real Redis, where every request is a BullMQ job
 * (jobs/calculator-jobs.ts) run by the same pool.
 */
const MODES = hasRedis ? (["direct", "queue"] as const) : (["direct"] as const);
type Mode = (typeof MODES)[number];
const redises: Array<{ stop(): Promise<void> }> = [];

/** A listening service with the optimization socket; its log lines are kept for inspection. */
const start = async (over: Partial<ServiceConfig> = {}, mode: Mode = "direct"): Promise<Service> => {
  if (mode === "queue") {
    // a Redis of its own: services on one Redis share its jobs, whatever their configuration
    const redis = await startRedis();
    redises.push(redis);
    const queueUrl = redis.url;
    const s = await startService({ ...over, queueUrl }, [workflowPlugin(), optimizeWsPlugin]);
    // the service's own pool takes calc-emt once it has listed its calculators
    const queues = s.ctx.services.queue;
    while (!((await queues?.queue(calcQueue("emt")).getWorkersCount()) ?? 0)) await sleep(50);
    return s;
  }
  return startService(over, [optimizeWsPlugin]);
};

const startService = async (over: Partial<ServiceConfig>, plugins: Plugin[]): Promise<Service> => {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const { app, ctx } = await buildApp({
    config: testConfig({ logLevel: "info", ...over }),
    plugins,
    logger: { level: "info", stream },
  });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const s = { app, ctx, base, logs };
  services.push(s);
  return s;
};
afterAll(async () => {
  for (const s of services) await s.app.close();
  for (const r of redises) await r.stop();
});

const call = async (s: Service, path: string, body?: unknown, init: RequestInit = {}) => {
  const res = await fetch(`${s.base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", ...(init.headers ?? {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: init.signal ?? null,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
};

interface Msg {
  type: string;
  [k: string]: unknown;
}
const wsRun = (s: Service, start: unknown, onMessage?: (m: Msg, ws: WebSocket) => void): Promise<Msg[]> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(`${s.base.replace("http", "ws")}/api/optimize/ws`);
    const msgs: Msg[] = [];
    ws.on("open", () => ws.send(JSON.stringify(start)));
    ws.on("message", (raw) => {
      const m = JSON.parse(raw.toString()) as Msg;
      msgs.push(m);
      onMessage?.(m, ws);
      if (["result", "cancelled", "error"].includes(m.type)) {
        ws.close();
        resolve(msgs);
      }
    });
    ws.on("error", reject);
  });

const workerPids = (s: Service): number[] => calculatorPool(s.ctx).workers.map((w) => w.pid as number);
/** Processes still running in a process group (a killed worker's children would be here); zombies are dead. */
const processGroup = (pgid: number): number[] =>
  readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const fields = (readFileSync(`/proc/${e}/stat`, "utf8").split(")").pop() as string).trim().split(/\s+/);
        return Number(fields[2]) === pgid && fields[0] !== "Z";
      } catch {
        return false;
      }
    })
    .map(Number);
/** Wait (a little) for a killed process group to be gone: SIGKILL is not instantaneous. */
const groupGone = async (pgid: number): Promise<number[]> => {
  for (let i = 0; i < 20 && processGroup(pgid).length; i++) await sleep(100);
  return processGroup(pgid);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("models come from the server-side allowlist, by id", () => {
  let dir: string;
  let marker: string;
  let evilFile: string;
  let evilDir: string;
  let s: Service;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "atomstudio-models-"));
    marker = join(dir, "PWNED");
    mkdirSync(join(dir, "models", "chgnet"), { recursive: true });
    // A pickle whose payload creates the marker file; a copy of CHGNet's packaged weights as a site model.
    ({ evilFile, evilDir } = await runPython<{ evilFile: string; evilDir: string }>(
      `
import json, os, pickle, shutil, sys
import chgnet
d = json.load(sys.stdin)
class Payload:
    def __reduce__(self):
        return (open, (d["marker"], "w"))
evil_file = os.path.join(d["dir"], "evil.pth.tar")
with open(evil_file, "wb") as fh:
    pickle.dump({"model": Payload()}, fh)
evil_dir = os.path.join(d["dir"], "evil-m3gnet")
os.makedirs(evil_dir)
json.dump({"@class": "Potential", "@module": "matgl.apps.pes"}, open(os.path.join(evil_dir, "model.json"), "w"))
for name in ("model.pt", "state.pt"):
    shutil.copy(evil_file, os.path.join(evil_dir, name))
packaged = os.path.join(os.path.dirname(chgnet.__file__), "pretrained", "0.3.0")
weights = next(f for f in os.listdir(packaged) if f.endswith(".pth.tar"))
shutil.copy(os.path.join(packaged, weights), os.path.join(d["dir"], "models", "chgnet", "site-copy.pth.tar"))
json.dump({"evilFile": evil_file, "evilDir": evil_dir}, sys.stdout)
`,
      { dir, marker },
    ));
    s = await start({ modelsDir: join(dir, "models") });
  }, 120_000);

  // [calculator, model_path]
  const pathRows: Array<[string, () => string]> = [
    ["chgnet", () => evilFile],
    ["mace", () => evilFile],
    ["m3gnet", () => evilDir],
    ["emt", () => evilFile],
  ];
  it.each(pathRows)("%s with a caller's model_path → 400 MODEL_PATH_NOT_ALLOWED, the pickle never runs", async (calc, path) => {
    for (const [route, extra] of [
      ["/api/optimize/energy", {}],
      ["/api/optimize/structure", { max_steps: 2 }],
    ] as const) {
      const res = await call(s, route, {
        structure: cuCell,
        calculator: calc,
        calculator_params: { model_path: path() },
        ...extra,
      });
      expect([res.status, res.body.code]).toEqual([400, "MODEL_PATH_NOT_ALLOWED"]);
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("the WebSocket refuses model_path the same way", async () => {
    const msgs = await wsRun(s, {
      action: "start",
      structure: cuCell,
      calculator: "chgnet",
      calculator_params: { model_path: evilFile },
    });
    expect(msgs.at(-1)).toMatchObject({ type: "error", code: "MODEL_PATH_NOT_ALLOWED" });
    expect(existsSync(marker)).toBe(false);
  });

  // [model id a caller tries]
  const idRows: Array<[string]> = [["nope"], ["../evil"], ["evil.pth.tar"], ["0.3.0/../../evil"], ["ABSOLUTE"]];
  it.each(idRows)("unknown model id %s → 400 UNKNOWN_MODEL listing the available ids", async (id) => {
    const model = id === "ABSOLUTE" ? evilFile : id;
    const res = await call(s, "/api/optimize/energy", { structure: cuCell, calculator: "chgnet", calculator_params: { model } });
    expect([res.status, res.body.code]).toEqual([400, "UNKNOWN_MODEL"]);
    expect((res.body.details as { available: string[] }).available).toEqual(
      expect.arrayContaining(["0.3.0", "0.2.0", "site-copy"]),
    );
    expect(existsSync(marker)).toBe(false);
  });

  it("the listing names the allowlisted models, and a site model loads by id", async () => {
    const res = await call(s, "/api/optimize/calculators");
    const calcs = res.body.calculators as Array<{
      id: string;
      models?: Array<{ id: string; source: string; default: boolean }> | null;
    }>;
    const chgnet = calcs.find((c) => c.id === "chgnet");
    expect(chgnet?.models).toEqual(
      expect.arrayContaining([
        { id: "0.3.0", source: "package", default: true },
        { id: "site-copy", source: "models_dir", default: false },
      ]),
    );
    expect(calcs.find((c) => c.id === "emt")?.models ?? null).toBeNull();
    const site = await call(s, "/api/optimize/energy", {
      structure: cuCell,
      calculator: "chgnet",
      calculator_params: { model: "site-copy" },
    });
    const packaged = await call(s, "/api/optimize/energy", { structure: cuCell, calculator: "chgnet" });
    expect([site.status, packaged.status]).toEqual([200, 200]);
    expect(Math.abs((site.body.energy as number) - (packaged.body.energy as number))).toBeLessThan(1e-6);
  }, 120_000);
});

describe("the worker's environment is minimal", () => {
  const secrets = {
    ANTHROPIC_API_KEY: "sk-ant-test-0123456789abcdef",
    OPENAI_API_KEY: "sk-test-0123456789abcdef",
    DEEPSEEK_API_KEY: "sk-deepseek-0123456789",
    GEMINI_API_KEY: "AIzaTest0123456789abcdefghij",
    ATOMSTUDIO_TOKEN: "service-token-0123456789",
    AWS_SECRET_ACCESS_KEY: "aws-secret-0123456789",
  };
  it("no provider key and no service token reach the worker process", async () => {
    const s = await start({
      token: secrets.ATOMSTUDIO_TOKEN,
      environment: { ...process.env, ...secrets },
      modelsDir: "/srv/models",
    });
    const res = await call(
      s,
      "/api/optimize/energy",
      { structure: cuCluster(1), calculator: "emt" },
      { headers: { authorization: `Bearer ${secrets.ATOMSTUDIO_TOKEN}` } },
    );
    expect(res.status).toBe(200);
    const [pid] = workerPids(s);
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
    const env = Object.fromEntries(
      environ
        .split("\0")
        .filter(Boolean)
        .map((kv) => [kv.split("=")[0], kv.slice(kv.indexOf("=") + 1)]),
    );
    for (const [name, value] of Object.entries(secrets)) {
      expect(env[name]).toBeUndefined();
      expect(environ).not.toContain(value);
    }
    expect(env.PATH).toBeTruthy();
    expect(env.OMP_NUM_THREADS).toBeTruthy();
    expect(env.ATOMSTUDIO_MODELS_DIR).toBe("/srv/models");
    expect(env.HF_HUB_OFFLINE).toBe("1");
  });
});

describe.each(MODES)("range checks on well-formed bodies are coded 400s; the wrong shape is 422 (%s)", (mode) => {
  let s: Service;
  beforeAll(async () => {
    s = await start({ maxSteps: 500 }, mode);
  }, 60_000);
  // [condition, status, code, extra body fields]
  const rows: Array<[string, number, string, Record<string, unknown>]> = [
    ["unknown optimizer", 400, "UNKNOWN_OPTIMIZER", { optimizer: "newton" }],
    ["fmax 0", 400, "INVALID_FMAX", { fmax: 0 }],
    ["fmax negative", 400, "INVALID_FMAX", { fmax: -0.1 }],
    ["max_steps 0", 400, "INVALID_MAX_STEPS", { max_steps: 0 }],
    ["max_steps negative", 400, "INVALID_MAX_STEPS", { max_steps: -5 }],
    ["max_steps above the configured ceiling", 400, "INVALID_MAX_STEPS", { max_steps: 501 }],
    ["max_steps of a billion", 400, "INVALID_MAX_STEPS", { max_steps: 1e9 }],
    ["delta0 not positive", 400, "INVALID_OPTIMIZER_PARAMS", { optimizer: "tr_min", optimizer_params: { delta0: 0 } }],
    ["max_steps not an integer", 422, "MALFORMED_REQUEST", { max_steps: 2.5 }],
    ["fmax not a number", 422, "MALFORMED_REQUEST", { fmax: "small" }],
    ["optimizer not a string", 422, "MALFORMED_REQUEST", { optimizer: 3 }],
  ];
  it.each(rows)("%s → %i %s", async (_c, status, code, extra) => {
    const res = await call(s, "/api/optimize/structure", { structure: cuCluster(1), calculator: "emt", ...extra });
    expect([res.status, res.body.code]).toEqual([status, code]);
  });

  it("the ceiling applies to the WebSocket too, before any step", async () => {
    const msgs = await wsRun(s, { action: "start", structure: cuCluster(1), calculator: "emt", max_steps: 10_000 });
    expect(msgs).toHaveLength(1);
    expect(msgs[0]).toMatchObject({ type: "error", code: "INVALID_MAX_STEPS" });
  });

  it("max_steps at the ceiling is accepted", async () => {
    const res = await call(s, "/api/optimize/structure", { structure: cuCluster(1), calculator: "emt", max_steps: 500 });
    expect(res.status).toBe(200);
  });
});

describe("job deadlines", () => {
  it.each(MODES)(
    "an optimization past its deadline is cancelled: 504 DEADLINE_EXCEEDED, the worker keeps serving (%s)",
    async (mode) => {
      const s = await start({ jobDeadlineMs: 1500, cancelGraceMs: 3000 }, mode);
      await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" }); // a warm worker
      const before = workerPids(s);
      const t = Date.now();
      const res = await call(s, "/api/optimize/structure", longRun);
      expect([res.status, res.body.code]).toEqual([504, "DEADLINE_EXCEEDED"]);
      expect(Date.now() - t).toBeLessThan(15_000);
      expect(workerPids(s)).toEqual(before); // it stopped between two steps: no kill needed
      const again = await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
      expect(again.status).toBe(200);
    },
    60_000,
  );

  it.each(MODES)(
    "the WebSocket gets the same error (%s)",
    async (mode) => {
      const s = await start({ jobDeadlineMs: 1000 }, mode);
      const msgs = await wsRun(s, { action: "start", ...longRun });
      expect(msgs.at(-1)).toMatchObject({ type: "error", code: "DEADLINE_EXCEEDED" });
    },
    60_000,
  );

  it.skipIf(!hasXtb)(
    "a job that does not stop is killed after the grace period, with the programs it started",
    async () => {
      // the deadline covers a fresh worker's start too: long enough for that on a busy machine
      const s = await start({ jobDeadlineMs: 5000, cancelGraceMs: 1000 });
      await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
      const [old] = workerPids(s) as [number];
      const t = Date.now();
      const pending = call(s, "/api/optimize/energy", {
        structure: si64(),
        calculator: "gfn2",
        calculator_params: { engine: "xtb" },
      });
      // the worker and the xtb program it started share the worker's process group
      let largestGroup = 0;
      while (Date.now() - t < 4000 && largestGroup < 2) {
        largestGroup = Math.max(largestGroup, processGroup(old).length);
        await sleep(100);
      }
      expect(largestGroup).toBe(2);
      const res = await pending;
      expect([res.status, res.body.code]).toEqual([504, "DEADLINE_EXCEEDED"]);
      expect(Date.now() - t).toBeLessThan(15_000);
      expect(await groupGone(old)).toEqual([]); // the worker and its xtb are gone
      const next = await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
      expect(next.status).toBe(200);
      expect(workerPids(s)).not.toContain(old);
    },
    60_000,
  );
});

describe("energy requests are cancelled when the client goes away", () => {
  it("a queued energy request leaves the queue", async () => {
    const s = await start();
    const long = wsRun(s, { action: "start", ...longRun });
    await sleep(1500);
    const abort = new AbortController();
    const pending = call(
      s,
      "/api/optimize/energy",
      { structure: cuCluster(1), calculator: "emt" },
      { signal: abort.signal },
    ).catch((e: Error) => e);
    await sleep(500);
    expect(calculatorPool(s.ctx).queued).toBe(1);
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
    await sleep(300);
    expect(calculatorPool(s.ctx).queued).toBe(0);
    for (const w of calculatorPool(s.ctx).workers) w.kill();
    await long;
  }, 60_000);

  it.skipIf(!hasXtb)(
    "a running energy calculation whose client left is stopped (the worker killed after the grace period)",
    async () => {
      const s = await start({ cancelGraceMs: 1000 });
      await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
      const [old] = workerPids(s) as [number];
      const abort = new AbortController();
      const pending = call(
        s,
        "/api/optimize/energy",
        { structure: si64(), calculator: "gfn2", calculator_params: { engine: "xtb" } },
        { signal: abort.signal },
      ).catch((e: Error) => e);
      await sleep(1500);
      abort.abort();
      await pending;
      const t = Date.now();
      const next = await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
      expect(next.status).toBe(200);
      expect(Date.now() - t).toBeLessThan(10_000);
      expect(await groupGone(old)).toEqual([]);
    },
    60_000,
  );
});

describe("the queue is bounded", () => {
  it("beyond ATOMSTUDIO_QUEUE_MAX waiting jobs: 429 QUEUE_FULL with Retry-After", async () => {
    const s = await start({ queueMax: 1 });
    const running = wsRun(s, { action: "start", ...longRun });
    await sleep(1500);
    const waiting = wsRun(s, { action: "start", structure: cuCluster(1), calculator: "emt" });
    await sleep(500);
    const res = await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
    expect([res.status, res.body.code]).toEqual([429, "QUEUE_FULL"]);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const ws = await wsRun(s, { action: "start", structure: cuCluster(1), calculator: "emt" });
    expect(ws.at(-1)).toMatchObject({ type: "error", code: "QUEUE_FULL" });
    // the listing does not queue behind the work
    const listing = await call(s, "/api/optimize/calculators");
    expect((listing.body.calculators as Array<{ id: string; available: boolean }>).find((c) => c.id === "emt")?.available).toBe(
      true,
    );
    for (const w of calculatorPool(s.ctx).workers) w.kill();
    await running;
    expect((await waiting).at(-1)?.type).toBe("result");
  }, 60_000);
});

describe("a dead worker's stderr stays in the server log", () => {
  it.each(MODES)(
    "WORKER_DIED carries a short fixed message, no stderr; the log has it (%s)",
    async (mode) => {
      const s = await start({ workerLogLevel: "INFO" }, mode);
      const msgs = await wsRun(s, { action: "start", ...longRun }, (m) => {
        if (m.type === "step") for (const w of calculatorPool(s.ctx).workers) w.kill();
      });
      const last = msgs.at(-1) as Msg;
      expect(last).toMatchObject({ type: "error", code: "WORKER_DIED" });
      expect(JSON.stringify(last)).not.toContain("atomstudio-worker ");
      expect(last.details).toBeUndefined();
      expect((last.error as string).length).toBeLessThan(200);
      await sleep(200);
      const log = s.logs.join("");
      expect(log).toContain("calculator worker: exited (SIGKILL)");
      expect(log).toContain("atomstudio-worker "); // the worker's own stderr lines, in the log only
      const next = await call(s, "/api/optimize/energy", { structure: cuCluster(1), calculator: "emt" });
      expect(next.status).toBe(200);
    },
    60_000,
  );
});

describe("results match the published output schema exactly", () => {
  it.each(MODES)(
    "optimizations and energies validate strictly against /api/openapi.json (%s)",
    async (mode) => {
      const s = await start({}, mode);
      const doc = (await call(s, "/api/openapi.json")).body as {
        paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: object }> }> }>>;
      };
      const schemaOf = (path: string) => doc.paths[path]?.post?.responses["200"]?.content["application/json"]?.schema as object;
      const ajv = new Ajv({ strict: false, allErrors: true });
      const optimize = ajv.compile(schemaOf("/api/optimize/structure"));
      const energy = ajv.compile(schemaOf("/api/optimize/energy"));
      // [route, body, validator]
      const rows: Array<[string, Record<string, unknown>, typeof optimize]> = [
        ["/api/optimize/structure", { structure: cuCluster(1), calculator: "emt", max_steps: 5 }, optimize],
        [
          "/api/optimize/structure",
          { structure: cuCluster(1), calculator: "emt", max_steps: 3, return_trajectory: true },
          optimize,
        ],
        ["/api/optimize/structure", { structure: cuCell, calculator: "emt", optimize_cell: true, max_steps: 3 }, optimize],
        ["/api/optimize/energy", { structure: cuCell, calculator: "emt" }, energy],
        ["/api/optimize/energy", { structure: water, calculator: "emt" }, energy],
      ];
      for (const [route, body, validate] of rows) {
        const res = await call(s, route, body);
        expect(res.status).toBe(200);
        const ok = validate(res.body);
        expect(validate.errors ?? [], `${route} ${JSON.stringify(body).slice(0, 80)}`).toEqual([]);
        expect(ok).toBe(true);
      }
    },
    60_000,
  );
});
