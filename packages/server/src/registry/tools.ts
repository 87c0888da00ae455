/**
 * Tool definitions generated from the registry: MCP tools (`svc_*`, input = the endpoint's
 * request) and the assistant's tools (input = the request minus the injected current structure,
 * with renamed fields), each with the endpoint it calls. The studio's assistant executes them
 * (packages/studio/src/assistant/tools.ts): it sends its current structure as `inject` and
 * renames fields back by `rename`.
 */
import { jsonSchema } from "./json-schema.ts";
import type { Operation } from "./operation.ts";

export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  endpoint: { method: string; path: string };
}

export interface AssistantToolDefinition extends ToolDefinition {
  inject?: "structure" | "base";
  rename?: Record<string, string>;
  replaces_structure: boolean;
}

const describe = (op: Operation): string => [op.summary, op.description].filter(Boolean).join(". ");

export const mcpTools = (operations: readonly Operation[]): ToolDefinition[] =>
  operations
    .filter((op) => op.mcp)
    .map((op) => ({
      name: op.mcp as string,
      description: describe(op),
      input_schema: jsonSchema(op.input),
      endpoint: { method: op.method, path: op.path },
    }));

export const assistantTools = (operations: readonly Operation[]): AssistantToolDefinition[] =>
  operations
    .filter((op) => op.assistant)
    .map((op) => {
      const spec = op.assistant as NonNullable<Operation["assistant"]>;
      const schema = jsonSchema(op.input);
      const props = { ...((schema.properties ?? {}) as Record<string, unknown>) };
      let required = [...((schema.required as string[] | undefined) ?? [])];
      if (spec.inject) {
        delete props[spec.inject];
        required = required.filter((r) => r !== spec.inject);
      }
      for (const [toolField, requestField] of Object.entries(spec.rename ?? {})) {
        props[toolField] = props[requestField];
        delete props[requestField];
        required = required.map((r) => (r === requestField ? toolField : r));
      }
      return {
        name: spec.name,
        description: spec.description ?? describe(op),
        input_schema: { type: "object", properties: props, required, additionalProperties: false },
        endpoint: { method: op.method, path: op.path },
        ...(spec.inject ? { inject: spec.inject } : {}),
        ...(spec.rename ? { rename: spec.rename } : {}),
        replaces_structure: spec.replacesStructure,
      };
    });
