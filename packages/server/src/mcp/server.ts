/**
 * The MCP server, generated from the operation registry: every operation with an `mcp` name is a
 * tool whose input schema is the endpoint's request schema (`mcpTools()`), whose result is the
 * endpoint's response (as `structuredContent` and as JSON text) and whose failures are tool errors
 * carrying the ErrorResponse. Nothing here names a tool: how a call is carried out (in process,
 * or forwarded to a running service) is the `invoke` function given by the transport's owner.
 *
 * The low-level `Server` of the SDK is used rather than `McpServer.registerTool` because the
 * registry already owns the JSON Schema (with StructureJSON expanded) and the error mapping.
 */
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { type ErrorBody, errorResponse } from "../http/errors.ts";
import type { Operation } from "../registry/operation.ts";
import { mcpTools } from "../registry/tools.ts";
import { VERSION } from "../version.ts";

export interface InvokeExtra {
  /** Aborted when the client cancels the call or goes away. */
  signal: AbortSignal;
  /** Identifies the call in logs and in an INTERNAL_ERROR's details. */
  requestId: string;
}

/** Carry out one operation: resolve with the endpoint's response body, throw what the endpoint would fail with. */
export type Invoke = (op: Operation, args: Record<string, unknown>, extra: InvokeExtra) => Promise<unknown>;

export interface McpServerOptions {
  operations: readonly Operation[];
  invoke: Invoke;
  /** Told about failures that are bugs (status 500 and above). */
  onInternalError?: (err: unknown, requestId: string) => void;
}

const IMAGE_FORMATS: Record<string, string> = { png: "image/png", jpeg: "image/jpeg", jpg: "image/jpeg", webp: "image/webp" };

/** A response that carries an image (ScreenshotResult: base64 `image` plus `format`) as MCP image content. */
const imageOf = (result: unknown): { data: string; mimeType: string } | undefined => {
  if (typeof result !== "object" || result === null) return undefined;
  const { image, format } = result as { image?: unknown; format?: unknown };
  const mimeType = typeof format === "string" ? IMAGE_FORMATS[format.toLowerCase()] : undefined;
  return typeof image === "string" && mimeType ? { data: image, mimeType } : undefined;
};

/**
 * The tool result of a successful call. The text block is the response as JSON, except that an
 * image's base64 bytes are not repeated there (they are the image block, and megabytes of base64
 * text would only fill a model's context); `structuredContent` is the response unchanged.
 */
export const toolResult = (result: unknown): CallToolResult => {
  const structured = (typeof result === "object" && result !== null ? result : { result }) as Record<string, unknown>;
  const image = imageOf(result);
  const forText = image
    ? { ...structured, image: `(base64 ${structured.format} image, ${image.data.length} characters: see the image content)` }
    : structured;
  return {
    content: [
      { type: "text", text: JSON.stringify(forText) },
      ...(image ? [{ type: "image" as const, data: image.data, mimeType: image.mimeType }] : []),
    ],
    structuredContent: structured,
  };
};

/** A failed call: a tool error whose text and structured content are the endpoint's ErrorResponse. */
export const toolError = (body: ErrorBody): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: JSON.stringify(body) }],
  structuredContent: body as unknown as Record<string, unknown>,
});

const generated = new WeakMap<readonly Operation[], { tools: Tool[]; byName: Map<string, Operation> }>();

/** The tool definitions as MCP `tools/list` gives them, generated once per operation list. */
const toolsOf = (operations: readonly Operation[]) => {
  let g = generated.get(operations);
  if (!g) {
    const tools = mcpTools(operations).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.input_schema as Tool["inputSchema"],
    }));
    g = { tools, byName: new Map(operations.filter((op) => op.mcp).map((op) => [op.mcp as string, op])) };
    generated.set(operations, g);
  }
  return g;
};

export const listTools = (operations: readonly Operation[]): Tool[] => toolsOf(operations).tools;

export const createMcpServer = (opts: McpServerOptions): Server => {
  // The service builds one server per HTTP request: the schemas are generated once.
  const { tools, byName } = toolsOf(opts.operations);
  const server = new Server(
    { name: "atomstudio", title: "AtomStudio", version: VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        "AtomStudio structure tools (svc_*). Editing and building tools are stateless: send the full structure (pymatgen dictionary) and use the returned one. Viewer tools act on the connected AtomStudio studio.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const op = byName.get(request.params.name);
    if (!op) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${request.params.name}`);
    const requestId = randomUUID();
    try {
      return toolResult(await opts.invoke(op, request.params.arguments ?? {}, { signal: extra.signal, requestId }));
    } catch (err) {
      const [status, body] = errorResponse(err, requestId);
      if (status >= 500 && body.code === "INTERNAL_ERROR") opts.onInternalError?.(err, requestId);
      return toolError(body);
    }
  });
  return server;
};
