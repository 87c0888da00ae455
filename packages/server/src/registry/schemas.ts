/** Schemas shared by operations. Runtime checks stay shallow where the core validates deeply. */
import { ELEMENTS } from "atomstudio-core";
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
/** StructureJSON where the operation needs a lattice: the same runtime check, a periodic-only published shape. */
export const PeriodicStructureJSON = StructureJSON.describe("StructureJSON of a periodic structure");

const num = { type: "number" };
const vec3 = { type: "array", items: num, minItems: 3, maxItems: 3 };
/** Element symbols the core accepts (H to Og); anything else is 400 INVALID_ELEMENT. */
export const ELEMENT_SYMBOLS: readonly string[] = ELEMENTS.map((e) => e.symbol);
const element = { type: "string", enum: ELEMENT_SYMBOLS };
const species = {
  type: "array",
  minItems: 1,
  description: "one entry per species on the site; occupancies in (0, 1] summing to at most 1",
  items: {
    type: "object",
    properties: {
      element,
      occu: { type: "number", exclusiveMinimum: 0, maximum: 1 },
      oxidation_state: num,
      spin: { type: ["number", "null"] },
    },
    required: ["element"],
  },
};
const siteProps = { species, abc: vec3, xyz: vec3, label: { type: "string" }, properties: { type: "object" } };
const LATTICE_SCHEMA = {
  type: "object",
  description: "the matrix (rows a, b, c; not singular), or the six parameters",
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
  anyOf: [{ required: ["matrix"] }, { required: ["a", "b", "c", "alpha", "beta", "gamma"] }],
};

/**
 * The published shape of StructureJSON: what `fromDict` accepts, as far as JSON Schema can say
 * (it cannot say "not singular" or "occupancies summing to at most 1": the fuzzing run repairs
 * those two in its generated cases, tools/fuzz/hooks.py), so that clients and generated test
 * cases send structures the service reads. A periodic structure
 * has a lattice and sites with `abc` or `xyz`; a molecule (`@class` Molecule, or no lattice)
 * has sites with `xyz`.
 */
const PERIODIC_BRANCH = {
  title: "periodic structure",
  properties: {
    "@class": { enum: ["Structure", "IStructure"] },
    lattice: LATTICE_SCHEMA,
    sites: { items: { anyOf: [{ required: ["abc"] }, { required: ["xyz"] }] } },
  },
  required: ["lattice"],
};

export const STRUCTURE_JSON_SCHEMA = {
  type: "object",
  description:
    "pymatgen Structure.as_dict() / Molecule.as_dict(), or the reduced viewer form (lattice.matrix and sites with abc or xyz and species).",
  properties: {
    "@module": { type: "string" },
    "@class": { type: "string", enum: ["Structure", "Molecule", "IStructure", "IMolecule"] },
    charge: num,
    spin_multiplicity: num,
    lattice: { ...LATTICE_SCHEMA, type: ["object", "null"], description: "absent or null for molecules" },
    sites: { type: "array", items: { type: "object", properties: siteProps, required: ["species"] } },
    properties: { type: "object" },
  },
  required: ["sites"],
  anyOf: [
    PERIODIC_BRANCH,
    {
      title: "molecule",
      properties: {
        "@class": { enum: ["Molecule", "IMolecule"] },
        lattice: { type: "null" },
        sites: { items: { required: ["xyz"] } },
      },
    },
  ],
  additionalProperties: true,
} as const;

/** The published shape where only a periodic structure is accepted (a molecule is 400 MISSING_LATTICE). */
export const PERIODIC_STRUCTURE_JSON_SCHEMA = {
  ...STRUCTURE_JSON_SCHEMA,
  description: `A periodic structure (with a lattice): ${STRUCTURE_JSON_SCHEMA.description}`,
  anyOf: [PERIODIC_BRANCH],
} as const;

/** An element symbol; zod checks only that it is a string, the core answers 400 INVALID_ELEMENT. */
export const ElementSymbol = z.string().meta({ enum: ELEMENT_SYMBOLS });

/**
 * A number published as an integer from `minimum` to `maximum`. Only the JSON type is checked by
 * zod (a wrong type is 422); the range and integrality are the handler's, with a coded 400.
 */
export const publishedInt = (minimum: number, maximum?: number) =>
  z.number().meta({ type: "integer", minimum, ...(maximum !== undefined ? { maximum } : {}) });

export const Index = z.number().int().meta({ minimum: 0 }).describe("0-based site index");
export const Indices = z
  .array(z.number().int().meta({ minimum: 0 }))
  .meta({ minItems: 1 })
  .describe("0-based site indices, at least one");

export const StructureResult = {
  structure: StructureJSON,
  n_atoms: z.number().int(),
};

export const ErrorResponse = z.object({
  error: z.string().describe("human-readable message"),
  code: z.string().describe("stable machine-readable code"),
  details: z.record(z.string(), z.unknown()).optional(),
});
