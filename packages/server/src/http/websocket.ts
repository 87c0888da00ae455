/**
 * WebSocket support for the service's routes (`/api/view/ws`, `/api/optimize/ws`), registered
 * once whichever plugin asks first. A message is capped like a request body (the configuration's
 * `bodyLimit`): beyond it `ws` closes the connection with 1009 (message too big) before the
 * message is buffered whole.
 */
import websocket from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import type { ServiceConfig } from "../config.ts";

export const ensureWebSocket = async (app: FastifyInstance, config: ServiceConfig): Promise<void> => {
  if (app.hasDecorator("websocketServer")) return;
  await app.register(websocket, { options: { maxPayload: config.bodyLimit } });
  // An upgrade refused before @fastify/websocket's own hooks ran (the guards of http/guard.ts
  // run first) would leave its socket open and keep the service from closing: end it.
  app.addHook("onResponse", async (req) => {
    if (!(req as { ws?: boolean }).ws && req.headers.upgrade?.toLowerCase() === "websocket") req.raw.socket?.destroy();
  });
};
