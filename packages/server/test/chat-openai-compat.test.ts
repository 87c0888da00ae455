/** POST /api/chat/stream-openai-compat against a loopback chat-completions peer. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChunkNormalizer } from "../src/chat/providers/normalize.ts";
import { post, readSse, type Service, startService } from "./peers/harness.ts";
import { startOpenAICompatPeer } from "./peers/openai-compat.ts";
import type { Peer } from "./peers/serve.ts";

const KEY = "sk-deepseek-server-held-0123456789";
let peer: Peer;
let svc: Service;
const msgs = [{ role: "user", content: "How many atoms in a 2x2x2 Si supercell?" }];
const stream = (body: Record<string, unknown>) => post(`${svc.url}/api/chat/stream-openai-compat`, { messages: msgs, ...body });

beforeAll(async () => {
  peer = await startOpenAICompatPeer();
  svc = await startService({ DEEPSEEK_API_KEY: KEY, ATOMSTUDIO_DEEPSEEK_BASE_URL: `${peer.origin}/v1`, PATH: process.env.PATH });
});
afterAll(async () => {
  await svc.close();
  await peer.close();
});

describe("normalized provider stream", () => {
  it("re-emits content deltas as {text} and ends with [DONE]; defaults and the server key go to the provider", async () => {
    const res = await stream({ model: "content" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const { events } = await readSse(res);
    expect(events).toEqual([
      { text: "A" },
      { text: " 2x2x2" },
      { text: " supercell of" },
      { text: " Si has 16 atoms." },
      "[DONE]",
    ]);
    const seen = peer.requests.at(-1)!;
    expect(seen.path).toBe("/v1/chat/completions");
    expect(seen.authorization).toBe(`Bearer ${KEY}`);
    expect(seen.body).toMatchObject({ model: "content", temperature: 0.3, max_tokens: 2048, stream: true });
    expect(seen.body?.messages).toEqual(msgs);
  });

  it("sends max_completion_tokens to OpenAI itself, max_tokens elsewhere", async () => {
    svc.env.OPENAI_API_KEY = "sk-openai-compat-0123456789";
    svc.env.ATOMSTUDIO_OPENAI_BASE_URL = `${peer.origin}/v1`;
    try {
      await (await stream({ provider: "openai", model: "content", max_tokens: 100 })).text();
      expect(peer.requests.at(-1)!.body).toMatchObject({ max_completion_tokens: 100 });
      expect(peer.requests.at(-1)!.body).not.toHaveProperty("max_tokens");
    } finally {
      delete svc.env.OPENAI_API_KEY;
      delete svc.env.ATOMSTUDIO_OPENAI_BASE_URL;
    }
  });

  it("uses the provider's default model when none is given (deepseek is the default provider)", async () => {
    const res = await post(`${svc.url}/api/chat/stream-openai-compat`, { messages: msgs });
    await res.text();
    expect(peer.requests.at(-1)!.body?.model).toBe("deepseek-chat");
  });

  it("accumulates one tool call split over many chunks and emits it whole", async () => {
    const { events } = await readSse(
      await stream({
        model: "tool-call-split",
        tools: [{ type: "function", function: { name: "make_supercell" } }],
        tool_choice: "auto",
      }),
    );
    expect(events).toEqual([
      { tool_call: { id: "call_Vx1mA7sQ2b", name: "make_supercell", arguments: '{"scaling":[2,2,2]}' } },
      "[DONE]",
    ]);
    const call = events[0] as { tool_call: { arguments: string } };
    expect(JSON.parse(call.tool_call.arguments)).toEqual({ scaling: [2, 2, 2] });
    // tools and tool_choice are passed through unchanged
    expect(peer.requests.at(-1)!.body).toMatchObject({
      tools: [{ type: "function", function: { name: "make_supercell" } }],
      tool_choice: "auto",
    });
  });

  it("emits every one of several parallel tool calls, in index order", async () => {
    const { events } = await readSse(await stream({ model: "tool-calls-parallel" }));
    expect(events).toEqual([
      { tool_call: { id: "call_Ab12", name: "replace_atom", arguments: '{"index": 0, "new_element": "Ge"}' } },
      { tool_call: { id: "call_Cd34", name: "move_atom", arguments: '{"index": 1, "new_position": [0.5, 0.5, 0.5]}' } },
      "[DONE]",
    ]);
  });

  it("handles a usage-only final chunk with empty choices", async () => {
    const { events } = await readSse(await stream({ model: "usage-final" }));
    expect(events).toEqual([{ text: "Silicon is" }, { text: " diamond cubic." }, "[DONE]"]);
  });

  it("ignores reasoning_content deltas", async () => {
    const { events } = await readSse(await stream({ model: "reasoning" }));
    expect(events).toEqual([{ text: "8 atoms." }, "[DONE]"]);
  });

  it("a malformed chunk after the stream started is an error event then [DONE]", async () => {
    const res = await stream({ model: "malformed" });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events[0]).toEqual({ text: "Partial" });
    expect(events.at(-2)).toMatchObject({ code: "UPSTREAM_ERROR", error: expect.any(String) });
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("a dropped connection after the stream started is an error event then [DONE]", async () => {
    const res = await stream({ model: "drop" });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events[0]).toEqual({ text: "Before the drop" });
    expect(events.at(-2)).toMatchObject({ code: "UPSTREAM_ERROR" });
    expect(events.at(-1)).toBe("[DONE]");
  });
});

describe("errors before the stream starts", () => {
  it("upstream 401 → 401 INVALID_API_KEY, without the key in the message", async () => {
    const res = await stream({ model: "error-401" });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { code: string; error: string };
    expect(body.code).toBe("INVALID_API_KEY");
    expect(body.error).toContain("Incorrect API key provided");
    expect(JSON.stringify(body)).not.toContain(KEY);
  });

  it("upstream 429 → 502 UPSTREAM_ERROR with details.status 429 (no retries)", async () => {
    const before = peer.requests.length;
    const res = await stream({ model: "error-429" });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ code: "UPSTREAM_ERROR", details: { status: 429, provider: "deepseek" } });
    expect(peer.requests.length - before).toBe(1);
  });

  it("upstream 500 → 502 UPSTREAM_ERROR carrying the upstream message", async () => {
    const res = await stream({ model: "error-500" });
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: string; details: { status: number } };
    expect(body.error).toContain("The server had an error while processing your request");
    expect(body.details.status).toBe(500);
  });

  it("unknown provider without base_url → 400 UNKNOWN_PROVIDER", async () => {
    const res = await stream({ provider: "nonesuch" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "UNKNOWN_PROVIDER" });
    const custom = await stream({ provider: "custom" });
    expect(custom.status).toBe(400);
  });

  it("no key configured → 401 MISSING_API_KEY", async () => {
    const res = await stream({ provider: "kimi" });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: "MISSING_API_KEY", details: { env: "MOONSHOT_API_KEY" } });
  });

  it("an unreachable base_url → 502 UPSTREAM_ERROR, without the connection detail", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const { port } = closed.address() as AddressInfo;
    await new Promise((r) => closed.close(r));
    const res = await stream({ provider: "custom", base_url: `http://127.0.0.1:${port}/v1`, api_key: "sk-request-key-abcdefgh" });
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body).toMatchObject({ code: "UPSTREAM_ERROR", details: { status: null } });
    expect(body.error).not.toContain("ECONNREFUSED");
  });

  it("a body of the wrong shape → 422 MALFORMED_REQUEST", async () => {
    const res = await post(`${svc.url}/api/chat/stream-openai-compat`, { messages: "hi" });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ code: "MALFORMED_REQUEST" });
  });

  it("custom provider with base_url and api_key streams from that URL", async () => {
    const { events } = await readSse(
      await stream({ provider: "custom", model: "content", base_url: `${peer.origin}/v1`, api_key: "sk-request-key-abcdefgh" }),
    );
    expect(events.at(-1)).toBe("[DONE]");
    expect(peer.requests.at(-1)!.authorization).toBe("Bearer sk-request-key-abcdefgh");
  });
});

describe("ChunkNormalizer", () => {
  it("flushes calls left open when the stream ends without finish_reason, and names missing ids", () => {
    const n = new ChunkNormalizer();
    expect(
      n.push({
        choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: "get_selection", arguments: "" } }] } }],
      }),
    ).toEqual([]);
    expect(n.flush()).toEqual([{ tool_call: { id: "call_0", name: "get_selection", arguments: "{}" } }]);
  });
});
