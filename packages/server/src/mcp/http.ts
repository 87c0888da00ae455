/**
 * Streamable HTTP MCP endpoint at `/mcp` (decisions §2), stateless: each POST gets a fresh MCP
 * server and transport from the SDK, which answer that one JSON-RPC message (or batch) with a
 * JSON body. There is no session, so GET (server-initiated stream) and DELETE (end session)
 * answer 405 as the specification allows. The bearer token of decisions §7 is checked by the
 * service's onRequest hook before this route runs.
 *
 * Tool calls run the operations in process with the request's headers and query, so a viewer
 * operation sees `X-Viewer-Client` / `client_id` given on the MCP request.
 */
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyRequest } from "fastify";
import { isLoopback } from "../config.ts";
import type { ServiceContext } from "../context.ts";
import { sendError } from "../http/errors.ts";
import { operations as allOperations } from "../operations/index.ts";
import type { Plugin } from "../plugins.ts";
import type { Operation } from "../registry/operation.ts";
import { localInvoke } from "./invoke.ts";
import { createMcpServer } from "./server.ts";

export const MCP_PATH = "/mcp";

const hostnameOf = (hostHeader: string): string => {
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return "";
  }
};

/**
 * DNS-rebinding guard (the MCP transport specification asks servers to validate Origin): a browser
 * page may only reach /mcp from the service's own origin or an origin listed in
 * ATOMSTUDIO_CORS_ORIGINS, and a service on loopback without a token only answers loopback host
 * names. Clients that are not browsers send no Origin and are not affected.
 */
const refusal = (req: FastifyRequest, ctx: ServiceContext): string | undefined => {
  const host = req.headers.host ?? "";
  if (!ctx.config.token && isLoopback(ctx.config.host) && !isLoopback(hostnameOf(host)))
    return `Host ${host} is not a loopback name`;
  const origin = req.headers.origin;
  if (origin === undefined || ctx.config.corsOrigins.includes(origin)) return undefined;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return `Origin ${origin} is not allowed`;
  }
  return originHost === host ? undefined : `Origin ${origin} is not allowed`;
};

/** The `/mcp` route for the given operations (default: every operation of the service, read when the plugin runs). */
export const mcpHttpPlugin =
  (only?: readonly Operation[]): Plugin =>
  (app, ctx) => {
    const operations = only ?? allOperations;
    app.route({
      method: ["POST", "GET", "DELETE"],
      url: MCP_PATH,
      handler: async (req, reply) => {
        const refused = refusal(req, ctx);
        if (refused) return sendError(reply, req, new AtomStudioError("FORBIDDEN_ORIGIN", refused, undefined, 403));
        if (req.method !== "POST") {
          reply.header("allow", "POST");
          return sendError(
            reply,
            req,
            new AtomStudioError(
              "METHOD_NOT_ALLOWED",
              "This MCP endpoint is stateless: POST JSON-RPC messages to it",
              undefined,
              405,
            ),
          );
        }
        const server = createMcpServer({
          operations,
          invoke: localInvoke(ctx, { headers: req.headers, query: req.query as Record<string, unknown> }),
          onInternalError: (err, requestId) => req.log.error({ err, requestId }, "MCP tool call failed"),
        });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        reply.raw.on("close", () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        reply.hijack();
        try {
          await transport.handleRequest(req.raw, reply.raw, req.body);
        } catch (err) {
          req.log.error({ err }, "MCP transport failed");
          if (!reply.raw.headersSent) reply.raw.writeHead(500, { "content-type": "application/json" });
          reply.raw.end(
            JSON.stringify({ error: "Internal server error", code: "INTERNAL_ERROR", details: { request_id: req.id } }),
          );
        }
      },
    });
  };

/** The plugin registered by the service (plugins.ts). */
export const mcpPlugin: Plugin = mcpHttpPlugin();
