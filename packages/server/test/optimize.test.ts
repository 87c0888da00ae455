/**
 * Optimization through the real Python worker: listing, ASE conformance through the service,
 * frozen atoms, the WebSocket protocol, queueing, cancel, close, a killed worker, error rows.
 */
import type { AtomStudioError } from "atomstudio-core";
import { fccCluster, runPython } from "atomstudio-testkit";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { hasRedis, startRedis } from "../../studio/test/support.ts";
import type { ServiceContext } from "../src/context.ts";
import { buildApp } from "../src/http/app.ts";
import { calcQueue } from "../src/jobs/queue.ts";
import { WorkerPool } from "../src/optimize/pool.ts";
import { calculatorPool, workerEnvironment } from "../src/optimize/service.ts";
import { WorkerProcess, workerPython } from "../src/optimize/worker.ts";
import { optimizeWsPlugin } from "../src/optimize/ws.ts";
import { JsonText } from "../src/registry/json-text.ts";
import { workflowPlugin } from "../src/workflow/plugin.ts";
import { testConfig } from "./helpers.ts";

const cuCluster = (reps: number, jitter = 0.15) => fccCluster(reps, { jitter });

let app: FastifyInstance;
let ctx: ServiceContext;
let base: string;
/**
 * The HTTP rows run twice where redis-server is installed: on a service without Redis (the
 * direct worker pool) and on one with a real Redis, where every request is a BullMQ job
 * (jobs/calculator-jobs.ts) and the answer carries its job_id.
 */
const MODES = hasRedis ? (["direct", "queue"] as const) : (["direct"] as const);
type Mode = (typeof MODES)[number];
const bases: Partial<Record<Mode, string>> = {};
let queueApp: FastifyInstance | undefined;
let redis: { stop(): Promise<void> } | undefined;
beforeAll(async () => {
  ({ app, ctx } = await buildApp({ config: testConfig(), plugins: [optimizeWsPlugin] }));
  base = await app.listen({ host: "127.0.0.1", port: 0 });
  bases.direct = base;
  if (hasRedis) {
    const r = await startRedis();
    redis = r;
    const built = await buildApp({ config: testConfig({ queueUrl: r.url }), plugins: [workflowPlugin(), optimizeWsPlugin] });
    queueApp = built.app;
    bases.queue = await built.app.listen({ host: "127.0.0.1", port: 0 });
    // the service's own pool takes calc-emt once it has listed its calculators
    const queues = built.ctx.services.queue;
    while (!((await queues?.queue(calcQueue("emt")).getWorkersCount()) ?? 0)) await new Promise((r) => setTimeout(r, 50));
  }
}, 60_000);
afterAll(async () => {
  await app.close();
  await queueApp?.close();
  await redis?.stop();
});

const post = async (path: string, body: unknown, mode: Mode = "direct") => {
  const res = await fetch(`${bases[mode]}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

const wsOf = (mode: Mode) => (bases[mode] as string).replace("http", "ws");

interface Msg {
  type: string;
  [k: string]: unknown;
}
/** Open the optimization socket, send `start`, collect messages until a final one. */
const wsRun = (start: unknown, onMessage?: (m: Msg, ws: WebSocket) => void, mode: Mode = "direct"): Promise<Msg[]> =>
  new Promise((resolve, reject) => {
    const ws = new WebSocket(`${wsOf(mode)}/api/optimize/ws`);
    const msgs: Msg[] = [];
    ws.on("open", () => ws.send(typeof start === "string" ? start : JSON.stringify(start)));
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

describe("calculator listing", () => {
  it("lists every calculator of the interface with real availability", async () => {
    const res = await fetch(`${base}/api/optimize/calculators`);
    const body = (await res.json()) as {
      calculators: Array<{ id: string; available: boolean; status_message: string | null; runs_in?: string }>;
      optimizers: Array<{ id: string; available: boolean }>;
    };
    expect(body.calculators.map((c) => c.id).sort()).toEqual([
      "chgnet",
      "emt",
      "gfn0",
      "gfn1",
      "gfn2",
      "gfnff",
      "m3gnet",
      "mace",
      "uff",
    ]);
    const byId = Object.fromEntries(body.calculators.map((c) => [c.id, c]));
    expect(byId.emt?.available).toBe(true);
    expect(byId.uff).toMatchObject({ available: true, runs_in: "browser", supports_pbc: false });
    for (const c of body.calculators) if (!c.available) expect(c.status_message).toBeTruthy();
    expect(body.optimizers.find((o) => o.id === "bfgs")?.available).toBe(true);
  });
});

describe.each(MODES)("conformance with ASE run directly (%s)", (mode) => {
  it("EMT single point and BFGS relaxation equal ASE's", async () => {
    const cluster = cuCluster(1);
    const energy = await post("/api/optimize/energy", { structure: cluster, calculator: "emt" }, mode);
    expect(energy.status).toBe(200);
    const opt = await post(
      "/api/optimize/structure",
      {
        structure: cluster,
        calculator: "emt",
        optimizer: "bfgs",
        fmax: 0.01,
        max_steps: 300,
      },
      mode,
    );
    expect(opt.status).toBe(200);
    // through BullMQ exactly when the service has a queue
    for (const body of [energy.body, opt.body])
      if (mode === "queue") expect(body.job_id).toMatch(/^j-emt-/);
      else expect(body.job_id).toBeUndefined();
    const ase = await runPython<{ e0: number; e: number; pos: number[][] }>(
      `
import json, sys
from ase import Atoms
from ase.calculators.emt import EMT
from ase.optimize import BFGS
d = json.load(sys.stdin)
atoms = Atoms([s["species"][0]["element"] for s in d["sites"]], positions=[s["xyz"] for s in d["sites"]])
atoms.calc = EMT()
e0 = atoms.get_potential_energy()
BFGS(atoms, logfile=None).run(fmax=0.01, steps=300)
json.dump({"e0": e0, "e": atoms.get_potential_energy(), "pos": atoms.positions.tolist()}, sys.stdout)
`,
      cluster,
    );
    expect(Math.abs((energy.body.energy as number) - ase.e0)).toBeLessThan(1e-6);
    expect(opt.body.converged).toBe(true);
    expect(Math.abs((opt.body.energy as number) - ase.e)).toBeLessThan(1e-6);
    const sites = (opt.body.structure as { sites: Array<{ xyz: number[]; properties: { forces?: number[] } }> }).sites;
    for (const [i, s] of sites.entries())
      for (const [j, v] of s.xyz.entries()) expect(Math.abs(v - (ase.pos[i]?.[j] as number))).toBeLessThan(1e-5);
    expect(sites[0]?.properties.forces).toHaveLength(3);
  });

  it("frozen atoms do not move at all", async () => {
    const cluster = cuCluster(1, 0.25);
    const frozen = [0, 2];
    const opt = await post(
      "/api/optimize/structure",
      {
        structure: cluster,
        calculator: "emt",
        frozen_atoms: frozen,
        max_steps: 50,
      },
      mode,
    );
    expect(opt.status).toBe(200);
    const sites = (opt.body.structure as { sites: Array<{ xyz: number[] }> }).sites;
    for (const i of frozen) expect(sites[i]?.xyz).toEqual(cluster.sites[i]?.xyz);
    expect(sites[1]?.xyz).not.toEqual(cluster.sites[1]?.xyz);
  });

  it("GET /api/optimize/energy takes the structure as a JSON query parameter", async () => {
    const q = new URLSearchParams({ structure: JSON.stringify(cuCluster(1)), calculator: "emt" });
    const res = await fetch(`${bases[mode]}/api/optimize/energy?${q}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { energy: number; forces: number[][] };
    expect(body.forces).toHaveLength(4);
  });
});

describe.each(MODES)("WebSocket protocol (%s)", (mode) => {
  it("streams one step per step, in order, then the result", async () => {
    const msgs = await wsRun({ action: "start", structure: cuCluster(1), calculator: "emt", fmax: 0.01 }, undefined, mode);
    const steps = msgs.filter((m) => m.type === "step");
    expect(steps.length).toBeGreaterThan(2);
    steps.forEach((s, i) => {
      expect(s.step).toBe(i);
      expect(Object.keys(s).sort()).toEqual(["converged", "energy", "fmax", "step", "structure", "type"]);
    });
    expect(steps.at(-1)?.converged).toBe(true);
    const last = msgs.at(-1) as Msg;
    expect(last.type).toBe("result");
    expect(last.converged).toBe(true);
    // through BullMQ exactly when the service has a queue: the result names its job
    if (mode === "queue") expect(last.job_id).toMatch(/^j-emt-/);
    else expect(last.job_id).toBeUndefined();
  });

  it("cancel stops the run", async () => {
    let sent = false;
    const msgs = await wsRun(
      { action: "start", structure: cuCluster(3), calculator: "emt", fmax: 1e-6, max_steps: 5000 },
      (m, ws) => {
        if (m.type === "step" && !sent) {
          sent = true;
          ws.send(JSON.stringify({ action: "cancel" }));
        }
      },
      mode,
    );
    expect(msgs.at(-1)?.type).toBe("cancelled");
    expect(msgs.filter((m) => m.type === "step").length).toBeLessThan(5000);
  });

  it("closing the socket mid-run cancels it and frees the worker", async () => {
    await new Promise<void>((resolve) => {
      const ws = new WebSocket(`${wsOf(mode)}/api/optimize/ws`);
      ws.on("open", () =>
        ws.send(JSON.stringify({ action: "start", structure: cuCluster(3), calculator: "emt", fmax: 1e-6, max_steps: 5000 })),
      );
      ws.on("message", () => {
        ws.terminate();
        resolve();
      });
    });
    const t = Date.now();
    const msgs = await wsRun({ action: "start", structure: cuCluster(1), calculator: "emt" }, undefined, mode);
    expect(msgs.at(-1)?.type).toBe("result");
    expect(Date.now() - t).toBeLessThan(20_000);
  });

  // [message, code]
  const malformed: Array<[string, string]> = [
    ["not json", "MALFORMED_REQUEST"],
    [JSON.stringify({ action: "jump" }), "MALFORMED_REQUEST"],
    [JSON.stringify({ action: "start", calculator: "emt" }), "MALFORMED_REQUEST"],
    [JSON.stringify({ action: "start", structure: cuCluster(1), calculator: "emt", fmax: "small" }), "MALFORMED_REQUEST"],
    [JSON.stringify({ action: "start", structure: cuCluster(1), calculator: "nope" }), "UNKNOWN_CALCULATOR"],
  ];
  it.each(malformed)("start message %s → error %s", async (message, code) => {
    const msgs = await wsRun(message, undefined, mode);
    expect(msgs.at(-1)).toMatchObject({ type: "error", code });
  });
});

describe("errors and faults", () => {
  // [condition, body, status, code]
  const rows: Array<[string, Record<string, unknown>, number, string]> = [
    ["unknown calculator", { structure: cuCluster(1), calculator: "dft-please" }, 400, "UNKNOWN_CALCULATOR"],
    ["calculator running in the browser", { structure: cuCluster(1), calculator: "uff" }, 400, "CALCULATOR_UNAVAILABLE"],
    [
      "unsupported elements (EMT with Li)",
      {
        structure: {
          "@class": "Molecule",
          sites: [
            { species: "Li", xyz: [0, 0, 0] },
            { species: "Li", xyz: [0, 0, 2.7] },
          ],
        },
        calculator: "emt",
      },
      400,
      "UNSUPPORTED_ELEMENTS",
    ],
    ["frozen index out of bounds", { structure: cuCluster(1), calculator: "emt", frozen_atoms: [99] }, 400, "INVALID_INDEX"],
    ["bad structure", { structure: { sites: 3 }, calculator: "emt" }, 400, "INVALID_STRUCTURE"],
    ["missing calculator", { structure: cuCluster(1) }, 422, "MALFORMED_REQUEST"],
  ];
  describe.each(MODES)("%s", (mode) => {
    it.each(rows)("%s → %i %s", async (_c, body, status, code) => {
      const res = await post("/api/optimize/structure", body, mode);
      expect([res.status, res.body.code]).toEqual([status, code]);
    });
  });

  it("a worker killed mid-run gives an error event, and the next run succeeds", async () => {
    let killed = false;
    const msgs = await wsRun(
      { action: "start", structure: cuCluster(3), calculator: "emt", fmax: 1e-6, max_steps: 5000 },
      (m) => {
        if (m.type === "step" && !killed) {
          killed = true;
          for (const w of calculatorPool(ctx).workers) w.kill();
        }
      },
    );
    expect(msgs.at(-1)).toMatchObject({ type: "error", code: "WORKER_DIED" });
    const next = await wsRun({ action: "start", structure: cuCluster(1), calculator: "emt" });
    expect(next.at(-1)?.type).toBe("result");
  });

  it.each(MODES)("runs beyond the pool wait in a queue and say so (%s)", async (mode) => {
    const long = wsRun(
      { action: "start", structure: cuCluster(3), calculator: "emt", fmax: 1e-6, max_steps: 40 },
      undefined,
      mode,
    );
    await new Promise((r) => setTimeout(r, 300));
    const second = await wsRun({ action: "start", structure: cuCluster(1), calculator: "emt" }, undefined, mode);
    expect(second[0]).toMatchObject({ type: "queued", position: 1 });
    expect(second.at(-1)?.type).toBe("result");
    expect((await long).at(-1)?.type).toBe("result");
  });

  it("a cancel that arrives after its job settled does not kill the worker's next job", async () => {
    // graceMs 0, as the analysis pool: a stop kills at once. A client that leaves just as its
    // answer arrives must not take down the job the worker started next (it answered 502 WORKER_DIED).
    const pool = new WorkerPool(1, () => new WorkerProcess(workerPython(), workerEnvironment(testConfig())), {
      graceMs: 0,
    });
    try {
      const params = { structure: cuCluster(1), calculator: "emt", calculator_params: {} };
      const first = pool.run<{ energy: number }>("energy", params);
      await first.result;
      const second = pool.run<{ energy: number }>("optimize", { ...params, fmax: 1e-3, max_steps: 30 });
      first.cancel();
      expect((await second.result).energy).toBeTypeOf("number");
    } finally {
      await pool.close();
    }
  });

  // [method, params, answer as text?]: a success asked as text is the worker's JSON of the result
  // (what an HTTP route sends as is); an error is still an error, however it was asked
  const textRows: Array<[string, Record<string, unknown>, boolean]> = [
    ["energy", { structure: cuCluster(1), calculator: "emt", calculator_params: {} }, true],
    ["energy", { structure: cuCluster(1), calculator: "no-such-calculator", calculator_params: {} }, false],
  ];
  it.each(textRows)("%s asked for its answer as text (row %#)", async (method, params, succeeds) => {
    const worker = new WorkerProcess(workerPython(), workerEnvironment(testConfig()));
    try {
      const parsed = await worker.request(method, params).result.catch((e: Error) => e);
      const text = await worker.request(method, params, undefined, true).result.catch((e: Error) => e);
      if (!succeeds) {
        expect(text).toBeInstanceOf(Error);
        expect((text as AtomStudioError).code).toBe((parsed as AtomStudioError).code);
        return;
      }
      expect(text).toBeInstanceOf(JsonText);
      expect(JSON.parse((text as JsonText).text)).toEqual(parsed);
    } finally {
      await worker.shutdown();
    }
  });

  it("missing Sella → 400 OPTIMIZER_UNAVAILABLE with the install command", async () => {
    const config = testConfig();
    const { app: noSella, ctx } = await buildApp({ config, plugins: [] });
    ctx.services.calculatorPool = new WorkerPool(
      1,
      () => new WorkerProcess(workerPython(), { ...workerEnvironment(config), ATOMSTUDIO_WORKER_HIDE_MODULES: "sella" }),
    );
    for (const optimizer of ["tr_min", "tr_ts", "irc"]) {
      const res = await noSella.inject({
        method: "POST",
        url: "/api/optimize/structure",
        payload: { structure: cuCluster(1), calculator: "emt", optimizer },
      });
      expect([res.statusCode, res.json().code]).toEqual([400, "OPTIMIZER_UNAVAILABLE"]);
      expect(res.json().error).toMatch(/pip install/);
    }
    await noSella.close();
  });
});
