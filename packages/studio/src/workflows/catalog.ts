/**
 * The node types the panel offers: the service's operations, read from its OpenAPI document
 * (generated from the one operation registry, so a new operation appears here by itself), plus
 * the two workflow-only types `map` (run one operation on every structure of a list) and
 * `select` (keep the best item of a list by a field). Each type carries the JSON schema of its
 * parameters (the form is generated from it) and the names of its outputs (what downstream
 * inputs may pick).
 */

export type JsonSchema = Record<string, unknown>;

export interface NodeType {
  type: string;
  summary: string;
  group: string;
  /** JSON schema of the node's parameters (the operation's request body). */
  schema: JsonSchema;
  /** The names an input may fill: the request fields of an operation; `items` for map and select. */
  inputKeys: string[];
  /** Output fields a downstream input may reference (`node.field`). */
  outputs: string[];
  builtin: boolean;
}

/** Routes that are no workflow step: the workflow routes themselves, the live studio (view) and the chat. */
const NOT_A_STEP = /^\/api\/(workflow|view|chat|health)(\/|$)/;

const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** `map`: run `params.operation` once per item of `inputs.items`, each item as its `item_key` field. */
export const MAP_TYPE: NodeType = {
  type: "map",
  summary: "Run one operation on every structure of a list (fan out)",
  group: "workflow",
  schema: {
    type: "object",
    properties: {
      operation: { type: "string", description: "the node type run on each item" },
      item_key: { type: "string", default: "structure", description: "the request field each item fills" },
      params: { type: "object", description: "the operation's other request fields" },
    },
    required: ["operation"],
  },
  inputKeys: ["items"],
  outputs: ["results", "structures"],
  builtin: true,
};

/** `select`: keep the item of `inputs.items` with the lowest (or highest) `params.by`. */
export const SELECT_TYPE: NodeType = {
  type: "select",
  summary: "Pick the best item of a list by a field (lowest or highest)",
  group: "workflow",
  schema: {
    type: "object",
    properties: {
      by: { type: "string", default: "energy", description: "the field of each item compared, e.g. energy" },
      order: { type: "string", enum: ["min", "max"], default: "min", description: "lowest (min) or highest (max)" },
    },
    required: ["by"],
  },
  inputKeys: ["items"],
  outputs: ["structure", "value", "index", "result"],
  builtin: true,
};

/**
 * Node types from the OpenAPI document: POST operations with a JSON body. `allowed`: the types
 * `GET /api/workflow/node-types` lists (the service's word on what may be a step); without it,
 * every operation but the non-steps.
 */
export const catalogFromOpenApi = (doc: unknown, allowed?: ReadonlySet<string>): NodeType[] => {
  const out: NodeType[] = [];
  for (const [path, methods] of Object.entries(asRecord(asRecord(doc).paths))) {
    if (!allowed && NOT_A_STEP.test(path)) continue;
    const post = asRecord(asRecord(methods).post);
    const id = post.operationId;
    if (typeof id !== "string" || (allowed && !allowed.has(id))) continue;
    const schema = asRecord(asRecord(asRecord(asRecord(post.requestBody).content)["application/json"]).schema);
    const ok = asRecord(asRecord(asRecord(asRecord(post.responses)["200"]).content)["application/json"]).schema;
    out.push({
      type: id,
      summary: String(post.summary ?? id),
      group: String((post.tags as unknown[] | undefined)?.[0] ?? "other"),
      schema,
      inputKeys: Object.keys(asRecord(schema.properties)),
      outputs: Object.keys(asRecord(asRecord(ok).properties)),
      builtin: false,
    });
  }
  return [...out, MAP_TYPE, SELECT_TYPE];
};

/** What a `map` node outputs per item is its operation's output; the list fields are the map's own. */
export const outputsOf = (catalog: readonly NodeType[], type: string): string[] =>
  catalog.find((t) => t.type === type)?.outputs ?? [];

/** The names of parameters that hold a structure (a pymatgen dictionary): the usual targets of an input. */
export const structureParams = (schema: JsonSchema): string[] =>
  Object.entries(asRecord(schema.properties))
    .filter(([, p]) => {
      const r = asRecord(p);
      return "sites" in asRecord(r.properties) || (r.type === "array" && "sites" in asRecord(asRecord(r.items).properties));
    })
    .map(([k]) => k);
