import { z } from "zod";
import { PERIODIC_STRUCTURE_JSON_SCHEMA, PeriodicStructureJSON, STRUCTURE_JSON_SCHEMA, StructureJSON } from "./schemas.ts";

const OWN_DESCRIPTIONS = new Set<unknown>([StructureJSON.description, PeriodicStructureJSON.description]);

/**
 * StructureJSON or a copy of it: `.describe()` and `.meta()` make new schemas
 * whose `_zod.parent` chain leads back to the original, so the copies keep the full shape.
 */
const structureShape = (schema: unknown): Record<string, unknown> | undefined => {
  let periodic = false;
  for (let s = schema as { _zod?: { parent?: unknown } } | undefined; s; s = s._zod?.parent as typeof s) {
    if (s === PeriodicStructureJSON) periodic = true;
    if (s === StructureJSON) return periodic ? PERIODIC_STRUCTURE_JSON_SCHEMA : STRUCTURE_JSON_SCHEMA;
  }
  return undefined;
};

/** JSON Schema of a zod schema, with StructureJSON expanded to its documented shape. */
export const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> => {
  const out = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: (ctx) => {
      const shape = structureShape(ctx.zodSchema);
      if (shape) {
        const json = ctx.jsonSchema as Record<string, unknown>;
        // A copy's own description (`StructureJSON.describe("base structure")`) goes in front of the shape's.
        const own = OWN_DESCRIPTIONS.has(json.description) ? undefined : json.description;
        for (const k of Object.keys(json)) delete json[k];
        Object.assign(json, structuredClone(shape));
        if (own) json.description = `${own}. ${shape.description}`;
      }
    },
  }) as Record<string, unknown>;
  delete out.$schema;
  return out;
};
