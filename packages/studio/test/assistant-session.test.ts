/**
 * The assistant's conversation logic against the real service (chat plugin, registry routes)
 * and loopback peers: the tool loop of OpenAI-compatible providers acting on a studio, hosted
 * text chat, and a command-line agent's events.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentBench, makeAgentBench, printFixture } from "../../server/test/peers/agents.ts";
import { startAnthropicPeer } from "../../server/test/peers/anthropic.ts";
import { type Service, startService } from "../../server/test/peers/harness.ts";
import { startOpenAICompatPeer } from "../../server/test/peers/openai-compat.ts";
import type { Peer } from "../../server/test/peers/serve.ts";
import {
  AssistantSession,
  loadProviders,
  type ProviderInfo,
  type SessionCallbacks,
  structureSummary,
} from "../src/assistant/session.ts";
import type { Fetcher } from "../src/assistant/stream.ts";
import { executeTool, loadTools } from "../src/assistant/tools.ts";
import type { StudioApi } from "../src/studio.ts";

const silicon = () => ({
  "@module": "pymatgen.core.structure",
  "@class": "Structure",
  lattice: {
    matrix: [
      [0, 2.7155, 2.7155],
      [2.7155, 0, 2.7155],
      [2.7155, 2.7155, 0],
    ],
  },
  sites: [
    { species: [{ element: "Si", occu: 1 }], abc: [0, 0, 0], label: "Si", properties: {} },
    { species: [{ element: "Si", occu: 1 }], abc: [0.25, 0.25, 0.25], label: "Si", properties: {} },
  ],
});

/** A studio without a browser: structure, selection and one viewer tool. */
const fakeStudio = () => {
  let structure: unknown = silicon();
  const bonds: boolean[] = [];
  const api = {
    getStructure: () => structure,
    setStructure: (d: unknown) => {
      structure = d;
    },
    openFile: () => undefined,
    getSelection: () => ({ selected_indices: [1], n_selected: 1, selected_atoms: [], has_selection: true }),
    setSelection: () => undefined,
    viewerTools: {
      toggle_bonds: async (input: Record<string, unknown>) => {
        if (typeof input.visible !== "boolean") throw new Error("INVALID_INPUT: visible must be a boolean");
        bonds.push(input.visible);
        return { bonds: input.visible };
      },
    },
    viewerToolDefinitions: [
      {
        name: "toggle_bonds",
        description: "Show or hide bonds",
        input_schema: { type: "object", properties: { visible: { type: "boolean" } } },
      },
    ],
    takeScreenshot: async () => ({ image: "", format: "png", width: 1, height: 1, size_bytes: 0 }),
    undo: () => false,
    redo: () => false,
    onChange: () => () => undefined,
    clientId: () => null,
  } as unknown as StudioApi;
  return { api, bonds };
};

const recorder = () => {
  const log: Array<[string, unknown]> = [];
  const cb: SessionCallbacks = {
    assistantStart: () => log.push(["start", null]),
    text: (t) => log.push(["text", t]),
    thinking: (t) => log.push(["thinking", t]),
    toolUse: (n, i) => log.push(["tool_use", { n, i }]),
    toolResult: (n, o) => log.push(["tool_result", { n, o }]),
    error: (m, c) => log.push(["error", { m, c }]),
    done: (u) => log.push(["done", u]),
  };
  return { log, cb };
};

let compat: Peer;
let anthropic: Peer;
let bench: AgentBench;
let svc: Service;
let fetcher: Fetcher;
let providers: ProviderInfo[];
const provider = (id: string, type: ProviderInfo["type"]) =>
  providers.find((p) => p.id === id && p.type === type) as ProviderInfo;

beforeAll(async () => {
  compat = await startOpenAICompatPeer();
  anthropic = await startAnthropicPeer();
  bench = await makeAgentBench();
  svc = await startService({
    DEEPSEEK_API_KEY: "sk-deepseek-studio-0123456789",
    ANTHROPIC_API_KEY: "sk-ant-studio-0123456789",
    ATOMSTUDIO_DEEPSEEK_BASE_URL: `${compat.origin}/v1`,
    ATOMSTUDIO_ANTHROPIC_BASE_URL: anthropic.origin,
    ATOMSTUDIO_AGENT_ROOT: bench.root,
    ATOMSTUDIO_OLLAMA_BASE_URL: `${compat.origin}/nothing/v1`,
    PATH: bench.path,
    HOME: bench.root,
  });
  fetcher = (path, init) => fetch(`${svc.url}${path}`, init);
  await bench.install("claude", printFixture("claude/mcp-tool-use.jsonl"));
  providers = await loadProviders(fetcher);
});
afterAll(async () => {
  await svc.close();
  await compat.close();
  await anthropic.close();
  await bench.cleanup();
});

describe("OpenAI-compatible provider with the studio's tools", () => {
  it("runs the tool loop: the model's make_supercell call replaces the studio's structure, then the answer streams", async () => {
    const { api } = fakeStudio();
    const session = new AssistantSession(api, fetcher);
    const { log, cb } = recorder();
    const before = compat.requests.length;
    await session.send("Make a 2x2x2 supercell", provider("deepseek", "openai-compat"), "tool-then-text", cb);

    expect((api.getStructure() as { sites: unknown[] }).sites).toHaveLength(16);
    expect(log.map(([k]) => k)).toEqual(["start", "tool_use", "tool_result", "start", "text", "text", "text", "text", "done"]);
    expect(log[1]?.[1]).toEqual({ n: "make_supercell", i: { scaling: [2, 2, 2] } });
    expect((log[2]![1] as { o: { ok: boolean; content: string } }).o).toMatchObject({ ok: true, changedStructure: true });

    const [first, second] = compat.requests.slice(before);
    const tools = (first!.body!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(tools).toEqual(expect.arrayContaining(["make_supercell", "add_atom", "merge_structures", "toggle_bonds"]));
    expect(first?.body?.tool_choice).toBe("auto");
    const system = (first!.body!.messages as Array<{ role: string; content: string }>)[0];
    expect(system?.role).toBe("system");
    expect(system?.content).toContain("Si2 (2 sites");
    expect(system?.content).toContain("Selected sites: 1.");
    const msgs = second?.body?.messages as Array<Record<string, unknown>>;
    expect(msgs.slice(-2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_Vx1mA7sQ2b", type: "function", function: { name: "make_supercell", arguments: '{"scaling":[2,2,2]}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_Vx1mA7sQ2b", content: expect.stringContaining('"n_atoms":16') },
    ]);
    // the structure itself is not sent back to the model
    expect(String(msgs.at(-1)?.content)).not.toContain("lattice");
    expect(session.history.at(-1)).toEqual({ role: "assistant", content: "A 2x2x2 supercell of Si has 16 atoms." });
  });

  it("reports an upstream failure as an error", async () => {
    const { api } = fakeStudio();
    const { log, cb } = recorder();
    await new AssistantSession(api, fetcher).send("hi", provider("deepseek", "openai-compat"), "error-429", cb);
    expect(log.at(-1)).toEqual(["error", { m: expect.stringContaining("429"), c: "UPSTREAM_ERROR" }]);
  });

  it("executes viewer tools in the studio and server tools with renamed and injected fields", async () => {
    const { api, bonds } = fakeStudio();
    const tools = await loadTools(fetcher, api);
    expect(await executeTool(tools, "toggle_bonds", { visible: false }, api, fetcher)).toEqual({
      content: '{"bonds":false}',
      ok: true,
    });
    expect(bonds).toEqual([false]);
    expect((await executeTool(tools, "toggle_bonds", {}, api, fetcher)).content).toBe(
      "Error: INVALID_INPUT: visible must be a boolean",
    );
    const merged = await executeTool(
      tools,
      "merge_structures",
      { incoming_structure: silicon(), position: [5, 5, 5] },
      api,
      fetcher,
    );
    expect(merged.ok).toBe(true);
    expect((api.getStructure() as { sites: unknown[] }).sites).toHaveLength(4);
    const bad = await executeTool(tools, "delete_atoms", { indices: [] }, api, fetcher);
    expect(bad).toMatchObject({ ok: false, content: expect.stringMatching(/^Error: /) });
    expect((await executeTool(tools, "no_such_tool", {}, api, fetcher)).content).toBe("Error: unknown tool no_such_tool");
  });
});

describe("hosted provider and agents", () => {
  it("hosted: streams text with the structure in the system prompt", async () => {
    const { api } = fakeStudio();
    const { log, cb } = recorder();
    await new AssistantSession(api, fetcher).send("Symmetry?", provider("anthropic", "api"), null, cb);
    expect(log.filter(([k]) => k === "text").map(([, t]) => t)).toEqual(["Hello", ", rocksalt", " has Fm-3m symmetry."]);
    expect(anthropic.requests.at(-1)?.body?.system).toContain("Si2");
  });

  it("agent: gets the prompt and the structure, and its events reach the panel", async () => {
    const { api } = fakeStudio();
    const { log, cb } = recorder();
    await new AssistantSession(api, fetcher).send("Make a 2x2x2 supercell", provider("claude", "cli-agent"), null, cb);
    expect(log.map(([k]) => k)).toEqual(["start", "thinking", "tool_use", "tool_result", "text", "done"]);
    expect(log.at(-1)).toEqual(["done", { input_tokens: 6, output_tokens: 212 }]);
    expect(JSON.parse(await readFile(join(bench.root, "structure.json"), "utf8"))).toEqual(silicon());
  });

  it("summarizes the loaded structure", () => {
    expect(structureSummary(fakeStudio().api)).toMatch(
      /^The studio shows Si2 \(2 sites; periodic, cell vector lengths 3\.840, 3\.840, 3\.840 Å\)\./,
    );
  });
});
