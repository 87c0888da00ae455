import type { FastifyBaseLogger } from "fastify";
import type { ServiceConfig } from "./config.ts";

/**
 * What an operation handler may use besides its input. Later parts of the service (viewer relay,
 * calculator pool, chat providers) hang their services here.
 */
export interface ServiceContext {
  config: ServiceConfig;
  log: FastifyBaseLogger;
  /** Per-request values an operation may need (viewer client id, abort signal). */
  request?: { headers: Record<string, string | string[] | undefined>; query: Record<string, unknown>; signal?: AbortSignal };
  // biome-ignore lint/suspicious/noExplicitAny: services registered by plugins, typed at their use site
  services: Record<string, any>;
}
