/**
 * The Workflows panel's pure logic: graph checks (the service's three coded refusals found
 * before sending), input choices that cannot make a cycle, the service's errors placed on their
 * nodes, the status response as node rows, polling backoff, structures found in outputs, forms
 * from JSON schemas, the node catalogue from the real OpenAPI document, and the saved list.
 */
import { describe, expect, it } from "vitest";
import { operations } from "../../server/src/operations/index.ts";
import { openApiDocument } from "../../server/src/registry/openapi.ts";
import { catalogFromOpenApi, MAP_TYPE, SELECT_TYPE, structureParams } from "../src/workflows/catalog.ts";
import {
  createRequest,
  freshId,
  inputChoices,
  issuesFromServiceError,
  parseReference,
  renameNode,
  topologicalOrder,
  validateWorkflow,
  type WorkflowDraft,
  type WorkflowNode,
} from "../src/workflows/graph.ts";
import { checkParams, formFields, readField } from "../src/workflows/params.ts";
import { forget, type KeyValueStore, loadSaved, remember, SAVED_KEY, SAVED_LIMIT } from "../src/workflows/saved.ts";
import {
  findStructures,
  formatDuration,
  nextPollDelay,
  nodeState,
  POLL_MAX_MS,
  POLL_MIN_MS,
  readStatus,
  runState,
} from "../src/workflows/status.ts";
import { SLAB_RELAX_SELECT } from "../src/workflows/templates.ts";

const node = (id: string, type: string, inputs: Record<string, string> = {}): WorkflowNode => ({ id, type, params: {}, inputs });
const TYPES = new Set(["slab", "supercell", "optimize_structure", "map", "select"]);
const codes = (d: WorkflowDraft) => validateWorkflow(d, TYPES).map((i) => [i.node, i.code]);

describe("references", () => {
  it.each([
    ["slab.structure", { node: "slab", output: "structure" }],
    ["relax.results.0.energy", { node: "relax", output: "results.0.energy" }],
    ["slab", null],
    ["a..b", null],
    ["slab.", null],
    [".structure", null],
    ["", null],
  ])("%j reads as %j", (ref, expected) => {
    expect(parseReference(ref)).toEqual(expected);
  });
});

describe("graph checks before sending", () => {
  it.each<[string, WorkflowNode[], [string | null, string][]]>([
    ["a valid chain", [node("a", "slab"), node("b", "supercell", { structure: "a.structure" })], []],
    ["a run input is no dangling reference", [node("a", "slab", { structure: "$inputs.bulk" })], []],
    ["an unknown type", [node("a", "cook_dinner")], [["a", "UNKNOWN_NODE_TYPE"]]],
    ["a reference to a missing node", [node("a", "slab", { structure: "ghost.structure" })], [["a", "DANGLING_REFERENCE"]]],
    ["a reference that is not node.output", [node("a", "slab", { structure: "a." })], [["a", "DANGLING_REFERENCE"]]],
    ["a node reading itself", [node("a", "slab", { structure: "a.structure" })], [["a", "CYCLE_DETECTED"]]],
    [
      "a two-node cycle",
      [node("a", "slab", { structure: "b.structure" }), node("b", "supercell", { structure: "a.structure" })],
      [
        ["a", "CYCLE_DETECTED"],
        ["b", "CYCLE_DETECTED"],
      ],
    ],
    ["a bad id", [node("9lives", "slab")], [["9lives", "MALFORMED_REQUEST"]]],
    ["a duplicate id", [node("a", "slab"), node("a", "slab")], [["a", "DUPLICATE_NODE_ID"]]],
    ["no nodes", [], [[null, "MALFORMED_REQUEST"]]],
    ["retries and a deadline within the caps", [{ ...node("a", "slab"), retries: 10, timeout_s: 0.5 }], []],
    ["too many retries", [{ ...node("a", "slab"), retries: 11 }], [["a", "INVALID_NODE_PARAMS"]]],
    ["a fractional retry count", [{ ...node("a", "slab"), retries: 1.5 }], [["a", "INVALID_NODE_PARAMS"]]],
    ["a deadline of 0", [{ ...node("a", "slab"), timeout_s: 0 }], [["a", "INVALID_NODE_PARAMS"]]],
    ["a deadline over a day", [{ ...node("a", "slab"), timeout_s: 86_401 }], [["a", "INVALID_NODE_PARAMS"]]],
  ])("%s", (_, nodes, expected) => {
    expect(codes({ name: "w", nodes })).toEqual(expected);
  });

  it("orders nodes after their inputs, and names the nodes left on a cycle", () => {
    const nodes = [
      node("select", "select", { items: "map.results" }),
      node("map", "map", { items: "cells.structures" }),
      node("cells", "supercell", { structure: "slab.structure" }),
      node("slab", "slab"),
      node("x", "slab", { structure: "y.structure" }),
      node("y", "slab", { structure: "x.structure" }),
    ];
    expect(topologicalOrder(nodes)).toEqual({ order: ["slab", "cells", "map", "select"], cyclic: ["x", "y"] });
  });

  it("offers as inputs only the outputs of nodes that are not downstream (no cycle can be picked)", () => {
    const nodes = [
      node("a", "slab"),
      node("b", "supercell", { structure: "a.structure" }),
      node("c", "supercell", { structure: "b.structure" }),
    ];
    const outputs = (t: string) => (t === "slab" ? ["structure"] : ["structure", "n_atoms"]);
    expect(inputChoices(nodes, "b", outputs)).toEqual(["a.structure"]);
    expect(inputChoices(nodes, "a", outputs)).toEqual([]);
    expect(inputChoices(nodes, "c", outputs)).toEqual(["a.structure", "b.structure", "b.n_atoms"]);
  });

  it("renames a node and every reference to it", () => {
    const d = renameNode({ name: "w", nodes: [node("a", "slab"), node("b", "map", { items: "a.structure" })] }, "a", "cut");
    expect(d.nodes.map((n) => [n.id, n.inputs])).toEqual([
      ["cut", {}],
      ["b", { items: "cut.structure" }],
    ]);
  });

  it.each([
    [[], "slab", "slab"],
    [[node("slab", "slab")], "slab", "slab2"],
    [[node("slab", "slab"), node("slab2", "slab")], "slab", "slab3"],
    [[], "2d-thing", "d-thing"],
  ])("a fresh id for %j of type %s is %s", (nodes, type, id) => {
    expect(freshId(nodes, type)).toBe(id);
  });

  it("sends only the fields the create route takes", () => {
    const d = {
      name: "w",
      nodes: [{ ...node("a", "slab"), extra: 1 } as WorkflowNode, { ...node("b", "slab"), retries: 2, timeout_s: 5 }],
    };
    expect(createRequest(d)).toEqual({
      name: "w",
      nodes: [
        { id: "a", type: "slab", params: {}, inputs: {} },
        { id: "b", type: "slab", params: {}, inputs: {}, retries: 2, timeout_s: 5 },
      ],
    });
  });
});

describe("the service's coded errors, placed on their nodes", () => {
  it.each([
    [{ code: "UNKNOWN_NODE_TYPE", error: "no", details: { node: "a", type: "x" } }, [["a", "UNKNOWN_NODE_TYPE"]]],
    [{ code: "DANGLING_REFERENCE", error: "no", details: { node_id: "b", input: "structure" } }, [["b", "DANGLING_REFERENCE"]]],
    [
      { code: "CYCLE_DETECTED", error: "no", details: { cycle: ["a", "b", "a"] } },
      [
        ["a", "CYCLE_DETECTED"],
        ["b", "CYCLE_DETECTED"],
      ],
    ],
    [{ code: "WORKFLOW_TOO_LARGE", error: "too big" }, [[null, "WORKFLOW_TOO_LARGE"]]],
  ])("%j", (body, expected) => {
    expect(issuesFromServiceError(body).map((i) => [i.node, i.code])).toEqual(expected);
  });
});

describe("status", () => {
  it.each([
    ["completed", "succeeded"],
    ["active", "running"],
    ["waiting", "pending"],
    ["delayed", "queued"],
    ["failed", "failed"],
    ["cancelled", "cancelled"],
    ["skipped", "skipped"],
    ["nonsense", "pending"],
  ])("node state %s shows as %s", (raw, shown) => {
    expect(nodeState(raw)).toBe(shown);
  });

  it.each([
    ["draft", "draft"],
    ["queued", "queued"],
    ["running", "running"],
    ["completed", "succeeded"],
    ["failed", "failed"],
    ["cancelled", "cancelled"],
  ])("run state %s shows as %s", (raw, shown) => {
    expect(runState(raw)).toBe(shown);
  });

  const status = {
    id: "wf_1",
    name: "demo",
    status: "running",
    created_at: "2026-11-23T22:00:00.000Z",
    nodes: [node("slab", "slab"), node("relax", "map", { items: "slab.structure" })],
    run: {
      run_id: "run_1",
      status: "running",
      created_at: "2026-11-23T22:00:00.000Z",
      started_at: "2026-11-23T22:00:00.000Z",
      finished_at: null,
      max_parallel: 4,
      retries: 1,
      error: null,
      nodes: [
        {
          id: "slab",
          type: "slab",
          state: "completed",
          attempts: 2,
          started_at: "2026-11-23T22:00:01.000Z",
          finished_at: "2026-11-23T22:00:01.500Z",
          error: null,
          output: { structure: { lattice: { matrix: [] }, sites: [{ species: [{ element: "Cu" }] }] }, n_atoms: 1 },
        },
        {
          id: "relax",
          type: "map",
          state: "running",
          attempts: 3,
          started_at: "2026-11-23T22:00:02.000Z",
          finished_at: null,
          error: { code: "WORKER_CRASHED", message: "item 1 retried" },
          output: null,
          items: [
            { index: 0, state: "completed", attempts: 1, error: null },
            { index: 1, state: "running", attempts: 2, error: null },
          ],
        },
      ],
    },
    runs: ["run_1"],
  };

  it("reads the run's nodes: states, attempts, timings, errors, outputs, map progress", () => {
    const v = readStatus(status, Date.parse("2026-11-23T22:00:05.000Z"));
    expect([v.id, v.name, v.state, v.runId, v.terminal]).toEqual(["wf_1", "demo", "running", "run_1", false]);
    expect(v.nodes.map((n) => [n.id, n.state, n.attempts, n.durationMs, n.error?.code ?? null, n.progress])).toEqual([
      ["slab", "succeeded", 2, 500, null, null],
      ["relax", "running", 3, 3000, "WORKER_CRASHED", { done: 1, total: 2 }],
    ]);
    expect(findStructures(v.nodes[0]?.output).map((f) => f.path)).toEqual(["structure"]);
  });

  it("before the first run, the definition's nodes are pending", () => {
    const v = readStatus({ ...status, status: "draft", run: null });
    expect([v.state, v.terminal, v.runId]).toEqual(["draft", false, null]);
    expect(v.nodes.map((n) => [n.id, n.state])).toEqual([
      ["slab", "pending"],
      ["relax", "pending"],
    ]);
  });

  it.each([
    [null, false, POLL_MIN_MS],
    [POLL_MIN_MS, true, POLL_MIN_MS],
    [POLL_MIN_MS, false, 400],
    [400, false, 640],
    [4000, false, POLL_MAX_MS],
    [POLL_MAX_MS, false, POLL_MAX_MS],
    [POLL_MAX_MS, true, POLL_MIN_MS],
  ])("after %s ms, changed %s: wait %s ms", (prev, changed, next) => {
    expect(nextPollDelay(prev, changed)).toBe(next);
  });

  it("finds every structure of a map or select output, with its energy", () => {
    const s = (el: string) => ({ "@class": "Structure", lattice: { matrix: [] }, sites: [{ species: [{ element: el }] }] });
    const map = {
      results: [
        { structure: s("Cu"), energy: -1.5 },
        { structure: s("Pt"), energy: -2 },
      ],
      structures: [s("Cu"), s("Pt")],
    };
    expect(findStructures(map).map((f) => [f.path, f.energy])).toEqual([
      ["results[0].structure", -1.5],
      ["results[1].structure", -2],
      ["structures[0]", null],
      ["structures[1]", null],
    ]);
    expect(findStructures({ index: 1, value: -2, result: map.results[1], structure: s("Pt") }).map((f) => f.path)).toEqual([
      "result.structure",
      "structure",
    ]);
    expect(findStructures({ energy: 1 })).toEqual([]);
  });

  it.each([
    [null, ""],
    [12, "12 ms"],
    [1500, "1.5 s"],
    [125_000, "2 min 5 s"],
  ])("duration %s reads %j", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("node types and their parameters from the service's OpenAPI document", () => {
  const catalog = catalogFromOpenApi(openApiDocument(operations));
  const byType = (t: string) => catalog.find((c) => c.type === t);

  it("offers the POST operations, map and select; not the view, chat or health routes", () => {
    const types = catalog.map((c) => c.type);
    expect(types).toEqual(expect.arrayContaining(["slab", "supercell", "optimize_structure", "energy", "map", "select"]));
    expect(types).not.toEqual(expect.arrayContaining(["view_screenshot"]));
    expect(types.filter((t) => ["health", "providers", "view_screenshot", "energy_get"].includes(t))).toEqual([]);
    expect(byType("optimize_structure")?.outputs).toEqual(expect.arrayContaining(["structure", "energy"]));
    expect(byType("build_supercell_legacy")?.outputs).toContain("structures");
  });

  it("keeps only the types the service lists when it lists them", () => {
    const some = catalogFromOpenApi(openApiDocument(operations), new Set(["slab", "energy"]));
    expect(some.map((c) => c.type)).toEqual(["slab", "energy", MAP_TYPE.type, SELECT_TYPE.type]);
  });

  it("finds the parameters that hold a structure", () => {
    expect(structureParams(byType("slab")?.schema ?? {})).toEqual(["structure"]);
    expect(structureParams(byType("merge")?.schema ?? {})).toEqual(["base", "incoming"]);
    expect(structureParams(byType("build_supercell_legacy")?.schema ?? {})).toEqual(["structure", "structures"]);
  });

  it("makes form fields of simple parameters and leaves the rest to the JSON editor", () => {
    const { fields, json } = formFields(byType("slab")?.schema ?? {}, ["structure"]);
    expect(fields.map((f) => [f.name, f.kind, f.required])).toEqual([
      ["miller", "vector", true],
      ["thickness", "number", true],
      ["vacuum", "number", false],
      ["center_slab", "boolean", false],
      ["primitive", "boolean", false],
      ["max_normal_search", "integer", false],
      ["symmetrize", "boolean", false],
      ["termination_index", "integer", false],
    ]);
    expect(json).toEqual([]);
    const opt = formFields(byType("optimize_structure")?.schema ?? {}, ["structure"]);
    expect(opt.json).toEqual(expect.arrayContaining(["calculator_params", "optimizer_params", "frozen_atoms"]));
  });

  const slabFields = formFields(byType("slab")?.schema ?? {}, ["structure"]).fields;
  const f = (name: string) => slabFields.find((x) => x.name === name) as (typeof slabFields)[number];
  it.each([
    ["miller", "1 1 1", { value: [1, 1, 1] }],
    ["miller", "1,0,0", { value: [1, 0, 0] }],
    ["miller", "1 1", { error: "miller: 3 whole numbers, e.g. 1 1 1" }],
    ["miller", "1 1 0.5", { error: "miller: 3 whole numbers, e.g. 1 1 1" }],
    ["thickness", "3", { value: 3 }],
    ["thickness", "three", { error: "thickness: a number" }],
    ["thickness", "", { error: "thickness: required" }],
    ["vacuum", "", { value: undefined }],
    ["max_normal_search", "1.5", { error: "max_normal_search: a whole number" }],
    ["max_normal_search", "99", { error: "max_normal_search: at most 10" }],
  ])("field %s reads %j as %j", (name, text, expected) => {
    expect(readField(f(name), text)).toEqual(expected);
  });

  it.each<[string, Record<string, unknown>, string[], string[]]>([
    ["slab", { miller: [1, 1, 1], thickness: 3 }, ["structure"], []],
    ["slab", { thickness: 3 }, ["structure"], ["miller: required"]],
    ["slab", { miller: [1, 1], thickness: 3 }, ["structure"], ["miller: must NOT have fewer than 3 items"]],
    ["slab", { miller: [1, 1, 1], thickness: 3 }, [], ["structure: required"]],
    ["optimize_structure", { calculator: "emt" }, ["structure"], []],
    ["optimize_structure", { calculator: "emt", fmax: "small" }, ["structure"], ["fmax: must be number"]],
  ])("%s params %j with %j wired: %j", (type, params, wired, messages) => {
    expect(checkParams(byType(type)?.schema ?? {}, params, wired)).toEqual(messages);
  });

  it("the template is a valid graph of known types with valid parameters", () => {
    const bulk = {
      "@class": "Structure",
      lattice: {
        matrix: [
          [3.6, 0, 0],
          [0, 3.6, 0],
          [0, 0, 3.6],
        ],
      },
      sites: [],
    };
    const d = SLAB_RELAX_SELECT.build(bulk);
    expect(validateWorkflow(d, new Set(catalog.map((c) => c.type)))).toEqual([]);
    expect(topologicalOrder(d.nodes).order).toEqual(["slab", "supercells", "relax", "lowest"]);
    for (const n of d.nodes.filter((n) => !["map", "select"].includes(n.type)))
      expect(checkParams(byType(n.type)?.schema ?? {}, n.params, Object.keys(n.inputs))).toEqual([]);
    const relax = d.nodes.find((n) => n.id === "relax") as WorkflowNode;
    expect(
      checkParams(byType("optimize_structure")?.schema ?? {}, relax.params.params as Record<string, unknown>, ["structure"]),
    ).toEqual([]);
  });
});

describe("the saved list (localStorage)", () => {
  const memory = (): KeyValueStore & { data: Map<string, string> } => {
    const data = new Map<string, string>();
    return { data, getItem: (k) => data.get(k) ?? null, setItem: (k, v) => void data.set(k, v) };
  };

  it("remembers newest first, updates in place, forgets, and caps the list", () => {
    const s = memory();
    remember(s, { id: "wf_a", name: "a", createdAt: 1 });
    remember(s, { id: "wf_b", name: "b", createdAt: 2 });
    remember(s, { id: "wf_a", name: "a", createdAt: 1, runId: "run_1" });
    expect(loadSaved(s).map((w) => [w.id, w.runId ?? null])).toEqual([
      ["wf_a", "run_1"],
      ["wf_b", null],
    ]);
    forget(s, "wf_a");
    expect(loadSaved(s).map((w) => w.id)).toEqual(["wf_b"]);
    for (let i = 0; i < SAVED_LIMIT + 5; i++) remember(s, { id: `wf_${i}`, name: String(i), createdAt: i });
    expect(loadSaved(s)).toHaveLength(SAVED_LIMIT);
  });

  it.each([
    ["nothing stored", null],
    ["not JSON", "{oops"],
    ["not a list", '{"id":"wf"}'],
    ["foreign entries", '[{"id":3},null,"x"]'],
  ])("%s reads as an empty list", (_, raw) => {
    const s = memory();
    if (raw !== null) s.data.set(SAVED_KEY, raw);
    expect(loadSaved(s)).toEqual([]);
  });
});
