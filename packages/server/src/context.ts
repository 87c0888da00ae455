import type { FastifyBaseLogger } from "fastify";
import type { ServiceConfig } from "./config.ts";
import type { ReceivedFile } from "./http/uploads.ts";

/**
 * The services plugins register (viewer relay, chat, calculator pool, …), typed. A module that
 * provides a service adds its entry by declaration merging:
 *
 *   declare module "../context.ts" { interface Services { viewer: ViewerRelay } }
 *
 * so every use site is typed and nothing is an untyped bag. An entry may be absent (a test app
 * without that plugin, or the stdio MCP server), hence `Partial` on the context.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the modules that provide services
export interface Services {}

/** A service held on the context that owns processes or connections: closed with the app. */
export interface Closable {
  close(): Promise<void> | void;
}

/** What an operation handler may use besides its input. */
export interface ServiceContext {
  config: ServiceConfig;
  log: FastifyBaseLogger;
  /** Per-request values an operation may need (viewer client id, abort signal, files a multipart body streamed to disk). */
  request?: {
    headers: Record<string, string | string[] | undefined>;
    query: Record<string, unknown>;
    signal?: AbortSignal;
    uploads?: ReadonlyMap<string, ReceivedFile>;
    /** Set a header of the HTTP answer (kept on an error answer too), e.g. the job id of a request. */
    setHeader?: (name: string, value: string) => void;
  };
  services: Partial<Services>;
}

/** Put a service on the context (typed by its `Services` entry). */
export const provide = <K extends keyof Services>(ctx: ServiceContext, key: K, service: Services[K]): Services[K] => {
  ctx.services[key] = service;
  return service;
};
