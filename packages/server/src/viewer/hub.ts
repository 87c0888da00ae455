/**
 * The studios connected to this process over `GET /api/view/ws`, and the request/reply exchange
 * with one of them (decisions §5): the service sends `{id, command, params}`, the studio answers
 * `{id, ok: true, result}` or `{id, ok: false, error}`. A studio that closes its socket fails every
 * request it was handling at once with 503 NO_VIEWER; one that stays silent fails with 504
 * VIEWER_TIMEOUT after the timeout.
 */
import { randomUUID } from "node:crypto";
import { AtomStudioError } from "atomstudio-core";
import { serviceError, statusOf } from "../errors/codes.ts";

/** What the hub needs of a socket (the `ws` WebSocket satisfies it; tests may pass fakes). */
export interface ViewerSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  readonly readyState: number;
}

/** Error a studio may report: `{code, message}` (a bare string is accepted too). */
export interface ViewerErrorPayload {
  code?: string;
  message?: string;
  status?: number;
  details?: Record<string, unknown>;
}

export interface ViewerClientInfo {
  id: string;
  connectedAt: number;
  lastActive: number;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
}

interface Client extends ViewerClientInfo {
  socket: ViewerSocket;
  pending: Map<string, Pending>;
}

export const noViewer = (
  message = "No studio (viewer) is connected: open the AtomStudio web studio first",
  details?: Record<string, unknown>,
) => serviceError("NO_VIEWER", message, details);

export const viewerTimeout = (ms: number, clientId: string) =>
  serviceError("VIEWER_TIMEOUT", `The studio did not answer within ${ms / 1000} s`, { client_id: clientId, timeout_ms: ms });

/** Turn a studio's (or a remote service process's) error payload into the service's error. */
export const viewerError = (payload: unknown): AtomStudioError => {
  const p: ViewerErrorPayload = typeof payload === "string" ? { message: payload } : ((payload ?? {}) as ViewerErrorPayload);
  const code = typeof p.code === "string" && /^[A-Z][A-Z0-9_]*$/.test(p.code) ? p.code : "VIEWER_ERROR";
  // Known codes take the table's status (errors/codes.ts); an unknown one is the studio's failure (502).
  return new AtomStudioError(code, p.message ?? "The studio reported an error", p.details, statusOf(code, p.status));
};

/** Serializable form of an error, for a studio reply or a cross-process reply. */
export const errorPayload = (e: unknown): ViewerErrorPayload => {
  const err = e as Partial<AtomStudioError>;
  return {
    code: typeof err?.code === "string" ? err.code : "VIEWER_ERROR",
    message: typeof err?.message === "string" ? err.message : String(e),
    ...(typeof err?.status === "number" ? { status: err.status } : {}),
    ...(err?.details ? { details: err.details } : {}),
  };
};

const OPEN = 1;

export class ViewerHub {
  readonly #clients = new Map<string, Client>();
  /** Called when a client connects, disconnects or becomes active (the Redis bridge listens). */
  onChange: ((event: "connect" | "disconnect" | "active", client: ViewerClientInfo) => void) | undefined;

  constructor(readonly timeoutMs: number) {}

  /**
   * Register a socket under `id`, which the caller has checked it may use (claims.ts); a
   * connection already registered under it (the same studio, reconnected) is replaced. The
   * welcome message gives the studio its id and, when given, the secret that proves it owns it.
   */
  attach(socket: ViewerSocket, id: string, secret?: string): string {
    const old = this.#clients.get(id);
    if (old) this.detach(old.socket, "replaced by a new connection of the same studio");
    const now = Date.now();
    const client: Client = { id, socket, connectedAt: now, lastActive: now, pending: new Map() };
    this.#clients.set(id, client);
    socket.send(
      JSON.stringify({
        type: "welcome",
        client_id: id,
        ...(secret ? { client_secret: secret } : {}),
        timeout_ms: this.timeoutMs,
      }),
    );
    this.onChange?.("connect", client);
    return id;
  }

  /** Forget a socket (closed); every request it was handling fails now with 503 NO_VIEWER. */
  detach(socket: ViewerSocket, why = "the studio disconnected while handling the request"): void {
    for (const [id, c] of this.#clients) {
      if (c.socket !== socket) continue;
      this.#clients.delete(id);
      for (const p of c.pending.values()) {
        clearTimeout(p.timer);
        p.reject(noViewer(`No answer: ${why}`, { client_id: id }));
      }
      c.pending.clear();
      this.onChange?.("disconnect", c);
    }
  }

  /** A message from a studio: a reply to a pending command, or an activity ping (`{type: "activity"}`). */
  receive(socket: ViewerSocket, raw: string): void {
    const client = [...this.#clients.values()].find((c) => c.socket === socket);
    if (!client) return;
    let msg: { id?: unknown; ok?: unknown; result?: unknown; error?: unknown; type?: unknown };
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    // Activity is the user's (pings the studio sends on input), not the studio's own replies.
    if (msg.type === "activity") {
      this.touch(client);
      return;
    }
    if (typeof msg.id !== "string") return;
    const p = client.pending.get(msg.id);
    if (!p) return;
    client.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok === true) p.resolve(msg.result);
    else p.reject(viewerError(msg.error));
  }

  private touch(client: Client): void {
    client.lastActive = Date.now();
    this.onChange?.("active", client);
  }

  list(): ViewerClientInfo[] {
    return [...this.#clients.values()].map(({ id, connectedAt, lastActive }) => ({ id, connectedAt, lastActive }));
  }

  has(id: string): boolean {
    return this.#clients.has(id);
  }

  /** The named client, or else the most recently active one; undefined when none fits. */
  pick(clientId?: string): ViewerClientInfo | undefined {
    if (clientId) return this.#clients.get(clientId);
    let best: Client | undefined;
    for (const c of this.#clients.values()) if (!best || c.lastActive >= best.lastActive) best = c;
    return best;
  }

  /** Send a command to a client of this process and wait for its reply. */
  request(clientId: string | undefined, command: string, params: unknown, timeoutMs = this.timeoutMs): Promise<unknown> {
    const info = this.pick(clientId);
    if (!info) return Promise.reject(clientId ? noViewer(`No studio with client id ${clientId} is connected`) : noViewer());
    const client = this.#clients.get(info.id) as Client;
    if (client.socket.readyState !== OPEN) {
      this.detach(client.socket);
      return Promise.reject(noViewer());
    }
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        client.pending.delete(id);
        reject(viewerTimeout(timeoutMs, client.id));
      }, timeoutMs);
      client.pending.set(id, { resolve, reject, timer });
      try {
        client.socket.send(JSON.stringify({ id, command, params }));
      } catch (e) {
        clearTimeout(timer);
        client.pending.delete(id);
        reject(noViewer(`Could not reach the studio: ${(e as Error).message}`));
      }
    });
  }

  /** Close every socket (service shutdown). */
  closeAll(): void {
    for (const c of [...this.#clients.values()]) {
      this.detach(c.socket, "the service is shutting down");
      try {
        c.socket.close(1001, "service shutting down");
      } catch {
        // already closed
      }
    }
  }
}
