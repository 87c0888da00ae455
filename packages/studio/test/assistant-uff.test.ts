/**
 * The assistant runs UFF: its optimize_structure tool (generated from the registry, served by
 * GET /api/tools) with calculator "uff" is executed by the studio itself, since the service
 * refuses UFF. In the page it runs in a Web Worker; Node has none, so here the same message
 * runner (uff-run.ts, the Worker's body) is called directly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Fetcher } from "../src/assistant/stream.ts";
import { executeTool, type LocalOptimizer, loadTools } from "../src/assistant/tools.ts";
import { type OptimizeMessage, runUff } from "../src/optimize/uff-run.ts";
import type { StudioApi } from "../src/studio.ts";
import { type RunningService, startService } from "./support.ts";

const water = {
  "@class": "Molecule",
  charge: 0,
  sites: [
    ["O", [0, 0, 0]],
    ["H", [1.1, 0.1, 0]],
    ["H", [-0.2, 0.9, 0.3]],
  ].map(([element, xyz]) => ({ species: [{ element: element as string, occu: 1 }], xyz })),
};
const crystal = {
  "@class": "Structure",
  lattice: {
    matrix: [
      [3, 0, 0],
      [0, 3, 0],
      [0, 0, 3],
    ],
  },
  sites: [{ species: [{ element: "C", occu: 1 }], abc: [0, 0, 0] }],
};

/** The Worker's body without the Worker: every message, the last one returned. */
const uffHere: LocalOptimizer = async (request) => {
  let last: OptimizeMessage = { type: "error", code: "UFF_FAILED", error: "no message" };
  runUff(request, (m) => {
    last = m;
  });
  return last;
};

const studioWith = (initial: unknown) => {
  let structure = initial;
  const api = {
    getStructure: () => structure,
    setStructure: (d: unknown) => {
      structure = d;
    },
    clientId: () => null,
    viewerToolDefinitions: [],
    viewerTools: {},
  } as unknown as StudioApi;
  return api;
};

describe("the assistant's optimize_structure with calculator uff runs in the studio", () => {
  let svc: RunningService;
  let fetcher: Fetcher;
  beforeAll(async () => {
    svc = await startService({ studio: false });
    fetcher = (path, init) => fetch(`${svc.url}${path}`, init);
  });
  afterAll(() => svc?.close());

  it("the tool tells the model that uff exists", async () => {
    const tools = await loadTools(fetcher, studioWith(water));
    const def = tools.definitions.find((d) => d.function.name === "optimize_structure");
    expect(JSON.stringify(def?.function.parameters)).toContain("uff");
  });

  it("relaxes the studio's molecule and replaces it", async () => {
    const api = studioWith(water);
    const tools = await loadTools(fetcher, api);
    const out = await executeTool(tools, "optimize_structure", { calculator: "uff", fmax: 0.001 }, api, fetcher, {
      uff: uffHere,
    });
    expect(out).toMatchObject({ ok: true, changedStructure: true });
    const reply = JSON.parse(out.content);
    expect(reply).toMatchObject({ converged: true, computed_in: "browser", structure: "(applied to the studio)" });
    expect(reply.energy).toBeLessThan(reply.initial_energy);
    const relaxed = api.getStructure() as unknown as { sites: { xyz: number[]; properties: { forces: number[] } }[] };
    expect(relaxed.sites[1]?.xyz).not.toEqual(water.sites[1]?.xyz);
    expect(relaxed.sites[1]?.properties.forces).toHaveLength(3);
  });

  it.each([
    ["a crystal", crystal, {}, "PERIODIC_NOT_SUPPORTED"],
    ["cell relaxation", water, { optimize_cell: true }, "PERIODIC_NOT_SUPPORTED"],
  ])("%s → %s, structure untouched", async (_what, structure, extra, code) => {
    const api = studioWith(structure);
    const tools = await loadTools(fetcher, api);
    const out = await executeTool(tools, "optimize_structure", { calculator: "uff", ...extra }, api, fetcher, {
      uff: uffHere,
    });
    expect(out.ok).toBe(false);
    expect(out.content).toMatch(new RegExp(`^Error: ${code}: `));
    expect(api.getStructure()).toBe(structure);
  });

  it("the service itself refuses uff with a 400 saying it runs in the studio", async () => {
    const res = await fetch(`${svc.url}/api/optimize/structure`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ structure: water, calculator: "uff" }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; error: string };
    expect(body.code).toBe("CALCULATOR_UNAVAILABLE");
    expect(body.error).toContain("runs in the studio");
  });
});
