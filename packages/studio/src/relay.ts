/**
 * The studio's side of the viewer relay (decisions §5): a WebSocket to GET /api/view/ws that
 * answers the service's commands `{id, command, params}` with `{id, ok, result}` or
 * `{id, ok: false, error: {code, message}}`, and reconnects when the connection drops.
 * User activity is reported (`{type: "activity"}`) so that the most recently used studio answers
 * requests that name none.
 */
import { storedToken } from "./auth.ts";

export type CommandHandler = (params: Record<string, unknown>) => unknown | Promise<unknown>;

export type RelayStatus = "connecting" | "connected" | "disconnected";

export interface RelayOptions {
  /** Ask for this client id (several studios: requests may name one). */
  clientId?: string;
  onStatus?: (status: RelayStatus, clientId: string | null) => void;
}

export class RelayClient {
  readonly handlers: Record<string, CommandHandler>;
  clientId: string | null = null;
  status: RelayStatus = "disconnected";
  #ws: WebSocket | null = null;
  #retry = 500;
  #closed = false;
  #lastActivity = 0;

  constructor(
    handlers: Record<string, CommandHandler>,
    readonly opts: RelayOptions = {},
  ) {
    this.handlers = handlers;
  }

  connect(): void {
    this.#closed = false;
    const q = new URLSearchParams();
    const token = storedToken();
    if (token) q.set("token", token);
    const wanted = this.clientId ?? this.opts.clientId;
    if (wanted) q.set("client_id", wanted);
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/api/view/ws${q.size ? `?${q}` : ""}`);
    this.#ws = ws;
    this.#setStatus("connecting");
    ws.onmessage = (ev) => void this.#onMessage(String(ev.data));
    ws.onclose = () => {
      this.#ws = null;
      this.#setStatus("disconnected");
      if (this.#closed) return;
      setTimeout(() => this.connect(), this.#retry);
      this.#retry = Math.min(this.#retry * 2, 10_000);
    };
  }

  close(): void {
    this.#closed = true;
    this.#ws?.close();
  }

  /** Tell the service this studio is the one in use (throttled to once a second). */
  activity(): void {
    const now = Date.now();
    if (now - this.#lastActivity < 1000 || this.#ws?.readyState !== WebSocket.OPEN) return;
    this.#lastActivity = now;
    this.#ws.send(JSON.stringify({ type: "activity" }));
  }

  #setStatus(s: RelayStatus): void {
    this.status = s;
    this.opts.onStatus?.(s, this.clientId);
  }

  async #onMessage(raw: string): Promise<void> {
    let msg: { id?: string; command?: string; params?: Record<string, unknown>; type?: string; client_id?: string };
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    if (msg.type === "welcome") {
      this.clientId = msg.client_id ?? null;
      this.#retry = 500;
      this.#setStatus("connected");
      return;
    }
    if (typeof msg.id !== "string" || typeof msg.command !== "string") return;
    const handler = this.handlers[msg.command];
    let reply: Record<string, unknown>;
    try {
      if (!handler) throw Object.assign(new Error(`Unknown viewer command ${msg.command}`), { code: "UNKNOWN_COMMAND" });
      reply = { id: msg.id, ok: true, result: await handler(msg.params ?? {}) };
    } catch (e) {
      const err = e as { code?: string; message?: string };
      reply = { id: msg.id, ok: false, error: { code: err.code ?? "VIEWER_ERROR", message: err.message ?? String(e) } };
    }
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.send(JSON.stringify(reply));
  }
}
