import { statusOf } from "../errors/codes.ts";
import { VERSION } from "../version.ts";
import { jsonSchema } from "./json-schema.ts";
import type { Operation } from "./operation.ts";
import { ErrorResponse } from "./schemas.ts";

const errorRef = { $ref: "#/components/schemas/ErrorResponse" };

/** The OpenAPI 3.1 document, generated from the registry. */
export const openApiDocument = (operations: readonly Operation[]): Record<string, unknown> => {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const input = jsonSchema(op.input, "input");
    const byStatus = new Map<number, string[]>();
    for (const e of op.errors ?? []) {
      const status = statusOf(e.code);
      byStatus.set(status, [...(byStatus.get(status) ?? []), `\`${e.code}\`: ${e.when}`]);
    }
    byStatus.set(422, [...(byStatus.get(422) ?? []), "`MALFORMED_REQUEST`: the body is not the right shape"]);
    const responses: Record<string, unknown> = {
      [op.successStatus ?? 200]: {
        description: "OK",
        content: { "application/json": { schema: jsonSchema(op.output, "output") } },
      },
    };
    for (const [status, rows] of [...byStatus].sort((a, b) => a[0] - b[0]))
      responses[status] = { description: rows.join("; "), content: { "application/json": { schema: errorRef } } };
    const entry: Record<string, unknown> = {
      operationId: op.id,
      summary: op.summary,
      description: op.description,
      tags: [op.tag],
      responses,
      ...(op.mcp ? { "x-mcp-tool": op.mcp } : {}),
      ...(op.assistant ? { "x-assistant-tool": op.assistant.name } : {}),
    };
    if (op.method === "GET") {
      const props = (input.properties ?? {}) as Record<string, unknown>;
      const required = new Set((input.required as string[] | undefined) ?? []);
      entry.parameters = Object.entries(props).map(([name, schema]) => ({
        name,
        in: op.path.includes(`:${name}`) ? "path" : "query",
        required: required.has(name) || op.path.includes(`:${name}`),
        schema,
      }));
    } else {
      entry.requestBody = { required: true, content: { "application/json": { schema: input } } };
    }
    const oapiPath = op.path.replace(/:(\w+)/g, "{$1}");
    paths[oapiPath] = { ...(paths[oapiPath] ?? {}), [op.method.toLowerCase()]: entry };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "AtomStudio",
      version: VERSION,
      description: "Structure editing, building, viewing, optimization and AI-driven workflows for crystals and molecules.",
      license: { name: "AGPL-3.0-or-later", identifier: "AGPL-3.0-or-later" },
    },
    components: {
      schemas: { ErrorResponse: jsonSchema(ErrorResponse, "output") },
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "needed when the service runs with ATOMSTUDIO_TOKEN" },
      },
    },
    security: [{}, { bearer: [] }],
    paths,
  };
};
