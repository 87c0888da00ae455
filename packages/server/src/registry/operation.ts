/**
 * The operation registry: each operation is declared once (schemas, handler, route, tool names)
 * and every surface is generated from it: HTTP routes and validation, the OpenAPI document, MCP
 * tools, the assistant's tool definitions and workflow steps.
 */
import type { z } from "zod";
import type { ServiceContext } from "../context.ts";
import type { JsonText } from "./json-text.ts";

export type HttpMethod = "GET" | "POST";

/** How the assistant's tool input becomes the endpoint's request (declarative: the studio reads it). */
export interface AssistantToolSpec {
  /** Tool name the model sees (`add_atom`). */
  name: string;
  description?: string;
  /** Request field that receives the studio's current structure; the tool input omits it. */
  inject?: "structure" | "base";
  /** Tool field name → request field name (e.g. `incoming_structure` → `incoming`). */
  rename?: Record<string, string>;
  /** Whether the response's `structure` replaces the studio's current structure. */
  replacesStructure: boolean;
}

export interface ErrorRow {
  /** Optional and ignored: the status comes from the error-code table (errors/codes.ts); a test checks any given here agrees. */
  status?: number;
  code: string;
  when: string;
}

export interface Operation<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** Stable id, also the OpenAPI operationId. */
  id: string;
  method: HttpMethod;
  /** `:name` segments are path parameters, merged into a GET's input. */
  path: string;
  /** Status of a success (default 200): 201 for a created resource, 202 for accepted work. */
  successStatus?: 200 | 201 | 202;
  summary: string;
  description?: string;
  tag: string;
  /** Body (POST) or query parameters (GET). */
  input: I;
  output: O;
  handler: (input: z.output<I>, ctx: ServiceContext) => Promise<z.input<O>> | z.input<O>;
  /**
   * HTTP only, optional: the same answer as `handler`, as JSON text the route sends as is (a large
   * answer of a Python worker is not parsed and serialised again on its way). MCP and workflows
   * call `handler`; a test checks both answers agree.
   */
  httpJson?: (input: z.output<I>, ctx: ServiceContext) => Promise<JsonText>;
  errors?: ErrorRow[];
  /** MCP tool name (`svc_…`); absent: not an MCP tool. */
  mcp?: string;
  assistant?: AssistantToolSpec;
}

/** Identity with inference: declare an operation with typed handler input and output. */
export const defineOperation = <I extends z.ZodType, O extends z.ZodType>(op: Operation<I, O>): Operation<I, O> => op;
