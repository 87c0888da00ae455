/**
 * How an MCP tool call is carried out. In the service (`/mcp`) every operation runs in process
 * with the service's context. The stdio server (`atomstudio mcp`) runs the pure operations in
 * process too, and forwards to a running service the ones that need its state (viewer relay, chat
 * providers, calculators): an operation needs the service exactly when its handler reaches for
 * `ctx.services`, which the stdio context detects, so new operations need no flag.
 */
import { AtomStudioError } from "atomstudio-core";
import type { ServiceContext } from "../context.ts";
import { serviceError, statusOf } from "../errors/codes.ts";
import type { Operation } from "../registry/operation.ts";
import { parseInput } from "../registry/validate.ts";
import type { Invoke } from "./server.ts";

type RequestInfo = NonNullable<ServiceContext["request"]>;

/** Run the operation's own handler, validated exactly as the HTTP route validates it. */
export const localInvoke =
  (ctx: ServiceContext, request: Omit<RequestInfo, "signal"> = { headers: {}, query: {} }): Invoke =>
  async (op, args, { signal }) =>
    op.handler(parseInput(op, args, ctx.config), { ...ctx, request: { ...request, signal } });

export interface ServiceTarget {
  /** Base URL of a running service, e.g. http://127.0.0.1:8000 */
  url: string;
  token?: string | undefined;
  /** Extra request headers (e.g. X-Viewer-Client). */
  headers?: Record<string, string>;
}

const reason = (err: unknown): string => {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
};

const queryValue = (v: unknown): string => (typeof v === "object" ? JSON.stringify(v) : String(v));

/**
 * Call the operation's HTTP endpoint on a running service. The endpoint's ErrorResponse comes back
 * as the same error (code, message, details, status); an unreachable service is 503
 * SERVICE_UNAVAILABLE naming the URL.
 */
export const forwardInvoke =
  (target: ServiceTarget): Invoke =>
  async (op, args, { signal }) => {
    const base = target.url.replace(/\/+$/, "");
    // path parameters (`:id`) from the arguments, the rest as query or body
    const rest: Record<string, unknown> = { ...args };
    const path = op.path.replace(/:(\w+)/g, (_m, name: string) => {
      const v = rest[name];
      delete rest[name];
      return encodeURIComponent(String(v ?? ""));
    });
    const url = new URL(base + path);
    const headers: Record<string, string> = { accept: "application/json", ...target.headers };
    if (target.token) headers.authorization = `Bearer ${target.token}`;
    let body: string | undefined;
    if (op.method === "GET") {
      for (const [k, v] of Object.entries(rest)) if (v !== undefined && v !== null) url.searchParams.set(k, queryValue(v));
    } else {
      headers["content-type"] = "application/json";
      body = JSON.stringify(rest);
    }
    let res: Response;
    try {
      res = await fetch(url, { method: op.method, headers, body, signal });
    } catch (err) {
      if (signal.aborted) throw err;
      throw serviceError(
        "SERVICE_UNAVAILABLE",
        `The AtomStudio service is not reachable at ${base} (${reason(err)}): start it with \`atomstudio serve\`, or point --url / ATOMSTUDIO_URL at it`,
        { url: base },
      );
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.ok && parsed !== undefined) return parsed;
    const e = parsed as { error?: unknown; code?: unknown; details?: unknown } | undefined;
    if (!res.ok && typeof e?.error === "string" && typeof e.code === "string")
      throw new AtomStudioError(
        e.code,
        e.error,
        (e.details as Record<string, unknown> | undefined) ?? undefined,
        statusOf(e.code, res.status),
      );
    throw serviceError(
      "SERVICE_ERROR",
      `The AtomStudio service at ${base} answered ${op.method} ${op.path} with HTTP ${res.status} and no ErrorResponse`,
      { url: base, status: res.status, body: text.slice(0, 500) },
    );
  };

/** Thrown by the stdio context's `services` on first use: the operation needs the running service. */
class NeedsService extends Error {}

/**
 * The stdio server's invoker: each operation first runs in process with a context whose
 * `services` cannot be used; if the handler reaches for a service, this call and every later call
 * of that operation go to the running service instead.
 */
export const stdioInvoke = (ctx: Omit<ServiceContext, "services" | "request">, target: ServiceTarget): Invoke => {
  const remote = new Set<string>();
  const forward = forwardInvoke(target);
  const local = async (op: Operation, args: Record<string, unknown>, signal: AbortSignal) => {
    let touched = false;
    const services = new Proxy({} as Record<string, unknown>, {
      get: (_t, key) => {
        if (typeof key === "symbol") return undefined;
        touched = true;
        throw new NeedsService(`operation ${op.id} uses service ${key}`);
      },
      has: () => {
        touched = true;
        throw new NeedsService(`operation ${op.id} uses services`);
      },
      ownKeys: () => {
        touched = true;
        throw new NeedsService(`operation ${op.id} uses services`);
      },
    });
    try {
      const result = await op.handler(parseInput(op, args, ctx.config), {
        ...ctx,
        services,
        request: { headers: {}, query: {}, signal },
      });
      return touched ? { forward: true as const } : { result };
    } catch (err) {
      if (touched) return { forward: true as const };
      throw err;
    }
  };
  return async (op, args, extra) => {
    if (!remote.has(op.id)) {
      const r = await local(op, args, extra.signal);
      if (!("forward" in r)) return r.result;
      remote.add(op.id);
    }
    return forward(op, args, extra);
  };
};
