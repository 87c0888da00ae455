/**
 * OpenAPI entries of the three streaming endpoints. They are plain Fastify routes (server-sent
 * events), not registry operations, so the plugin adds these paths to the service's document.
 */
import { jsonSchema } from "../registry/json-schema.ts";
import { AgentRequest } from "./agents/runner.ts";
import { HostedRequest } from "./providers/hosted.ts";
import { CompatRequest } from "./providers/openai-compat.ts";

const errorRef = { $ref: "#/components/schemas/ErrorResponse" };
const err = (description: string) => ({ description, content: { "application/json": { schema: errorRef } } });
const sse = (description: string) => ({ description, content: { "text/event-stream": { schema: { type: "string" } } } });

const entry = (
  operationId: string,
  summary: string,
  description: string,
  request: Record<string, unknown>,
  responses: Record<string, unknown>,
) => ({
  post: {
    operationId,
    summary,
    description,
    tags: ["chat"],
    requestBody: { required: true, content: { "application/json": { schema: request } } },
    responses: { ...responses, 422: err("`MALFORMED_REQUEST`: the body is not the right shape") },
  },
});

export const chatStreamPaths = (): Record<string, unknown> => ({
  "/api/chat/stream": entry(
    "chat_stream",
    "Stream a chat answer from a hosted provider (anthropic, openai)",
    'Server-sent events `data: {"text": …}` ended by `data: [DONE]`. An error after the stream started is `data: {"error", "code"}` then `data: [DONE]`.',
    jsonSchema(HostedRequest),
    {
      200: sse("`data: {text}` events, then `data: [DONE]`"),
      400: err("`UNKNOWN_PROVIDER`: not one of the hosted providers"),
      401: err("`MISSING_API_KEY`: the provider's key variable is not set; `INVALID_API_KEY`: the provider refused the key"),
      502: err("`UPSTREAM_ERROR`: the provider failed or could not be reached (`details.status`: its HTTP status, 429 included)"),
    },
  ),
  "/api/chat/stream-openai-compat": entry(
    "chat_stream_openai_compat",
    "Stream from an OpenAI-compatible provider, normalized to text and whole tool calls",
    'Server-sent events `data: {"text"}` and `data: {"tool_call": {id, name, arguments}}` (arguments a JSON string), then `data: [DONE]`. A request overriding `base_url` must bring its own `api_key`.',
    jsonSchema(CompatRequest),
    {
      200: sse("`data: {text}` / `data: {tool_call}` events, then `data: [DONE]`"),
      400: err("`UNKNOWN_PROVIDER`: unknown provider and no `base_url`"),
      401: err(
        "`MISSING_API_KEY`: no key (or `base_url` overridden without `api_key`); `INVALID_API_KEY`: the provider answered 401/403",
      ),
      502: err("`UPSTREAM_ERROR`: the provider failed or could not be reached (`details.status`: its HTTP status, 429 included)"),
    },
  ),
  "/api/chat/stream-cli-agent": entry(
    "chat_stream_cli_agent",
    "Run a command-line agent (claude, codex, gemini) and stream its events",
    "Server-sent events of AgentStreamEvent (`type`: thinking, text, tool_use, tool_result, error, done), then `data: [DONE]`. The stream opens with the first event; failures after that are error events (`code` AGENT_TIMEOUT / AGENT_CRASHED) followed by `data: [DONE]`.",
    jsonSchema(AgentRequest),
    {
      200: sse("AgentStreamEvent events, then `data: [DONE]`"),
      400: err("`UNKNOWN_AGENT`: not one of the agents; `INVALID_WORKING_DIRECTORY`: outside the agent root"),
      404: err("`AGENT_NOT_FOUND`: the agent's program is not on PATH"),
      429: err("`AGENT_BUSY`: ATOMSTUDIO_MAX_AGENTS agents are already running"),
      500: err("`AGENT_CRASHED`: the agent exited non-zero before its first event"),
      504: err("`AGENT_TIMEOUT`: no event and no exit within `timeout` seconds"),
    },
  ),
});
