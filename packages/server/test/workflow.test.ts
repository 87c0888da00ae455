/**
 * Workflows on a real queue (README "Workflows"): a real redis-server on a loopback port, the
 * real service (HTTP on loopback) with its real calculator worker. Error rows, caps, the fan-out
 * workflow against the same steps run one by one, idempotency, 409, cancel, and Redis down.
 */

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasRedis, startRedis } from "../../studio/test/support.ts";
import { buildApp } from "../src/http/app.ts";
import { mcpPlugin } from "../src/mcp/http.ts";
import { operations } from "../src/operations/index.ts";
import { openApiDocument } from "../src/registry/openapi.ts";
import { workflowPlugin } from "../src/workflow/plugin.ts";
import { responseValidator } from "./contract-support.ts";
import { testConfig } from "./helpers.ts";

/** A JSON answer, read field by field by the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions check the shape
type Json = any;

const validate = responseValidator(openApiDocument(operations));

const cu = (a: number) => ({
  "@class": "Structure",
  lattice: {
    matrix: [
      [0, a / 2, a / 2],
      [a / 2, 0, a / 2],
      [a / 2, a / 2, 0],
    ],
  },
  sites: [{ species: [{ element: "Cu", occu: 1 }], abc: [0, 0, 0] }],
});

/**
 * 256 Cu atoms (fcc 4×4×4), displaced: an EMT relaxation to fmax 1e-9 takes seconds even on an
 * idle machine (32 atoms relaxed within a second once the machine was quiet), far beyond the
 * half-second deadline of the row that uses it.
 */
const slowCell = {
  "@class": "Structure",
  lattice: {
    matrix: [
      [14.4, 0, 0],
      [0, 14.4, 0],
      [0, 0, 14.4],
    ],
  },
  sites: Array.from({ length: 256 }, (_, n) => {
    const [i, j, k, b] = [n % 4, Math.floor(n / 4) % 4, Math.floor(n / 16) % 4, Math.floor(n / 64)];
    const basis = [
      [0, 0, 0],
      [0.5, 0.5, 0],
      [0.5, 0, 0.5],
      [0, 0.5, 0.5],
    ][b] as number[];
    const jitter = ((n * 37) % 11) / 1000;
    return {
      species: [{ element: "Cu", occu: 1 }],
      abc: [(i + (basis[0] as number)) / 4 + jitter, (j + (basis[1] as number)) / 4, (k + (basis[2] as number)) / 4 - jitter],
    };
  }),
};

interface Service {
  url: string;
  close(): Promise<void>;
}

const serve = async (over: Parameters<typeof testConfig>[0]): Promise<Service> => {
  const { app } = await buildApp({ config: testConfig(over), plugins: [workflowPlugin(), mcpPlugin] });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
};

const call = async (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, Json> };
};

/** Poll the status until the run is finished. */
const finished = async (base: string, id: string, timeoutMs = 60_000) => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(base, "GET", `/api/workflow/${id}`);
    if (r.body.run && !["queued", "running"].includes(r.body.run.status)) return r.body;
    if (Date.now() > end) throw new Error(`run not finished: ${JSON.stringify(r.body.run?.nodes?.map((n: Json) => n.state))}`);
    await new Promise((res) => setTimeout(res, 100));
  }
};

const fanOut = {
  name: "strained Cu cells, relaxed with EMT, the lowest kept",
  nodes: [
    { id: "cells", type: "build_supercell_legacy", params: { scaling: "2x1x1" }, inputs: { structures: "$inputs.cells" } },
    {
      id: "relax",
      type: "map",
      params: { operation: "energy", params: { calculator: "emt" } },
      inputs: { items: "cells.structures" },
    },
    { id: "best", type: "select", params: { by: "energy", order: "min" }, inputs: { items: "relax.results" } },
  ],
};

describe("workflow routes without Redis", () => {
  let svc: Service;
  beforeAll(async () => {
    svc = await serve({ queueUrl: undefined });
  });
  afterAll(() => svc?.close());
  it.each([
    ["create", "POST", "/api/workflow/create", fanOut],
    ["run", "POST", "/api/workflow/run", { workflow_id: "wf_x" }],
    ["status", "GET", "/api/workflow/wf_x", undefined],
    ["cancel", "POST", "/api/workflow/cancel", { id: "run_x" }],
  ])("%s answers 503 QUEUE_UNAVAILABLE", async (_n, method, path, body) => {
    const r = await call(svc.url, method, path, body);
    expect(r.status).toBe(503);
    expect(r.body.code).toBe("QUEUE_UNAVAILABLE");
  });
  it("everything else works", async () => {
    expect((await call(svc.url, "GET", "/api/health")).status).toBe(200);
    const r = await call(svc.url, "POST", "/api/structure-build/supercell", { structure: cu(3.6), scaling: [2, 1, 1] });
    expect(r.status).toBe(200);
    expect(r.body.n_atoms).toBe(2);
  });
});

describe.skipIf(!hasRedis)("workflows on a real Redis", () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let svc: Service;
  beforeAll(async () => {
    redis = await startRedis();
    svc = await serve({ queueUrl: redis.url, redisUrl: undefined });
  }, 30_000);
  afterAll(async () => {
    await svc?.close();
    await redis?.stop();
  });

  it.each([
    ["unknown node type", { name: "w", nodes: [{ id: "a", type: "no_such_op" }] }, 400, "UNKNOWN_NODE_TYPE"],
    [
      "map over an unknown operation",
      { name: "w", nodes: [{ id: "a", type: "map", params: { operation: "nope" }, inputs: { items: "$inputs.x" } }] },
      400,
      "UNKNOWN_NODE_TYPE",
    ],
    [
      "cycle",
      {
        name: "w",
        nodes: [
          { id: "a", type: "supercell", inputs: { structure: "b.structure" } },
          { id: "b", type: "supercell", inputs: { structure: "a.structure" } },
        ],
      },
      400,
      "CYCLE_DETECTED",
    ],
    [
      "self reference",
      { name: "w", nodes: [{ id: "a", type: "supercell", inputs: { structure: "a.structure" } }] },
      400,
      "CYCLE_DETECTED",
    ],
    [
      "dangling reference",
      { name: "w", nodes: [{ id: "a", type: "supercell", inputs: { structure: "ghost.structure" } }] },
      400,
      "DANGLING_REFERENCE",
    ],
    [
      "reference without a field",
      { name: "w", nodes: [{ id: "a", type: "supercell", inputs: { structure: "b" } }] },
      400,
      "DANGLING_REFERENCE",
    ],
    [
      "duplicate ids",
      {
        name: "w",
        nodes: [
          { id: "a", type: "supercell" },
          { id: "a", type: "supercell" },
        ],
      },
      400,
      "DUPLICATE_NODE_ID",
    ],
    [
      "select without by",
      { name: "w", nodes: [{ id: "s", type: "select", inputs: { items: "$inputs.x" } }] },
      400,
      "INVALID_NODE_PARAMS",
    ],
    ["retries over the cap", { name: "w", nodes: [{ id: "a", type: "supercell", retries: 11 }] }, 400, "INVALID_NODE_PARAMS"],
    [
      "too many nodes",
      { name: "w", nodes: Array.from({ length: 65 }, (_, i) => ({ id: `n${i}`, type: "supercell" })) },
      400,
      "WORKFLOW_TOO_LARGE",
    ],
    [
      "params over 1 MiB",
      { name: "w", nodes: [{ id: "a", type: "supercell", params: { pad: "x".repeat(1_100_000) } }] },
      400,
      "WORKFLOW_TOO_LARGE",
    ],
    ["chat is not a step", { name: "w", nodes: [{ id: "a", type: "chat" }] }, 400, "UNKNOWN_NODE_TYPE"],
    ["bad node id", { name: "w", nodes: [{ id: "a b", type: "supercell" }] }, 422, "MALFORMED_REQUEST"],
    ["no nodes", { name: "w", nodes: [] }, 422, "MALFORMED_REQUEST"],
  ])("create: %s → %s %s", async (_n, body, status, code) => {
    const r = await call(svc.url, "POST", "/api/workflow/create", body);
    expect(r.status).toBe(status);
    expect(r.body.code).toBe(code);
  });

  it.each([
    ["run of a missing workflow", "POST", "/api/workflow/run", { workflow_id: "wf_missing" }, 404, "WORKFLOW_NOT_FOUND"],
    ["status of a missing workflow", "GET", "/api/workflow/wf_missing", undefined, 404, "WORKFLOW_NOT_FOUND"],
    ["status of a missing run", "GET", "/api/workflow/run_missing", undefined, 404, "WORKFLOW_NOT_FOUND"],
    ["cancel of a missing run", "POST", "/api/workflow/cancel", { id: "run_missing" }, 404, "WORKFLOW_NOT_FOUND"],
  ])("%s → %s %s", async (_n, method, path, body, status, code) => {
    const r = await call(svc.url, method as string, path as string, body);
    expect(r.status).toBe(status);
    expect(r.body.code).toBe(code);
  });

  it("a fan-out workflow gives the energies of the same steps run one by one", async () => {
    const created = await call(svc.url, "POST", "/api/workflow/create", fanOut);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.stringMatching(/^wf_/), status: "draft" });
    const cells = [cu(3.5), cu(3.61), cu(3.75)];
    const run = await call(svc.url, "POST", "/api/workflow/run", {
      workflow_id: created.body.id,
      inputs: { cells },
      max_parallel: 2,
    });
    expect(run.status).toBe(202);
    expect(run.body.status).toBe("queued");
    const done = await finished(svc.url, created.body.id);
    const states = done.run.nodes.map((n: Json) => ({ id: n.id, state: n.state, error: n.error, items: n.items }));
    expect(done.run.status, JSON.stringify(states)).toBe("completed");
    const byId = Object.fromEntries(done.run.nodes.map((n: Json) => [n.id, n]));
    expect(byId.relax.items.map((i: Json) => i.state)).toEqual(["completed", "completed", "completed"]);

    // the same steps, one by one through the HTTP routes
    const sup = await call(svc.url, "POST", "/api/build/supercell", { structures: cells, scaling: "2x1x1" });
    const energies: number[] = [];
    for (const s of sup.body.structures)
      energies.push((await call(svc.url, "POST", "/api/optimize/energy", { structure: s, calculator: "emt" })).body.energy);
    expect(byId.relax.output.results.map((r: Json) => r.energy)).toEqual(energies);
    const lowest = Math.min(...energies);
    expect(byId.best.output.value).toBe(lowest);
    expect(byId.best.output.index).toBe(energies.indexOf(lowest));
    // every answer conforms to the published schemas (the contract test's rows for these routes)
    expect(validate("POST", "/api/workflow/create", 201, created.body)).toEqual([]);
    expect(validate("POST", "/api/workflow/run", 202, run.body)).toEqual([]);
    expect(validate("GET", "/api/workflow/{id}", 200, done)).toEqual([]);
    const types = await call(svc.url, "GET", "/api/workflow/node-types");
    expect(validate("GET", "/api/workflow/node-types", 200, types.body)).toEqual([]);
    expect(types.body.node_types.map((t: Json) => t.type)).toEqual(
      expect.arrayContaining(["supercell", "energy", "map", "select"]),
    );
    for (const n of done.run.nodes) {
      expect(n.attempts).toBeGreaterThanOrEqual(1);
      expect(n.started_at).not.toBeNull();
      expect(n.finished_at).not.toBeNull();
    }
  }, 90_000);

  it("run is idempotent with an Idempotency-Key; a second run while one runs is 409", async () => {
    const created = await call(svc.url, "POST", "/api/workflow/create", {
      name: "slow",
      nodes: [
        {
          id: "relax",
          type: "optimize_structure",
          params: { calculator: "emt", fmax: 1e-9, max_steps: 3000 },
          inputs: { structure: "$inputs.s" },
        },
      ],
    });
    const s = { ...cu(3.3), sites: [{ species: [{ element: "Cu", occu: 1 }], abc: [0.01, 0.02, 0] }] };
    const body = {
      workflow_id: created.body.id,
      inputs: {
        s: {
          ...cu(3.3),
          lattice: {
            matrix: [
              [3.3, 0, 0],
              [0, 3.3, 0],
              [0, 0, 3.3],
            ],
          },
          sites: [...s.sites, { species: [{ element: "Cu", occu: 1 }], abc: [0.5, 0.5, 0.1] }],
        },
      },
    };
    const first = await call(svc.url, "POST", "/api/workflow/run", body, { "idempotency-key": "k1" });
    expect(first.status).toBe(202);
    const again = await call(svc.url, "POST", "/api/workflow/run", body, { "idempotency-key": "k1" });
    expect(again.status).toBe(202);
    expect(again.body.run_id).toBe(first.body.run_id);
    const second = await call(svc.url, "POST", "/api/workflow/run", body);
    expect(second.status).toBe(409);
    expect(second.body.code).toBe("WORKFLOW_ALREADY_RUNNING");
    expect(second.body.details.run_id).toBe(first.body.run_id);
    const longKey = await call(svc.url, "POST", "/api/workflow/run", body, { "idempotency-key": "k".repeat(201) });
    expect(longKey.body.code).toBe("INVALID_IDEMPOTENCY_KEY");
    // cancel stops it
    const cancelled = await call(svc.url, "POST", "/api/workflow/cancel", { id: first.body.run_id });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    expect(validate("POST", "/api/workflow/cancel", 200, cancelled.body)).toEqual([]);
    const st = await call(svc.url, "GET", `/api/workflow/${first.body.run_id}`);
    expect(st.body.run.status).toBe("cancelled");
    expect(st.body.run.nodes[0].state).toBe("cancelled");
    // a new run is allowed once the first is over
    const third = await call(svc.url, "POST", "/api/workflow/cancel", { id: created.body.id });
    expect(third.body.status).toBe("cancelled");
  }, 60_000);

  it("the MCP tools create, run and read a workflow (official SDK client over streamable HTTP)", async () => {
    const client = new Client({ name: "atomstudio-test", version: "0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
    try {
      const tool = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Json };
        expect(r.isError ?? false, JSON.stringify(r.structuredContent)).toBe(false);
        return r.structuredContent;
      };
      const created = await tool("svc_workflow_create", {
        name: "one supercell",
        nodes: [{ id: "s", type: "supercell", params: { scaling: [2, 2, 2] }, inputs: { structure: "$inputs.cell" } }],
      });
      expect(created.status).toBe("draft");
      const run = await tool("svc_workflow_run", {
        workflow_id: created.id,
        inputs: { cell: cu(3.6) },
        idempotency_key: "mcp-1",
      });
      const again = await tool("svc_workflow_run", {
        workflow_id: created.id,
        inputs: { cell: cu(3.6) },
        idempotency_key: "mcp-1",
      });
      expect(again.run_id).toBe(run.run_id);
      await finished(svc.url, run.run_id);
      const status = await tool("svc_workflow_status", { id: run.run_id });
      expect(status.run.status).toBe("completed");
      expect(status.run.nodes[0].output.n_atoms).toBe(8);
      const missing = (await client.callTool({ name: "svc_workflow_status", arguments: { id: "wf_missing" } })) as Json;
      expect(missing.isError).toBe(true);
      expect(missing.structuredContent.code).toBe("WORKFLOW_NOT_FOUND");
    } finally {
      await client.close();
    }
  }, 30_000);

  it("max_parallel 1: never more than one item queued or running, one after another", async () => {
    const created = await call(svc.url, "POST", "/api/workflow/create", {
      name: "serial",
      nodes: [
        {
          id: "m",
          type: "map",
          params: { operation: "optimize_structure", params: { calculator: "emt", fmax: 0.01, max_steps: 50 } },
          inputs: { items: "$inputs.cells" },
        },
      ],
    });
    const cells = [3.5, 3.55, 3.65, 3.7].map(cu);
    await call(svc.url, "POST", "/api/workflow/run", { workflow_id: created.body.id, inputs: { cells }, max_parallel: 1 });
    // without the cap all four would wait in the queue at once
    let most = 0;
    for (;;) {
      const st = (await call(svc.url, "GET", `/api/workflow/${created.body.id}`)).body.run;
      const busy = (st.nodes[0].items ?? []).filter((it: Json) => it.state === "queued" || it.state === "running").length;
      most = Math.max(most, busy);
      if (!["queued", "running"].includes(st.status)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(most).toBe(1);
    const done = await finished(svc.url, created.body.id);
    expect(done.run.status).toBe("completed");
    const items = done.run.nodes[0].items.map((i: Json) => [Date.parse(i.started_at), Date.parse(i.finished_at)]);
    for (let i = 1; i < items.length; i++) expect(items[i][0]).toBeGreaterThanOrEqual(items[i - 1][1]);
  }, 60_000);

  it("a per-node deadline stops each attempt; retries run with backoff, then the node fails", async () => {
    const created = await call(svc.url, "POST", "/api/workflow/create", {
      name: "deadline",
      nodes: [
        {
          id: "relax",
          type: "optimize_structure",
          params: { calculator: "emt", fmax: 1e-9, max_steps: 10000, structure: slowCell },
          timeout_s: 0.5,
          retries: 1,
        },
      ],
    });
    const t = Date.now();
    await call(svc.url, "POST", "/api/workflow/run", { workflow_id: created.body.id });
    const done = await finished(svc.url, created.body.id);
    const node = done.run.nodes[0];
    expect(node.state).toBe("failed");
    expect(node.error.code).toBe("DEADLINE_EXCEEDED");
    expect(node.attempts).toBe(2);
    // two attempts of at least 0.5 s each, and the backoff of 1 s between them
    expect(Date.now() - t).toBeGreaterThanOrEqual(2000);
  }, 60_000);

  it("a map fanning out over more items than the cap fails that node with WORKFLOW_TOO_LARGE", async () => {
    const created = await call(svc.url, "POST", "/api/workflow/create", {
      name: "wide",
      nodes: [
        {
          id: "m",
          type: "map",
          params: { operation: "supercell", params: { scaling: [1, 1, 1] } },
          inputs: { items: "$inputs.xs" },
        },
      ],
    });
    await call(svc.url, "POST", "/api/workflow/run", {
      workflow_id: created.body.id,
      inputs: { xs: Array.from({ length: 257 }, () => 0) },
    });
    const done = await finished(svc.url, created.body.id);
    expect(done.run.status).toBe("failed");
    expect(done.run.nodes[0].error.code).toBe("WORKFLOW_TOO_LARGE");
  }, 30_000);

  it("a node whose operation refuses its input fails with the operation's code, without retries", async () => {
    const created = await call(svc.url, "POST", "/api/workflow/create", {
      name: "bad",
      nodes: [{ id: "a", type: "supercell", params: { structure: cu(3.6), scaling: [0, 1, 1] }, retries: 3 }],
    });
    await call(svc.url, "POST", "/api/workflow/run", { workflow_id: created.body.id });
    const done = await finished(svc.url, created.body.id);
    expect(done.run.nodes[0].state).toBe("failed");
    expect(done.run.nodes[0].error.code).toBe("INVALID_SCALING");
    expect(done.run.nodes[0].attempts).toBe(1);
  }, 30_000);
});

describe.skipIf(!hasRedis)("Redis going down under a running service", () => {
  it("workflow routes answer 503 QUEUE_UNAVAILABLE, everything else keeps working", async () => {
    const redis = await startRedis();
    const svc = await serve({ queueUrl: redis.url, redisUrl: undefined });
    try {
      const created = await call(svc.url, "POST", "/api/workflow/create", fanOut);
      expect(created.status).toBe(201);
      await redis.stop();
      const rows: Array<[string, string, unknown]> = [
        ["POST", "/api/workflow/create", fanOut],
        ["POST", "/api/workflow/run", { workflow_id: created.body.id }],
        ["GET", `/api/workflow/${created.body.id}`, undefined],
      ];
      for (const [method, path, body] of rows) {
        const r = await call(svc.url, method, path, body);
        expect(r.status, path).toBe(503);
        expect(r.body.code).toBe("QUEUE_UNAVAILABLE");
        expect(r.body.error).not.toContain("redacted");
      }
      expect((await call(svc.url, "GET", "/api/health")).status).toBe(200);
      const r = await call(svc.url, "POST", "/api/structure-build/supercell", { structure: cu(3.6), scaling: [2, 2, 1] });
      expect(r.body.n_atoms).toBe(4);
    } finally {
      await svc.close();
      await redis.stop();
    }
  }, 60_000);
});
