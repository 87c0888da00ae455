/** Structure building: supercell, merge, and the legacy string-scaled supercell of `/api/build`. */
import { fail, fromDict, MAX_SCALING, MERGE_MODES, merge, structureFormula, supercell, toDict } from "atomstudio-core";
import { z } from "zod";
import { defineOperation } from "../registry/operation.ts";
import { PeriodicStructureJSON, StructureJSON, StructureResult, Vec3 } from "../registry/schemas.ts";

const tag = "structure-build";
const Scaling = z
  .array(z.number().int().meta({ minimum: 1, maximum: MAX_SCALING }))
  .length(3)
  .describe(`repetitions along a, b, c; each 1 to ${MAX_SCALING} (outside: 400 INVALID_SCALING)`);

export const supercellOp = defineOperation({
  id: "supercell",
  method: "POST",
  path: "/api/structure-build/supercell",
  tag,
  summary: "Repeat a periodic structure along a, b and c (pymatgen's Structure * scaling)",
  input: z.object({ structure: PeriodicStructureJSON, scaling: Scaling }),
  output: z.object({
    ...StructureResult,
    scaling: z.array(z.number().int()),
    original_n_atoms: z.number().int(),
    formula: z.string(),
  }),
  errors: [
    { status: 400, code: "INVALID_SCALING", when: "a scaling factor below 1 or above 10" },
    { status: 400, code: "MISSING_LATTICE", when: "the structure has no lattice (molecule)" },
    { status: 400, code: "TOO_MANY_ATOMS", when: "the result would exceed 10000 atoms" },
  ],
  handler: ({ structure, scaling }) => {
    const input = fromDict(structure);
    const out = supercell(input, scaling);
    return {
      structure: toDict(out),
      n_atoms: out.length,
      scaling,
      original_n_atoms: input.length,
      formula: structureFormula(out),
    };
  },
  mcp: "svc_supercell",
  assistant: { name: "make_supercell", inject: "structure", replacesStructure: true },
});

export const mergeOp = defineOperation({
  id: "merge",
  method: "POST",
  path: "/api/structure-build/merge",
  tag,
  summary: "Place the incoming structure's geometric centre at a position and merge it into the base",
  input: z.object({
    base: StructureJSON.describe("base structure; its lattice is preserved"),
    incoming: StructureJSON,
    position: Vec3.describe("Cartesian position of the incoming structure's geometric centre"),
    mode: z
      .string()
      .meta({ enum: [...MERGE_MODES] })
      .default("preserve_lattice")
      .describe("preserve_lattice (default) or to_molecule"),
  }),
  output: z.object({
    ...StructureResult,
    n_base_atoms: z.number().int(),
    n_incoming_atoms: z.number().int(),
    has_lattice: z.boolean(),
  }),
  errors: [
    { status: 400, code: "EMPTY_STRUCTURES", when: "both base and incoming are empty" },
    { status: 400, code: "INVALID_MODE", when: "mode is not preserve_lattice or to_molecule" },
  ],
  handler: ({ base, incoming, position, mode }) => {
    const b = fromDict(base);
    const i = fromDict(incoming);
    const out = merge(b, i, position, mode);
    return {
      structure: toDict(out),
      n_atoms: out.length,
      n_base_atoms: b.length,
      n_incoming_atoms: i.length,
      has_lattice: out.lattice !== null,
    };
  },
  mcp: "svc_merge",
  assistant: { name: "merge_structures", inject: "base", rename: { incoming_structure: "incoming" }, replacesStructure: true },
});

/** The published form of a scaling string (factors 1 to 10); the parser below also reads other factors, then refused by the range check. */
const SCALING_PATTERN = "^\\s*(([1-9]|10)|([1-9]|10)((\\s*[xX×,]\\s*|\\s+)([1-9]|10)){2})\\s*$";

/** "2x2x2", "2 2 2", "2,2,2" or "3" (all three); anything else is a 400, never a silent default. */
export const parseScalingString = (text: string): [number, number, number] => {
  const parts = text
    .trim()
    .toLowerCase()
    .split(/\s*[x×,\s]\s*/);
  const nums = parts.map((p) => (/^\d+$/.test(p) ? Number(p) : Number.NaN));
  const scaling = nums.length === 1 ? [nums[0], nums[0], nums[0]] : nums;
  if (scaling.length !== 3 || scaling.some((n) => n === undefined || Number.isNaN(n)))
    fail("INVALID_SCALING", `Cannot read supercell ${JSON.stringify(text)}: expected a form like "2x2x2"`, { scaling: text });
  return scaling as [number, number, number];
};

export const legacySupercellOp = defineOperation({
  id: "build_supercell_legacy",
  method: "POST",
  path: "/api/build/supercell",
  tag: "build",
  summary: "Supercell from a string such as 2x2x2, for one or several structures (kept for the workflow interface)",
  input: z
    .object({
      structure: PeriodicStructureJSON.optional(),
      structures: z.array(PeriodicStructureJSON).optional(),
      scaling: z
        .string()
        .meta({ pattern: SCALING_PATTERN })
        .describe('for example "2x2x2", "2 2 2", "2,2,2" or "3" (all three); each factor 1 to 10'),
    })
    .meta({ anyOf: [{ required: ["structure"] }, { required: ["structures"], properties: { structures: { minItems: 1 } } }] })
    .refine((v) => v.structure !== undefined || (v.structures?.length ?? 0) > 0, {
      message: "structure or structures is required",
      path: ["structure"],
    }),
  output: z.object({
    structures: z.array(StructureJSON),
    labels: z.array(z.string()),
    n_structures: z.number().int(),
    scaling: z.array(z.number().int()),
  }),
  errors: [
    { status: 400, code: "INVALID_SCALING", when: "malformed scaling string or a factor outside 1 to 10" },
    { status: 400, code: "MISSING_LATTICE", when: "a structure has no lattice" },
    { status: 400, code: "TOO_MANY_ATOMS", when: "a result would exceed 10000 atoms, or all results ATOMSTUDIO_MAX_TOTAL_ATOMS" },
    { status: 400, code: "TOO_MANY_STRUCTURES", when: "more structures than ATOMSTUDIO_MAX_STRUCTURES" },
  ],
  handler: ({ structure, structures, scaling }, ctx) => {
    const factors = parseScalingString(scaling);
    const inputs = [...(structure ? [structure] : []), ...(structures ?? [])];
    // The totals of the answer, from the inputs' sizes, before any supercell is built.
    const { maxStructures, maxTotalAtoms } = ctx.config;
    if (inputs.length > maxStructures)
      fail("TOO_MANY_STRUCTURES", `At most ${maxStructures} structures at once, got ${inputs.length}`, {
        n_structures: inputs.length,
        limit: maxStructures,
      });
    const images = factors.every((f) => Number.isInteger(f) && f >= 1 && f <= MAX_SCALING)
      ? factors[0] * factors[1] * factors[2]
      : 1;
    const total = inputs.reduce((n, d) => n + (Array.isArray(d.sites) ? d.sites.length : 0) * images, 0);
    if (total > maxTotalAtoms)
      fail("TOO_MANY_ATOMS", `The supercells would hold ${total} atoms together, more than the limit of ${maxTotalAtoms}`, {
        total_atoms: total,
        limit: maxTotalAtoms,
      });
    const outs = inputs.map((d) => supercell(fromDict(d), factors));
    return {
      structures: outs.map(toDict),
      labels: outs.map((s) => `${structureFormula(s).replaceAll(" ", "")} ${factors.join("x")} supercell`),
      n_structures: outs.length,
      scaling: factors,
    };
  },
});

export const structureBuild = [supercellOp, mergeOp, legacySupercellOp];
