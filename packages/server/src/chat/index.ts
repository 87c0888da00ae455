/**
 * The chat plugin: the three streaming endpoints of the interface (plain Fastify routes, since
 * they answer server-sent events) and the chat service on `ctx.services.chat`. The provider
 * listing is a registry operation (operations/chat.ts) so that MCP gets it as `svc_providers`.
 *
 * Layout: providers/ (tables, hosted SDK modules, OpenAI-compatible stream and its normalizer),
 * agents/ (one module per command-line agent, plus the runner), discovery.ts (listing), sse.ts.
 */
import type { AddressInfo } from "node:net";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { provide, type ServiceContext } from "../context.ts";
import { statusOf } from "../errors/codes.ts";
import { operations as allOperations } from "../operations/index.ts";
import type { Plugin } from "../plugins.ts";
import type { Operation } from "../registry/operation.ts";
import { parseInput } from "../registry/validate.ts";
import { AgentMcpGateway } from "./agents/mcp-gateway.ts";
import { AgentLimiter, AgentRequest, streamAgent } from "./agents/runner.ts";
import { listProviders } from "./discovery.ts";
import { chatStreamPaths } from "./openapi.ts";
import { HostedRequest, streamHosted } from "./providers/hosted.ts";
import { CompatRequest, streamOpenAICompat } from "./providers/openai-compat.ts";
import { SseStream } from "./sse.ts";

declare module "../context.ts" {
  interface Services {
    chat: ChatService;
  }
}

export interface ChatService {
  listProviders(): ReturnType<typeof listProviders>;
  limiter: AgentLimiter;
  /** Kills running agents (called when the app closes). */
  close(): Promise<void>;
}

const parse = <S extends z.ZodType>(schema: S, raw: unknown): z.output<S> =>
  parseInput({ input: schema } as unknown as Operation<S>, raw);

/** This service's MCP endpoint as an agent on this machine reaches it. */
const mcpUrl = (app: FastifyInstance, ctx: ServiceContext): string => {
  if (ctx.config.mcpUrl) return ctx.config.mcpUrl;
  const addr = app.server.address() as AddressInfo | null;
  const port = addr?.port ?? ctx.config.port;
  const host = ["0.0.0.0", "::", ""].includes(ctx.config.host) ? "127.0.0.1" : ctx.config.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}/mcp`;
};

export interface ChatPluginOptions {
  /** Where keys, base-URL overrides, PATH and limits are read (default: the configuration's environment). */
  env?: NodeJS.ProcessEnv;
}

export const chatPlugin =
  (opts: ChatPluginOptions = {}): Plugin =>
  (app, ctx) => {
    const env: NodeJS.ProcessEnv = opts.env ?? { ...ctx.config.environment };
    const limiter = new AgentLimiter();
    // With a service token, agents get a per-run MCP credential instead (agents/mcp-gateway.ts).
    const gateway = new AgentMcpGateway(ctx, () => allOperations);
    const service: ChatService = {
      listProviders: () => listProviders(env),
      limiter,
      close: async () => {
        limiter.killAll();
        await gateway.close();
      },
    };
    provide(ctx, "chat", service);

    // @fastify/swagger (static mode) hands out the service's document itself: add the streaming endpoints.
    const swagger = (app as unknown as { swagger?: () => { paths?: Record<string, unknown> } }).swagger;
    const doc = typeof swagger === "function" ? swagger.call(app) : undefined;
    if (doc?.paths) Object.assign(doc.paths, chatStreamPaths());

    const sse =
      (handler: (body: unknown, stream: SseStream, req: FastifyRequest) => Promise<void>) =>
      async (req: FastifyRequest, reply: FastifyReply) => {
        const stream = new SseStream(reply);
        try {
          await handler(req.body, stream, req);
        } catch (err) {
          // Refusals (4xx) get a log line too; 5xx are logged by the error handler. Messages carry no keys.
          if (err instanceof AtomStudioError && statusOf(err.code, err.status) < 500)
            req.log.info({ code: err.code, details: err.details }, err.message);
          throw err;
        }
        // Errors thrown before the stream opened go to the error handler as ordinary responses.
        return reply;
      };

    app.post(
      "/api/chat/stream",
      sse((body, stream) => streamHosted(parse(HostedRequest, body), stream, env)),
    );
    app.post(
      "/api/chat/stream-openai-compat",
      sse((body, stream) => streamOpenAICompat(parse(CompatRequest, body), stream, env)),
    );
    app.post(
      "/api/chat/stream-cli-agent",
      sse((body, stream) =>
        streamAgent(parse(AgentRequest, body), stream, {
          env,
          limiter,
          mcp: (tools) =>
            ctx.config.token ? gateway.mint(tools) : Promise.resolve({ url: mcpUrl(app, ctx), token: null, revoke: () => {} }),
          secrets: [ctx.config.token],
        }),
      ),
    );
  };

export { listProviders } from "./discovery.ts";
export type { AgentStreamEvent, ModelInfo, ProviderInfo } from "./types.ts";
