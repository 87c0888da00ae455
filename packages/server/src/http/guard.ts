/**
 * The service's request guards (packages/server/SECURITY.md), one `onRequest` hook for every
 * route, HTTP and WebSocket upgrade alike, in this order:
 *
 * 1. Origin and Host: a browser page may reach the service only from its own origin or one listed
 *    in ATOMSTUDIO_CORS_ORIGINS, under a host name the service knows (no DNS rebinding, no
 *    cross-site WebSocket, no cross-site form post);
 * 2. a CORS preflight from an allowed origin goes on to @fastify/cors without the token (browsers
 *    never send credentials on a preflight);
 * 3. the bearer token, decided on the route the router matched (its template and config), never
 *    on the URL text: `/%61pi/...` and `http://x/api/...` reach the same route as `/api/...` and
 *    so need the same token. Every route needs it except those marked `config: { public: true }`
 *    (documentation, the studio's files); a request that matches no route needs it too.
 *
 * Also: wrong methods on a known path answer 405 METHOD_NOT_ALLOWED with `Allow`.
 */
import { timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyInstance, FastifyRequest, HTTPMethods } from "fastify";
import type { ServiceConfig } from "../config.ts";
import { sendError } from "./errors.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route carries no data: answered without the bearer token. */
    public?: boolean;
    /** A WebSocket route (set by the guards): its upgrade may carry the token as `?token=`. */
    webSocket?: boolean;
  }
}

const tokenMatches = (header: string | undefined, token: string): boolean => {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!m) return false;
  const a = Buffer.from(m[1] as string);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** Host name of a Host header value or URL authority (`[::1]:8000` → `[::1]`); "" when malformed. */
const hostnameOf = (authority: string): string => {
  try {
    return new URL(`http://${authority}`).hostname;
  } catch {
    return "";
  }
};

/** Names that always mean this machine: an attacker cannot point them at anything else. */
const isLoopbackName = (name: string): boolean =>
  name === "localhost" || name.endsWith(".localhost") || name === "[::1]" || /^127(\.\d{1,3}){3}$/.test(name);

/**
 * Host names the service answers to. DNS rebinding needs a name the attacker controls, so
 * loopback names and IP literals are always safe; other names must be configured: the listen
 * address, ATOMSTUDIO_ALLOWED_HOSTS, and the hosts of ATOMSTUDIO_CORS_ORIGINS.
 */
export const hostAllowed = (config: ServiceConfig, hostname: string): boolean => {
  const name = hostname.toLowerCase();
  if (!name) return false;
  if (isLoopbackName(name) || isIP(name.replace(/^\[|\]$/g, ""))) return true;
  if (name === config.host.toLowerCase()) return true;
  if ((config.allowedHosts ?? []).some((h) => h.toLowerCase() === name)) return true;
  return config.corsOrigins.some((o) => hostnameOf(o.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")) === name);
};

/**
 * Why a request may not come in from where it comes (undefined: it may). The one rule for every
 * route: the Host header (and the authority of an absolute-form target) must name an allowed
 * host, and an Origin header, when there is one, must be the service's own origin (the same
 * host as Host) or one listed in ATOMSTUDIO_CORS_ORIGINS. Clients that are not browsers send no
 * Origin and are only held to the Host rule.
 */
export const originRefusal = (req: FastifyRequest, config: ServiceConfig): string | undefined => {
  const host = req.headers.host;
  if (host !== undefined && !hostAllowed(config, hostnameOf(host)))
    return `Host ${host} is not allowed (the operator may list ${hostnameOf(host) || "it"} in ATOMSTUDIO_ALLOWED_HOSTS)`;
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(req.raw.url ?? "");
  if (absolute && !hostAllowed(config, hostnameOf(absolute[1] as string)))
    return `Host ${absolute[1]} of the request target is not allowed`;
  const origin = req.headers.origin;
  if (origin === undefined || config.corsOrigins.includes(origin)) return undefined;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return `Origin ${origin} is not allowed`;
  }
  return host !== undefined && originHost.toLowerCase() === host.toLowerCase()
    ? undefined
    : `Origin ${origin} is not allowed (the operator may list it in ATOMSTUDIO_CORS_ORIGINS)`;
};

/** A browser's CORS preflight (never carries credentials). */
const isPreflight = (req: FastifyRequest): boolean =>
  req.method === "OPTIONS" && req.headers.origin !== undefined && req.headers["access-control-request-method"] !== undefined;

export const registerGuards = (app: FastifyInstance, config: ServiceConfig): void => {
  const token = config.token;
  app.addHook("onRoute", (route) => {
    if ((route as { websocket?: boolean }).websocket) route.config = { ...route.config, webSocket: true };
  });
  app.addHook("onRequest", async (req, reply) => {
    const refused = originRefusal(req, config);
    if (refused) return sendError(reply, req, new AtomStudioError("FORBIDDEN_ORIGIN", refused, undefined, 403));
    if (!token || req.routeOptions.config?.public === true) return;
    // @fastify/cors (registered when origins are configured) answers the preflight next.
    if (isPreflight(req) && config.corsOrigins.length) return;
    // Browsers cannot set headers on WebSocket upgrades: those, and only those, may carry ?token=.
    const queryToken = (req.query as Record<string, unknown> | undefined)?.token;
    const viaQuery =
      req.routeOptions.config?.webSocket === true &&
      req.headers.upgrade?.toLowerCase() === "websocket" &&
      typeof queryToken === "string";
    if (tokenMatches(req.headers.authorization, token) || (viaQuery && tokenMatches(`Bearer ${queryToken}`, token))) return;
    return sendError(reply, req, new AtomStudioError("UNAUTHORIZED", "Missing or invalid bearer token", undefined, 401));
  });
};

const METHODS: HTTPMethods[] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"];

/**
 * 405 for wrong methods on known paths: call `collect` before any route is registered and `finish`
 * after the last. Wildcard routes (the studio's single-page fallback, CORS's OPTIONS `*`) are
 * left alone, and OPTIONS stays CORS's.
 */
export const methodNotAllowed = (app: FastifyInstance): { finish(): void } => {
  const byPath = new Map<string, Set<string>>();
  app.addHook("onRoute", (route) => {
    if (route.url.includes("*")) return;
    const methods = byPath.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    byPath.set(route.url, methods);
  });
  return {
    finish() {
      const known = [...byPath];
      byPath.clear();
      for (const [url, registered] of known) {
        if (registered.has("GET")) registered.add("HEAD");
        const missing = METHODS.filter((m) => !registered.has(m));
        if (!missing.length) continue;
        const allow = METHODS.filter((m) => registered.has(m)).join(", ");
        app.route({
          method: missing,
          url,
          // Exposes no data; the guards above (token, Origin) still run first.
          handler: async (req, reply) => {
            reply.header("allow", allow);
            return sendError(
              reply,
              req,
              new AtomStudioError("METHOD_NOT_ALLOWED", `${req.method} is not allowed on ${url}; use ${allow}`, { allow }, 405),
            );
          },
        });
      }
    },
  };
};
