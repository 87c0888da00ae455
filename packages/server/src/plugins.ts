/**
 * The service's plugins beyond the registry's routes (viewer relay, MCP, chat, optimization,
 * studio). Each is `(app, ctx) => void`: it registers routes and puts its service on
 * `ctx.services` for operations to use. The order matters only where one plugin uses another's
 * service; the studio's catch-all static route goes last.
 */
import type { FastifyInstance } from "fastify";
import { chatPlugin } from "./chat/index.ts";
import type { ServiceContext } from "./context.ts";
import { mcpPlugin } from "./mcp/http.ts";
import { optimizeWsPlugin } from "./optimize/ws.ts";
import { studioPlugin } from "./studio/plugin.ts";
import { viewerPlugin } from "./viewer/plugin.ts";
import { workflowPlugin } from "./workflow/plugin.ts";

export type Plugin = (app: FastifyInstance, ctx: ServiceContext) => Promise<void> | void;

export const defaultPlugins: Plugin[] = [
  viewerPlugin(),
  chatPlugin(),
  optimizeWsPlugin,
  workflowPlugin(),
  mcpPlugin,
  studioPlugin(),
];
