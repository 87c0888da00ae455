/** Mapping of upstream failures onto the service's codes (decisions §3), keys redacted. */
import { AtomStudioError } from "atomstudio-core";
import { z } from "zod";
import { serviceError } from "../errors/codes.ts";
import { redact } from "./secrets.ts";

interface ApiErrorLike {
  status?: number;
  message?: string;
  error?: unknown;
  name?: string;
}

const upstreamMessage = (err: ApiErrorLike): string => {
  const body = err.error as { error?: { message?: string }; message?: string } | undefined;
  const message = String(body?.error?.message ?? body?.message ?? err.message ?? "upstream error");
  // Connection failures: say why (ECONNREFUSED, ENOTFOUND, …).
  let why: string | undefined;
  let deepest: string | undefined;
  for (let c = (err as { cause?: unknown }).cause as { code?: unknown; message?: unknown; cause?: unknown } | undefined; c; ) {
    if (typeof c.code === "string") {
      why = c.code;
      break;
    }
    if (typeof c.message === "string") deepest = c.message;
    c = c.cause as typeof c;
  }
  why ??= deepest;
  return why && !message.includes(why) ? `${message} (${why})` : message;
};

/**
 * A URL the caller chose (`base_url`) may point anywhere the server can reach: what answers there
 * (an SSH banner, a refused connection, an internal service's error page) must not come back, or
 * the endpoint becomes a port scanner. Only the HTTP status of an HTTP answer is reported.
 */
export interface UpstreamOrigin {
  callerUrl?: boolean;
}

const CALLER_URL = "the endpoint at base_url";

/**
 * An error from an SDK call that failed before the stream started:
 * 401/403 → 401 INVALID_API_KEY; every other upstream status (429 included, kept in
 * `details.status`) → 502 UPSTREAM_ERROR; no answer at all → 502 UPSTREAM_ERROR with status null.
 */
export const upstreamError = (
  err: unknown,
  provider: string,
  secrets: readonly (string | null | undefined)[],
  origin: UpstreamOrigin = {},
): AtomStudioError => {
  if (err instanceof AtomStudioError) return err;
  const e = (err ?? {}) as ApiErrorLike;
  const status = typeof e.status === "number" ? e.status : null;
  if (origin.callerUrl) {
    if (status === 401 || status === 403)
      return new AtomStudioError("INVALID_API_KEY", `${CALLER_URL} rejected the API key`, { provider, status }, 401);
    return new AtomStudioError(
      "UPSTREAM_ERROR",
      status === null ? `No HTTP answer from ${CALLER_URL}` : `${CALLER_URL} answered HTTP ${status}`,
      { provider, status },
      502,
    );
  }
  const message = redact(upstreamMessage(e), secrets, {});
  if (status === 401 || status === 403)
    return serviceError("INVALID_API_KEY", `${provider} rejected the API key: ${message}`, { provider, status });
  if (status === null)
    return serviceError("UPSTREAM_ERROR", `Could not reach ${provider}: ${message}`, { provider, status: null });
  return serviceError("UPSTREAM_ERROR", `${provider} returned HTTP ${status}: ${message}`, { provider, status });
};

/** The in-stream form of an error after the stream started (malformed chunk, dropped connection, error event). */
export const streamError = (
  err: unknown,
  provider: string,
  secrets: readonly (string | null | undefined)[],
  origin: UpstreamOrigin = {},
) => {
  const e = (err ?? {}) as ApiErrorLike;
  const status = typeof e.status === "number" ? e.status : null;
  if (origin.callerUrl) return { error: `The stream from ${CALLER_URL} failed`, code: "UPSTREAM_ERROR" };
  const message = redact(upstreamMessage(e), secrets, {});
  return { error: `${provider} stream failed${status ? ` (HTTP ${status})` : ""}: ${message}`, code: "UPSTREAM_ERROR" };
};

/** `max_tokens`: an integer (zod, 422 otherwise), published with its minimum; 0 or less is 400 INVALID_MAX_TOKENS. */
export const MaxTokens = z.number().int().meta({ minimum: 1 }).default(2048);

/** Range checks of a well-formed chat request, before any provider is contacted: 400 with a code, never 422. */
export const checkChatRanges = (req: { messages: unknown[]; max_tokens: number }): void => {
  if (req.messages.length === 0)
    throw serviceError("EMPTY_MESSAGES", "messages must hold at least one message", { field: "messages" });
  if (req.max_tokens < 1)
    throw serviceError("INVALID_MAX_TOKENS", `max_tokens must be 1 or more, got ${req.max_tokens}`, {
      max_tokens: req.max_tokens,
    });
};
