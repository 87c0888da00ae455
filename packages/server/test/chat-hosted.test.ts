/** POST /api/chat/stream through the official SDKs, against loopback peers of their streaming formats. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnthropicPeer } from "./peers/anthropic.ts";
import { post, readSse, type Service, startService } from "./peers/harness.ts";
import { startOpenAICompatPeer } from "./peers/openai-compat.ts";
import type { Peer } from "./peers/serve.ts";

const ANTHROPIC_KEY = "sk-ant-api03-server-held-abcdef0123456789";
const OPENAI_KEY = "sk-proj-server-held-abcdef0123456789";
let anthropic: Peer;
let openai: Peer;
let svc: Service;
const messages = [{ role: "user", content: "What is the symmetry of rocksalt?" }];
const stream = (body: Record<string, unknown>) => post(`${svc.url}/api/chat/stream`, { messages, ...body });

beforeAll(async () => {
  anthropic = await startAnthropicPeer();
  openai = await startOpenAICompatPeer();
  svc = await startService({
    ANTHROPIC_API_KEY: ANTHROPIC_KEY,
    OPENAI_API_KEY: OPENAI_KEY,
    ATOMSTUDIO_ANTHROPIC_BASE_URL: anthropic.origin,
    ATOMSTUDIO_OPENAI_BASE_URL: `${openai.origin}/v1`,
  });
});
afterAll(async () => {
  await svc.close();
  await anthropic.close();
  await openai.close();
});

describe("anthropic (default provider)", () => {
  it("streams Messages text deltas as {text} then [DONE]", async () => {
    const res = await post(`${svc.url}/api/chat/stream`, {
      messages,
      system: "You are a crystallographer.",
      max_tokens: 256,
      temperature: 0.2,
    });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events).toEqual([{ text: "Hello" }, { text: ", rocksalt" }, { text: " has Fm-3m symmetry." }, "[DONE]"]);
    const seen = anthropic.requests.at(-1)!;
    expect(seen.path).toBe("/v1/messages");
    expect(seen.body).toMatchObject({
      model: "claude-sonnet-4-6",
      system: "You are a crystallographer.",
      max_tokens: 256,
      temperature: 0.2,
      stream: true,
      messages,
    });
    // the key went to its own provider, and only there
    expect([seen.authorization, seen.xApiKey].join(" ")).toContain(ANTHROPIC_KEY);
  });

  it("leaves thinking blocks out of the text stream", async () => {
    const { events } = await readSse(await stream({ model: "thinking" }));
    expect(events).toEqual([{ text: "SrTiO3 has 5 atoms per cell." }, "[DONE]"]);
  });

  it("an error event mid-stream becomes an error event then [DONE]", async () => {
    const { events } = await readSse(await stream({ model: "overloaded" }));
    expect(events[0]).toEqual({ text: "Partial" });
    expect(events.at(-2)).toMatchObject({ code: "UPSTREAM_ERROR", error: expect.stringContaining("Overloaded") });
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("upstream 401 → 401 INVALID_API_KEY", async () => {
    const res = await stream({ model: "error-401" });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toMatchObject({ code: "INVALID_API_KEY" });
    expect(JSON.stringify(body)).not.toContain(ANTHROPIC_KEY);
  });
});

describe("openai", () => {
  it("streams chat-completion chunks as {text}, system prompt first", async () => {
    const { events } = await readSse(await stream({ provider: "openai", model: "content", system: "Be brief." }));
    expect(events).toEqual([
      { text: "A" },
      { text: " 2x2x2" },
      { text: " supercell of" },
      { text: " Si has 16 atoms." },
      "[DONE]",
    ]);
    const seen = openai.requests.at(-1)!;
    expect(seen.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(seen.body?.messages).toEqual([{ role: "system", content: "Be brief." }, ...messages]);
  });

  it("upstream 429 → 502 UPSTREAM_ERROR with details.status 429", async () => {
    const res = await stream({ provider: "openai", model: "error-429" });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ code: "UPSTREAM_ERROR", details: { status: 429 } });
  });
});

describe("request errors", () => {
  it("unknown provider → 400 UNKNOWN_PROVIDER", async () => {
    const res = await stream({ provider: "deepseek" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "UNKNOWN_PROVIDER" });
  });

  it("missing key → 401 MISSING_API_KEY", async () => {
    const bare = await startService({ ATOMSTUDIO_ANTHROPIC_BASE_URL: anthropic.origin });
    try {
      const res = await post(`${bare.url}/api/chat/stream`, { messages });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: "MISSING_API_KEY", details: { env: "ANTHROPIC_API_KEY" } });
    } finally {
      await bare.close();
    }
  });
});
