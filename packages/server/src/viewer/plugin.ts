/**
 * The viewer relay plugin: `GET /api/view/ws` for studios, and `ctx.services.viewer` for the
 * viewer operations (operations/viewer.ts). Across processes through Redis when the service has
 * `ATOMSTUDIO_REDIS_URL`; in-process otherwise.
 */

import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { provide, type ServiceContext } from "../context.ts";
import { ensureWebSocket } from "../http/websocket.ts";
import type { Plugin } from "../plugins.ts";
import { CLIENT_ID, CLIENT_SECRET, type ClientClaims, LocalClaims, newClientSecret } from "./claims.ts";
import { ViewerHub, type ViewerSocket } from "./hub.ts";
import { RedisBridge } from "./redis.ts";

/** A studio that has not answered a ping for this long is disconnected. */
const HEARTBEAT_MS = 20_000;

/** Production default of the interface: 10 seconds. */
export const DEFAULT_VIEWER_TIMEOUT_MS = 10_000;

export interface ViewerRelay {
  readonly timeoutMs: number;
  readonly hub: ViewerHub;
  /** Run a studio command; `clientId` names a studio, else the most recently active answers. */
  request(clientId: string | undefined, command: string, params?: unknown): Promise<unknown>;
}

declare module "../context.ts" {
  interface Services {
    viewer: ViewerRelay;
  }
}

export interface ViewerPluginOptions {
  /** Reply timeout; default: the configuration's (10 s unless ATOMSTUDIO_VIEWER_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Ping interval; a studio that has not answered the previous ping is dropped. Default 20 s. */
  heartbeatMs?: number;
  /** Redis URL for the cross-process relay; default: the service configuration's. */
  redisUrl?: string | null;
}

export const viewerPlugin =
  (opts: ViewerPluginOptions = {}): Plugin =>
  async (app: FastifyInstance, ctx: ServiceContext) => {
    const timeoutMs = opts.timeoutMs ?? ctx.config.viewerTimeoutMs ?? DEFAULT_VIEWER_TIMEOUT_MS;
    const hub = new ViewerHub(timeoutMs);
    const redisUrl = opts.redisUrl === null ? undefined : (opts.redisUrl ?? ctx.config.redisUrl);
    const bridge = redisUrl ? new RedisBridge(redisUrl, hub, app.log) : undefined;
    if (bridge)
      await bridge.start().catch((e: Error) => {
        throw new Error(`Viewer relay: cannot reach Redis at ATOMSTUDIO_REDIS_URL (${e.message})`);
      });

    const claims: ClientClaims = bridge ?? new LocalClaims();

    const relay: ViewerRelay = {
      timeoutMs,
      hub,
      request: (clientId, command, params = {}) =>
        bridge ? bridge.request(clientId, command, params, timeoutMs) : hub.request(clientId, command, params, timeoutMs),
    };
    provide(ctx, "viewer", relay);

    await ensureWebSocket(app, ctx.config);

    // Heartbeat: a studio whose connection died silently (sleep, network change) would otherwise
    // stay "connected" until TCP gives up, and requests to it would wait for the timeout.
    const alive = new WeakMap<object, boolean>();
    const sockets = new Set<import("ws").WebSocket>();
    const heartbeat = setInterval(() => {
      for (const ws of sockets) {
        if (alive.get(ws) === false) {
          ws.terminate();
          continue;
        }
        alive.set(ws, false);
        try {
          ws.ping();
        } catch {
          // closing
        }
      }
    }, opts.heartbeatMs ?? HEARTBEAT_MS);
    heartbeat.unref?.();

    // `?client_id=` asks for an id, `?client_secret=` proves a claim on it (claims.ts); an id
    // claimed with another secret is refused with close code 4409.
    app.get("/api/view/ws", { websocket: true }, async (socket, req) => {
      const q = req.query as Record<string, unknown>;
      const s = socket as unknown as ViewerSocket;
      const wanted = typeof q.client_id === "string" && CLIENT_ID.test(q.client_id) ? q.client_id : undefined;
      const given = typeof q.client_secret === "string" && CLIENT_SECRET.test(q.client_secret) ? q.client_secret : undefined;
      const id = wanted ?? randomUUID();
      const secret = given ?? newClientSecret();
      // Studios send nothing before the welcome, so no message is lost while the claim is checked.
      const owned = await claims.claim(id, secret);
      if (socket.readyState !== socket.OPEN) {
        if (owned && !hub.has(id)) claims.release(id);
        return;
      }
      if (!owned) return socket.close(4409, "client id taken: it belongs to another connection");
      sockets.add(socket);
      alive.set(socket, true);
      hub.attach(s, id, secret);
      socket.on("pong", () => alive.set(socket, true));
      socket.on("message", (data: Buffer) => {
        alive.set(socket, true);
        hub.receive(s, data.toString());
      });
      const gone = () => {
        sockets.delete(socket);
        hub.detach(s);
        // The id stays reserved for its owner a while longer, unless a newer connection holds it.
        if (!hub.has(id)) claims.release(id);
      };
      socket.on("close", gone);
      socket.on("error", gone);
    });

    app.addHook("preClose", async () => {
      clearInterval(heartbeat);
      hub.closeAll();
      await bridge?.stop();
    });
  };
