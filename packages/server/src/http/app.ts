/**
 * The Fastify application: routes generated from the operation registry, plus the service's
 * safety defaults (guard.ts: Origin/Host, bearer token, 405; CORS allowlist, body cap,
 * ErrorResponse for every failure).
 */
import cors from "@fastify/cors";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { AtomStudioError } from "atomstudio-core";
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from "fastify";
import type { ServiceConfig } from "../config.ts";
import type { Closable, ServiceContext } from "../context.ts";
import { JOB_HEADER } from "../jobs/analysis-jobs.ts";
import { operations as allOperations } from "../operations/index.ts";
import { defaultPlugins, type Plugin } from "../plugins.ts";
import { openApiDocument } from "../registry/openapi.ts";
import type { Operation } from "../registry/operation.ts";
import { assistantTools, mcpTools } from "../registry/tools.ts";
import { parseInput } from "../registry/validate.ts";
import { sendError } from "./errors.ts";
import { methodNotAllowed, registerGuards } from "./guard.ts";
import { registerMultipart, uploadedFiles } from "./multipart.ts";
import { uploadStore } from "./uploads.ts";

export interface AppOptions {
  config: ServiceConfig;
  operations?: readonly Operation[];
  logger?: FastifyServerOptions["logger"];
  /** Plugins registered after the registry's routes; default: every plugin of the service. */
  plugins?: readonly Plugin[];
}

export const buildApp = async (opts: AppOptions): Promise<{ app: FastifyInstance; ctx: ServiceContext }> => {
  const { config } = opts;
  const operations = opts.operations ?? allOperations;
  const app = Fastify({
    logger: opts.logger ?? {
      level: config.logLevel,
      redact: { paths: ["req.headers.authorization", 'req.headers["x-api-key"]', "api_key", "*.api_key"], censor: "[redacted]" },
    },
    bodyLimit: config.bodyLimit,
    // One log line per request would cost more than most operations; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true },
  });
  const ctx: ServiceContext = { config, log: app.log, services: {} };

  app.setErrorHandler((err, req, reply) => sendError(reply, req, err));
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, req, new AtomStudioError("NOT_FOUND", `No route ${req.method} ${req.url.split("?")[0]}`, undefined, 404)),
  );

  registerGuards(app, config);
  const wrongMethods = methodNotAllowed(app);

  await registerMultipart(app, config.bodyLimit, () => uploadStore(ctx));
  // a page of an allowed origin may read the job id of its requests (jobs/README.md)
  if (config.corsOrigins.length)
    await app.register(cors, { origin: config.corsOrigins, credentials: false, exposedHeaders: [JOB_HEADER] });

  const document = openApiDocument(operations);
  await app.register(swagger, { mode: "static", specification: { document: document as never } });
  // Documentation carries no data, so a browser can read it without the token.
  await app.register(async (docs) => {
    docs.addHook("onRoute", (route) => {
      route.config = { ...route.config, public: true };
    });
    await docs.register(swaggerUi, { routePrefix: "/api/docs" });
  });
  app.get("/api/openapi.json", { config: { public: true } }, async () => document);
  app.get("/api/tools", async () => ({ assistant: assistantTools(operations), mcp: mcpTools(operations) }));

  for (const op of operations) {
    app.route({
      method: op.method,
      url: op.path,
      handler: async (req, reply) => {
        const raw = op.method === "GET" ? { ...(req.query as object), ...(req.params as object) } : req.body;
        const input = parseInput(op, raw, config);
        // A client that goes away before the answer aborts long work (optimizations).
        const abort = new AbortController();
        reply.raw.once("close", () => {
          if (!reply.raw.writableFinished) abort.abort();
        });
        if (op.successStatus) reply.code(op.successStatus);
        const opCtx: ServiceContext = {
          ...ctx,
          request: {
            headers: req.headers,
            query: req.query as Record<string, unknown>,
            signal: abort.signal,
            uploads: uploadedFiles(req),
            setHeader: (name, value) => void reply.header(name, value),
          },
        };
        if (!op.httpJson) return op.handler(input, opCtx);
        const answer = await op.httpJson(input, opCtx);
        return reply.type("application/json; charset=utf-8").send(answer.text);
      },
    });
  }

  for (const plugin of opts.plugins ?? defaultPlugins) await plugin(app, ctx);
  wrongMethods.finish();
  // Services that hold processes or connections (calculator workers, Redis) close with the app.
  app.addHook("onClose", async () => {
    for (const service of Object.values(ctx.services) as Array<Partial<Closable> | undefined>) await service?.close?.();
  });
  return { app, ctx };
};
