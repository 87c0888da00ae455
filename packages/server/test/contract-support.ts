/** Strict validation of responses against the output schemas an OpenAPI document publishes (ajv, JSON Schema 2020-12). */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components?: unknown };

/** `(method, path, status, body)` → the validation errors (empty when the body conforms). */
export const responseValidator = (document: Record<string, unknown>) => {
  const doc = document as Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  const compiled = new Map<string, ValidateFunction>();
  return (method: string, path: string, status: number, body: unknown): string[] => {
    const key = `${method} ${path} ${status}`;
    let fn = compiled.get(key);
    if (!fn) {
      const response = doc.paths[path]?.[method.toLowerCase()]?.responses[String(status)] as
        | { content?: Record<string, { schema?: Record<string, unknown> }> }
        | undefined;
      const schema = response?.content?.["application/json"]?.schema;
      if (!schema) return [`${key}: no published response schema`];
      // References (#/components/schemas/ErrorResponse) resolve against the document's components.
      fn = ajv.compile({ ...schema, components: doc.components });
      compiled.set(key, fn);
    }
    return fn(body) ? [] : (fn.errors ?? []).map((e) => `${e.instancePath || "(body)"} ${e.message} ${JSON.stringify(e.params)}`);
  };
};
