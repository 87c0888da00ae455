/**
 * Server-sent event responses: `data: <json>` lines ended by the literal `data: [DONE]`.
 * The response is opened lazily, so that every failure before the first event is still an
 * ordinary ErrorResponse with its status; after that, failures are error events (decisions §3).
 */
import type { FastifyReply } from "fastify";

const HEARTBEAT_MS = 15_000;

export class SseStream {
  private opened = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private ended = false;
  /** Aborted when the client goes away before the stream ended. */
  readonly abort = new AbortController();

  constructor(private readonly reply: FastifyReply) {
    reply.raw.on("close", () => {
      if (!this.ended) this.abort.abort(new Error("client disconnected"));
    });
  }

  get started(): boolean {
    return this.opened;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.reply.hijack();
    // Headers set by hooks (CORS) are kept.
    this.reply.raw.writeHead(200, {
      ...(this.reply.getHeaders() as Record<string, string>),
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    this.reply.raw.flushHeaders?.();
    // A comment line now and then keeps proxies from closing a quiet stream (agents think for minutes).
    this.heartbeat = setInterval(() => {
      if (!this.ended && !this.reply.raw.destroyed) this.reply.raw.write(": keep-alive\n\n");
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    this.reply.raw.once("close", () => clearInterval(this.heartbeat));
  }

  send(event: unknown): void {
    if (this.ended || this.abort.signal.aborted) return;
    const e = event as { error?: unknown; code?: unknown };
    // In-stream errors are logged like failed responses (their texts are already redacted).
    if (typeof e?.error === "string") this.reply.log.warn({ code: e.code }, `stream error: ${e.error}`);
    this.open();
    this.reply.raw.write(`data: ${JSON.stringify(event)}\n\n`);
  }

  /** Write `data: [DONE]` and close. */
  done(): void {
    if (this.ended) return;
    this.open();
    this.ended = true;
    clearInterval(this.heartbeat);
    if (!this.reply.raw.destroyed) this.reply.raw.end("data: [DONE]\n\n");
  }
}
