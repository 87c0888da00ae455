import { z } from "zod";
import { STRUCTURE_JSON_SCHEMA, StructureJSON } from "./schemas.ts";

const STRUCTURE_DESCRIPTION = StructureJSON.description;

/**
 * StructureJSON or a copy of it: `.describe()` and `.meta()` make new schemas
 * whose `_zod.parent` chain leads back to the original, so the copies keep the full shape.
 */
const isStructureJSON = (schema: unknown): boolean => {
  for (let s = schema as { _zod?: { parent?: unknown } } | undefined; s; s = s._zod?.parent as typeof s)
    if (s === StructureJSON) return true;
  return false;
};

/** JSON Schema of a zod schema, with StructureJSON expanded to its documented shape. */
export const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> => {
  const out = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: (ctx) => {
      if (isStructureJSON(ctx.zodSchema)) {
        const json = ctx.jsonSchema as Record<string, unknown>;
        // A copy's own description (`StructureJSON.describe("base structure")`) goes in front of the shape's.
        const own = json.description === STRUCTURE_DESCRIPTION ? undefined : json.description;
        for (const k of Object.keys(json)) delete json[k];
        Object.assign(json, structuredClone(STRUCTURE_JSON_SCHEMA));
        if (own) json.description = `${own}. ${STRUCTURE_JSON_SCHEMA.description}`;
      }
    },
  }) as Record<string, unknown>;
  delete out.$schema;
  return out;
};
