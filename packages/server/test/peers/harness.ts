/** Test harness for the chat endpoints: the service on loopback with only the chat plugin, its log captured, SSE reading. */
import { Writable } from "node:stream";
import { createParser } from "eventsource-parser";
import type { FastifyInstance } from "fastify";
import { chatPlugin } from "../../src/chat/index.ts";
import { loadConfig } from "../../src/config.ts";
import { buildApp } from "../../src/http/app.ts";

export interface Service {
  url: string;
  app: FastifyInstance;
  /** Every log line the service wrote. */
  logs: string[];
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export const startService = async (env: NodeJS.ProcessEnv): Promise<Service> => {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const { app } = await buildApp({
    config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "trace" }, {}),
    logger: { level: "trace", stream },
    plugins: [chatPlugin({ env })],
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, app, logs, env, close: () => app.close() };
};

export const post = (url: string, body: unknown, signal?: AbortSignal): Promise<Response> =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });

export interface SseResult {
  /** Parsed `data:` payloads, `[DONE]` kept as the string. */
  events: unknown[];
  raw: string;
}

/** Read a whole SSE response. */
export const readSse = async (res: Response): Promise<SseResult> => {
  const raw = await res.text();
  const events: unknown[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e.data === "[DONE]" ? "[DONE]" : JSON.parse(e.data)) });
  parser.feed(raw);
  return { events, raw };
};

/** Read events until `count` arrived (the stream stays open). */
export const readSseUntil = async (res: Response, count: number): Promise<unknown[]> => {
  const events: unknown[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e.data === "[DONE]" ? "[DONE]" : JSON.parse(e.data)) });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(dec.decode(value, { stream: true }));
  }
  return events;
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
