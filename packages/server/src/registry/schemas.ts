/** Schemas shared by operations. Runtime checks stay shallow where the core validates deeply. */
import { z } from "zod";

/** An array (not a tuple) in JSON Schema: several tool-calling APIs reject `prefixItems`. */
export const Vec3 = z
  .array(z.number())
  .length(3)
  .describe("[x, y, z]; Cartesian coordinates and displacements in Angstrom")
  .transform((v) => v as [number, number, number]);

/**
 * A pymatgen structure or molecule dictionary. Validated deeply by the core's `fromDict`
 * (400 INVALID_STRUCTURE naming the field), so zod only checks it is an object: re-walking
 * 10,000 sites here would double the cost of every request. The OpenAPI document gets the
 * full shape through `STRUCTURE_JSON_SCHEMA`.
 */
export const StructureJSON = z.record(z.string(), z.unknown()).describe("StructureJSON: pymatgen Structure/Molecule dictionary");

const num = { type: "number" };
const vec3 = { type: "array", items: num, minItems: 3, maxItems: 3 };
export const STRUCTURE_JSON_SCHEMA = {
  type: "object",
  description:
    "pymatgen Structure.as_dict() / Molecule.as_dict(), or the reduced viewer form (lattice.matrix and sites with abc or xyz and species).",
  properties: {
    "@module": { type: "string" },
    "@class": { type: "string", enum: ["Structure", "Molecule"] },
    charge: num,
    lattice: {
      type: "object",
      description: "absent for molecules",
      properties: {
        matrix: { type: "array", items: vec3, minItems: 3, maxItems: 3, description: "rows are a, b, c" },
        pbc: { type: "array", items: { type: "boolean" }, minItems: 3, maxItems: 3 },
        a: num,
        b: num,
        c: num,
        alpha: num,
        beta: num,
        gamma: num,
        volume: num,
      },
    },
    sites: {
      type: "array",
      items: {
        type: "object",
        properties: {
          species: {
            type: "array",
            items: { type: "object", properties: { element: { type: "string" }, occu: num }, required: ["element"] },
          },
          abc: vec3,
          xyz: vec3,
          label: { type: "string" },
          properties: { type: "object" },
        },
        required: ["species"],
      },
    },
    properties: { type: "object" },
  },
  required: ["sites"],
  additionalProperties: true,
} as const;

export const Index = z.number().int().describe("0-based site index");
export const Indices = z.array(z.number().int()).describe("0-based site indices");

export const StructureResult = {
  structure: StructureJSON,
  n_atoms: z.number().int(),
};

export const ErrorResponse = z.object({
  error: z.string().describe("human-readable message"),
  code: z.string().describe("stable machine-readable code"),
  details: z.record(z.string(), z.unknown()).optional(),
});
