/**
 * Keys never leave the service (responses, events, error messages, log lines), a server-held key
 * only goes to its own provider's URL, and agents stay inside their root (decisions §7).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redact } from "../src/chat/secrets.ts";
import { type AgentBench, hang, makeAgentBench } from "./peers/agents.ts";
import { startAnthropicPeer } from "./peers/anthropic.ts";
import { post, type Service, startService } from "./peers/harness.ts";
import { startOpenAICompatPeer } from "./peers/openai-compat.ts";
import type { Peer } from "./peers/serve.ts";

const KEYS = {
  DEEPSEEK_API_KEY: "sk-deepseek-SECRET-aaaaaaaaaaaaaaaa",
  OPENAI_API_KEY: "sk-proj-SECRET-bbbbbbbbbbbbbbbbbbbb",
  ANTHROPIC_API_KEY: "sk-ant-api03-SECRET-cccccccccccccccc",
  MOONSHOT_API_KEY: "mk-SECRET-dddddddddddddddddddd",
};
const REQUEST_KEY = "sk-request-SECRET-eeeeeeeeeeeeeeee";
const ALL = [...Object.values(KEYS), REQUEST_KEY];

let provider: Peer; // the configured URL of deepseek and openai
let elsewhere: Peer; // a URL that a request names with base_url
let anthropic: Peer;
let bench: AgentBench;
let svc: Service;
const bodies: string[] = [];

const call = async (path: string, body: unknown): Promise<Response> => {
  const res = await post(`${svc.url}${path}`, body);
  const text = await res.clone().text();
  const headers: string[] = [];
  res.headers.forEach((v, k) => {
    headers.push(`${k}: ${v}`);
  });
  bodies.push(text, ...headers);
  return res;
};
const messages = [{ role: "user", content: "hi" }];

beforeAll(async () => {
  provider = await startOpenAICompatPeer();
  elsewhere = await startOpenAICompatPeer();
  anthropic = await startAnthropicPeer();
  bench = await makeAgentBench();
  svc = await startService({
    ...KEYS,
    ATOMSTUDIO_DEEPSEEK_BASE_URL: `${provider.origin}/v1`,
    ATOMSTUDIO_OPENAI_BASE_URL: `${provider.origin}/v1`,
    ATOMSTUDIO_KIMI_BASE_URL: `${provider.origin}/v1`,
    ATOMSTUDIO_ANTHROPIC_BASE_URL: anthropic.origin,
    ATOMSTUDIO_AGENT_ROOT: bench.root,
    PATH: bench.path,
    HOME: bench.root,
  });
});
afterAll(async () => {
  await svc.close();
  await Promise.all([provider.close(), elsewhere.close(), anthropic.close()]);
  await bench.cleanup();
});

describe("a server-held key only goes to its own provider", () => {
  it("base_url override without api_key → 401 MISSING_API_KEY and the other URL is never called", async () => {
    for (const p of ["deepseek", "openai", "kimi", "custom", "nonesuch"]) {
      const res = await call("/api/chat/stream-openai-compat", {
        messages,
        provider: p,
        base_url: `${elsewhere.origin}/v1`,
        model: "content",
      });
      expect(res.status, p).toBe(401);
      expect(await res.json()).toMatchObject({ code: "MISSING_API_KEY" });
    }
    expect(elsewhere.requests).toHaveLength(0);
  });

  it("base_url override with the request's own api_key: that key, and only that key, is sent there", async () => {
    const res = await call("/api/chat/stream-openai-compat", {
      messages,
      provider: "deepseek",
      base_url: `${elsewhere.origin}/v1`,
      api_key: REQUEST_KEY,
      model: "content",
    });
    expect(res.status).toBe(200);
    await res.text();
    expect(elsewhere.requests.map((r) => r.authorization)).toEqual([`Bearer ${REQUEST_KEY}`]);
    const seen = JSON.stringify(elsewhere.requests);
    for (const k of Object.values(KEYS)) expect(seen).not.toContain(k);
  });

  it("the configured provider URL gets its own key and no other", async () => {
    const before = provider.requests.length;
    await (await call("/api/chat/stream-openai-compat", { messages, provider: "deepseek", model: "content" })).text();
    await (await call("/api/chat/stream-openai-compat", { messages, provider: "openai", model: "content" })).text();
    expect(provider.requests.slice(before).map((r) => r.authorization)).toEqual([
      `Bearer ${KEYS.DEEPSEEK_API_KEY}`,
      `Bearer ${KEYS.OPENAI_API_KEY}`,
    ]);
  });
});

describe("keys appear in no response, event or log line", () => {
  it("exercises every failure path that could echo a key", async () => {
    // upstream echoes the key it got (OpenAI's 401 message does)
    expect((await call("/api/chat/stream-openai-compat", { messages, model: "error-401" })).status).toBe(401);
    expect(
      (
        await call("/api/chat/stream-openai-compat", {
          messages,
          model: "error-401",
          base_url: `${elsewhere.origin}/v1`,
          api_key: REQUEST_KEY,
        })
      ).status,
    ).toBe(401);
    expect((await call("/api/chat/stream-openai-compat", { messages, model: "error-500" })).status).toBe(502);
    expect((await call("/api/chat/stream-openai-compat", { messages, model: "malformed" })).status).toBe(200);
    expect((await call("/api/chat/stream-openai-compat", { messages, model: "drop" })).status).toBe(200);
    expect((await call("/api/chat/stream", { messages, model: "error-401" })).status).toBe(401);
    expect((await call("/api/chat/stream", { messages, model: "overloaded" })).status).toBe(200);
    expect((await call("/api/chat/stream", { messages, provider: "openai", model: "error-401" })).status).toBe(401);
    // an agent that prints its key, on stdout (an event) and on stderr before crashing
    await bench.install("claude", `echo "key is $ANTHROPIC_API_KEY"\necho "auth failed for $ANTHROPIC_API_KEY" >&2\nexit 2`);
    const agent = await call("/api/chat/stream-cli-agent", { agent: "claude", prompt: "hi" });
    expect(agent.status).toBe(200);
    expect(await agent.text()).toContain("AGENT_CRASHED");
    await bench.install("codex", `echo "auth failed for $OPENAI_API_KEY" >&2\nexit 2`);
    const crash = await call("/api/chat/stream-cli-agent", { agent: "codex", prompt: "hi" });
    expect(crash.status).toBe(500);
    expect(await crash.text()).toContain("[redacted]");
    // a tool output that contains the key (the agent ran `env`)
    await bench.install(
      "codex",
      `echo '{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"env","aggregated_output":"OPENAI_API_KEY='"$OPENAI_API_KEY"'","exit_code":0,"status":"completed"}}'`,
    );
    const envDump = await call("/api/chat/stream-cli-agent", { agent: "codex", prompt: "hi" });
    expect(await envDump.text()).toContain("OPENAI_API_KEY=[redacted]");
    const providers = await fetch(`${svc.url}/api/chat/providers`).catch(() => null);
    if (providers) bodies.push(await providers.text());

    const everything = [...bodies, ...svc.logs].join("\n");
    expect(svc.logs.length).toBeGreaterThan(0);
    for (const k of ALL) expect(everything, `leaked ${k.slice(0, 12)}…`).not.toContain(k);
    // and the listing reports presence only
    expect(everything).not.toMatch(/SECRET/);
  });

  it("redact() removes held keys and key-shaped strings", () => {
    const env = { OPENAI_API_KEY: "plainsecretvalue" };
    expect(redact("a plainsecretvalue b", [], env)).toBe("a [redacted] b");
    expect(redact("Authorization: Bearer abcdefghijklmnop", [], {})).toBe("Authorization: Bearer [redacted]");
    expect(redact("key sk-abcdefghijklmnop and AIzaSyA1234567890abcdefghijklmnop", [], {})).toBe("key [redacted] and [redacted]");
    expect(redact("given xyz-request-key", ["xyz-request-key"], {})).toBe("given [redacted]");
  });
});

describe("agents stay inside their root", () => {
  it("a working directory outside the agent root is 400 and starts nothing", async () => {
    await bench.install("gemini", hang());
    const res = await call("/api/chat/stream-cli-agent", {
      agent: "gemini",
      prompt: "hi",
      context: { working_directory: "/tmp" },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "INVALID_WORKING_DIRECTORY" });
  });
});
