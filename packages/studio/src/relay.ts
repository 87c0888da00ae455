/**
 * The studio's side of the viewer relay (decisions §5): a WebSocket to GET /api/view/ws that
 * answers the service's commands `{id, command, params}` with `{id, ok, result}` or
 * `{id, ok: false, error: {code, message}}`, and reconnects when the connection drops.
 * User activity is reported (`{type: "activity"}`) so that the most recently used studio answers
 * requests that name none.
 *
 * A client id belongs to the connection that claimed it (packages/server/SECURITY.md, "Viewer
 * relay"): the welcome message carries the id and its secret, which the studio presents when it
 * reconnects. The secret of an id the page asked for (`?client_id=`) is kept in localStorage so a
 * reload gets the same id; an id that belongs to someone else (close code 4409) is given up for a
 * fresh one.
 */
import { storedToken } from "./auth.ts";

export type CommandHandler = (params: Record<string, unknown>) => unknown | Promise<unknown>;

/** Close code of a connection that asked for a client id claimed by another connection. */
const CLIENT_ID_TAKEN = 4409;

const secretKey = (id: string) => `atomstudio.relay.${id}`;

const storedSecret = (id: string): string | null => {
  try {
    return localStorage.getItem(secretKey(id));
  } catch {
    return null;
  }
};

const storeSecret = (id: string, secret: string | null): void => {
  try {
    if (secret) localStorage.setItem(secretKey(id), secret);
    else localStorage.removeItem(secretKey(id));
  } catch {
    // storage disabled: the secret lives for this page only
  }
};

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
  /** The id this page asked for (kept across reloads), until it turns out to be someone else's. */
  #wanted: string | undefined;
  #secret: string | null = null;

  constructor(
    handlers: Record<string, CommandHandler>,
    readonly opts: RelayOptions = {},
  ) {
    this.handlers = handlers;
    this.#wanted = opts.clientId;
  }

  connect(): void {
    this.#closed = false;
    const q = new URLSearchParams();
    const token = storedToken();
    if (token) q.set("token", token);
    const wanted = this.clientId ?? this.#wanted;
    if (wanted) q.set("client_id", wanted);
    const secret = this.#secret ?? (wanted ? storedSecret(wanted) : null);
    if (wanted && secret) q.set("client_secret", secret);
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/api/view/ws${q.size ? `?${q}` : ""}`);
    this.#ws = ws;
    this.#setStatus("connecting");
    ws.onmessage = (ev) => void this.#onMessage(String(ev.data));
    ws.onclose = (ev) => {
      this.#ws = null;
      this.#setStatus("disconnected");
      if (this.#closed) return;
      if (ev.code === CLIENT_ID_TAKEN && wanted) {
        console.warn(`Studio id ${wanted} belongs to another connection; connecting with a fresh id`);
        if (wanted === this.#wanted) storeSecret(wanted, null);
        this.#wanted = undefined;
        this.clientId = null;
        this.#secret = null;
        return this.connect();
      }
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
    let msg: {
      id?: string;
      command?: string;
      params?: Record<string, unknown>;
      type?: string;
      client_id?: string;
      client_secret?: string;
    };
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    if (msg.type === "welcome") {
      this.clientId = msg.client_id ?? null;
      this.#secret = msg.client_secret ?? null;
      if (this.clientId && this.clientId === this.#wanted) storeSecret(this.clientId, this.#secret);
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
