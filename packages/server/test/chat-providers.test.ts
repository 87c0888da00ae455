/** GET /api/chat/providers: availability by key variable, Ollama probe (2 s), agents on PATH; MCP tool svc_providers. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProviderInfo } from "../src/chat/types.ts";
import { type AgentBench, makeAgentBench } from "./peers/agents.ts";
import { type Service, startService } from "./peers/harness.ts";
import { OLLAMA_TAGS, startOllamaPeer } from "./peers/ollama.ts";
import type { Peer } from "./peers/serve.ts";

let ollama: Peer;
let silent: Server; // accepts connections and never answers
let silentPort: number;
let closedPort: number;
let bench: AgentBench;
let svc: Service;

const list = async (): Promise<ProviderInfo[]> => {
  const res = await fetch(`${svc.url}/api/chat/providers`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { providers: ProviderInfo[] }).providers;
};
const find = (ps: ProviderInfo[], id: string, type: ProviderInfo["type"]) =>
  ps.find((p) => p.id === id && p.type === type) as ProviderInfo;

beforeAll(async () => {
  ollama = await startOllamaPeer();
  silent = createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
  silentPort = (silent.address() as AddressInfo).port;
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
  bench = await makeAgentBench();
  await bench.install("claude", "exit 0");
  await bench.install("codex", "exit 0");
  svc = await startService({
    DEEPSEEK_API_KEY: "sk-deepseek-listing-0123456789",
    ANTHROPIC_API_KEY: "sk-ant-listing-0123456789",
    ATOMSTUDIO_OLLAMA_BASE_URL: `${ollama.origin}/v1`,
    PATH: bench.path,
    ATOMSTUDIO_AGENT_ROOT: bench.root,
  });
});
afterAll(async () => {
  await svc.close();
  await ollama.close();
  silent.closeAllConnections();
  await new Promise((r) => silent.close(r));
  await bench.cleanup();
});

describe("provider listing", () => {
  it("lists every hosted provider, OpenAI-compatible provider and agent as ProviderInfo", async () => {
    const ps = await list();
    expect(ps.map((p) => `${p.type}:${p.id}`)).toEqual([
      "api:anthropic",
      "api:openai",
      "openai-compat:deepseek",
      "openai-compat:qwen",
      "openai-compat:kimi",
      "openai-compat:ollama",
      "openai-compat:openrouter",
      "openai-compat:together",
      "openai-compat:openai",
      "openai-compat:custom",
      "cli-agent:claude",
      "cli-agent:codex",
      "cli-agent:gemini",
    ]);
    for (const p of ps) {
      expect(Object.keys(p).sort()).toEqual(
        [
          "available",
          "endpoint",
          "has_api_key",
          "id",
          "models",
          "name",
          "status_message",
          "supports_tools",
          "supports_vision",
          "type",
          // command-line agents also say which version is installed and whether they can sign in
          ...(p.type === "cli-agent" ? ["signed_in", "version"] : []),
        ].sort(),
      );
      expect(p.available || typeof p.status_message === "string", p.id).toBe(true);
      for (const m of p.models) expect(Number.isInteger(m.context_window)).toBe(true);
    }
    expect(find(ps, "anthropic", "api").endpoint).toBe("/api/chat/stream");
    expect(find(ps, "deepseek", "openai-compat").endpoint).toBe("/api/chat/stream-openai-compat");
    expect(find(ps, "claude", "cli-agent").endpoint).toBe("/api/chat/stream-cli-agent");
  });

  it("has_api_key and availability follow the environment, and never carry the key", async () => {
    const ps = await list();
    expect(find(ps, "deepseek", "openai-compat")).toMatchObject({ available: true, has_api_key: true, status_message: null });
    expect(find(ps, "anthropic", "api")).toMatchObject({ available: true, has_api_key: true });
    expect(find(ps, "openai", "api")).toMatchObject({
      available: false,
      has_api_key: false,
      status_message: expect.stringContaining("OPENAI_API_KEY"),
    });
    expect(find(ps, "qwen", "openai-compat")).toMatchObject({ available: false, has_api_key: false });
    expect(JSON.stringify(ps)).not.toContain("sk-deepseek-listing");
    svc.env.OPENAI_API_KEY = "sk-openai-listing-0123456789";
    try {
      const again = await list();
      expect(find(again, "openai", "api")).toMatchObject({ available: true, has_api_key: true, status_message: null });
      expect(find(again, "openai", "openai-compat")).toMatchObject({ available: true, has_api_key: true });
    } finally {
      delete svc.env.OPENAI_API_KEY;
    }
  });

  it("Ollama is available with the models of its live tag list", async () => {
    const o = find(await list(), "ollama", "openai-compat");
    expect(o).toMatchObject({ available: true, has_api_key: false, status_message: null });
    expect(o.models.map((m) => m.id)).toEqual(OLLAMA_TAGS.models.map((m) => m.name));
    expect(ollama.requests.at(-1)).toMatchObject({ method: "GET", path: "/api/tags" });
  });

  it("Ollama on a closed port is unavailable with a status message, quickly", async () => {
    svc.env.ATOMSTUDIO_OLLAMA_BASE_URL = `http://127.0.0.1:${closedPort}/v1`;
    const t0 = Date.now();
    const o = find(await list(), "ollama", "openai-compat");
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(o).toMatchObject({ available: false, models: [], status_message: expect.stringContaining("not reachable") });
  });

  it("Ollama that never answers is given up after 2 s", async () => {
    svc.env.ATOMSTUDIO_OLLAMA_BASE_URL = `http://127.0.0.1:${silentPort}/v1`;
    const t0 = Date.now();
    const o = find(await list(), "ollama", "openai-compat");
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(1900);
    expect(took).toBeLessThan(3500);
    expect(o).toMatchObject({ available: false, status_message: expect.stringContaining("within 2 s") });
    svc.env.ATOMSTUDIO_OLLAMA_BASE_URL = `${ollama.origin}/v1`;
  });

  it("agents are available when their program is on PATH", async () => {
    const ps = await list();
    // claude's own key variable is set (ANTHROPIC_API_KEY), codex's is not
    expect(find(ps, "claude", "cli-agent")).toMatchObject({ available: true, status_message: null, has_api_key: true });
    expect(find(ps, "codex", "cli-agent")).toMatchObject({ available: true, has_api_key: false });
    expect(find(ps, "gemini", "cli-agent")).toMatchObject({
      available: false,
      status_message: expect.stringContaining("gemini"),
    });
  });

  it("is a registry operation: OpenAPI entry and the MCP tool svc_providers", async () => {
    const doc = (await (await fetch(`${svc.url}/api/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    expect(doc.paths["/api/chat/providers"]?.get).toMatchObject({ operationId: "providers", "x-mcp-tool": "svc_providers" });
    // the streaming endpoints are documented too
    for (const p of ["/api/chat/stream", "/api/chat/stream-openai-compat", "/api/chat/stream-cli-agent"])
      expect(doc.paths[p]?.post?.responses, p).toHaveProperty("200");
    const tools = (await (await fetch(`${svc.url}/api/tools`)).json()) as {
      mcp: Array<{ name: string; endpoint: { path: string } }>;
    };
    expect(tools.mcp.find((t) => t.name === "svc_providers")?.endpoint).toEqual({ method: "GET", path: "/api/chat/providers" });
  });
});
