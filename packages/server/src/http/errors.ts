import { isAtomStudioError } from "atomstudio-core";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { type ErrorCode, statusOf } from "../errors/codes.ts";

export interface ErrorBody {
  error: string;
  code: string;
  details?: Record<string, unknown>;
}

/** Fastify's own client errors, mapped onto the service's stable codes. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  FST_ERR_CTP_INVALID_JSON_BODY: "MALFORMED_REQUEST",
  FST_ERR_CTP_EMPTY_JSON_BODY: "MALFORMED_REQUEST",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "BAD_REQUEST",
};

const coded = (code: ErrorCode, error: string, details?: Record<string, unknown>): [number, ErrorBody] => [
  statusOf(code),
  { error, code, ...(details ? { details } : {}) },
];

/**
 * Every failure becomes an ErrorResponse whose status comes from the error-code table
 * (errors/codes.ts, docs/errors.md); a 500 carries the request id and never a stack trace.
 */
export const errorResponse = (err: unknown, requestId: string): [number, ErrorBody] => {
  if (isAtomStudioError(err))
    return [
      statusOf(err.code, err.status),
      { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) },
    ];
  const fe = err as FastifyError;
  const mapped = fe?.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return coded(mapped, fe.message);
  if (fe instanceof SyntaxError || (fe?.statusCode === 400 && /JSON/i.test(fe.message)))
    return coded("MALFORMED_REQUEST", `Body is not valid JSON: ${fe.message}`);
  if (typeof fe?.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) return coded("BAD_REQUEST", fe.message);
  return coded("INTERNAL_ERROR", "Internal server error", { request_id: requestId });
};

export const sendError = (reply: FastifyReply, req: FastifyRequest, err: unknown): FastifyReply => {
  const [status, body] = errorResponse(err, req.id);
  if (status >= 500) req.log.error({ err, reqId: req.id }, "request failed");
  // 429 QUEUE_FULL and the like say when to come back (RFC 9110 Retry-After, seconds)
  const retryAfter = body.details?.retry_after_s;
  if (status === 429 && typeof retryAfter === "number") reply.header("retry-after", String(Math.ceil(retryAfter)));
  return reply.code(status).type("application/json").send(body);
};
