import { z } from "zod";
import { STRUCTURE_JSON_SCHEMA, StructureJSON } from "./schemas.ts";

/** JSON Schema of a zod schema, with StructureJSON expanded to its documented shape. */
export const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> => {
  const out = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    override: (ctx) => {
      if (ctx.zodSchema === StructureJSON) {
        for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Record<string, unknown>)[k];
        Object.assign(ctx.jsonSchema, structuredClone(STRUCTURE_JSON_SCHEMA));
      }
    },
  }) as Record<string, unknown>;
  delete out.$schema;
  return out;
};
