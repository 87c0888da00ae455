/**
 * Streamable HTTP MCP endpoint at `/mcp` (decisions §2), stateless: each POST gets a fresh MCP
 * server and transport from the SDK, which answer that one JSON-RPC message (or batch) with a
 * JSON body. There is no session, so GET (server-initiated stream) and DELETE (end session)
 * answer 405 as the specification allows (the service's 405 for wrong methods). The bearer token
 * and the Origin/Host rule that the MCP transport specification asks for (DNS rebinding) are
 * the service's guards (http/guard.ts), checked before this route runs.
 *
 * Tool calls run the operations in process with the request's headers and query, so a viewer
 * operation sees `X-Viewer-Client` / `client_id` given on the MCP request.
 */
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { operations as allOperations } from "../operations/index.ts";
import type { Plugin } from "../plugins.ts";
import type { Operation } from "../registry/operation.ts";
import { localInvoke } from "./invoke.ts";
import { createMcpServer } from "./server.ts";

export const MCP_PATH = "/mcp";

/** The `/mcp` route for the given operations (default: every operation of the service, read when the plugin runs). */
export const mcpHttpPlugin =
  (only?: readonly Operation[]): Plugin =>
  (app, ctx) => {
    const operations = only ?? allOperations;
    app.route({
      method: "POST",
      url: MCP_PATH,
      handler: async (req, reply) => {
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
