import { isAtomStudioError } from "atomstudio-core";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";

export interface ErrorBody {
  error: string;
  code: string;
  details?: Record<string, unknown>;
}

/** Fastify's own client errors, mapped onto the service's stable codes. */
const FASTIFY_CODES: Record<string, [number, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, "PAYLOAD_TOO_LARGE"],
  FST_ERR_CTP_INVALID_JSON_BODY: [422, "MALFORMED_REQUEST"],
  FST_ERR_CTP_EMPTY_JSON_BODY: [422, "MALFORMED_REQUEST"],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, "UNSUPPORTED_MEDIA_TYPE"],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, "MALFORMED_REQUEST"],
};

/** Every failure becomes an ErrorResponse; a 500 carries the request id and never a stack trace. */
export const errorResponse = (err: unknown, requestId: string): [number, ErrorBody] => {
  if (isAtomStudioError(err))
    return [err.status, { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) }];
  const fe = err as FastifyError;
  const mapped = fe?.code ? FASTIFY_CODES[fe.code] : undefined;
  if (mapped) return [mapped[0], { error: fe.message, code: mapped[1] }];
  if (fe instanceof SyntaxError || (fe?.statusCode === 400 && /JSON/i.test(fe.message)))
    return [422, { error: `Body is not valid JSON: ${fe.message}`, code: "MALFORMED_REQUEST" }];
  if (typeof fe?.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500)
    return [fe.statusCode, { error: fe.message, code: "BAD_REQUEST" }];
  return [500, { error: "Internal server error", code: "INTERNAL_ERROR", details: { request_id: requestId } }];
};

export const sendError = (reply: FastifyReply, req: FastifyRequest, err: unknown): FastifyReply => {
  const [status, body] = errorResponse(err, req.id);
  if (status >= 500) req.log.error({ err, reqId: req.id }, "request failed");
  // 429 QUEUE_FULL and the like say when to come back (RFC 9110 Retry-After, seconds)
  const retryAfter = body.details?.retry_after_s;
  if (status === 429 && typeof retryAfter === "number") reply.header("retry-after", String(Math.ceil(retryAfter)));
  return reply.code(status).type("application/json").send(body);
};
