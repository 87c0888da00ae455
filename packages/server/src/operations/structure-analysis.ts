/**
 * Surface slabs, structure analysis (symmetry, formulas, density) and standard cells. The work
 * runs in the compute pool (compute/README.md): off the event loop, with a deadline.
 */
import { fail, MAX_MILLER_INDEX, MAX_NORMAL_SEARCH, MAX_SLAB_TOTAL_ATOMS } from "atomstudio-core";
import { z } from "zod";
import { COMPUTE_ERRORS, compute } from "../compute/service.ts";
import type { ServiceContext } from "../context.ts";
import { defineOperation } from "../registry/operation.ts";
import { PeriodicStructureJSON, StructureJSON, StructureResult } from "../registry/schemas.ts";
import { infoWithoutSymmetry, StructureInfoResult } from "./viewer.ts";

const siteCount = (structure: Record<string, unknown>): number => (Array.isArray(structure.sites) ? structure.sites.length : 0);

const Miller = z.array(z.number().int()).length(3).describe("Miller indices h, k, l");

const SlabRequest = z.object({
  structure: PeriodicStructureJSON.describe("bulk structure"),
  miller: Miller,
  thickness: z
    .number()
    .meta({ exclusiveMinimum: 0 })
    .describe("no fractional part (3, 3.0): number of atomic layers; otherwise Angstrom"),
  vacuum: z.number().meta({ minimum: 0 }).default(15).describe("Angstrom"),
  center_slab: z.boolean().default(true).describe("center the slab in the vacuum"),
  primitive: z.boolean().default(true).describe("reduce to the primitive cell"),
  max_normal_search: z
    .number()
    .int()
    .meta({ minimum: 0, maximum: MAX_NORMAL_SEARCH })
    .default(1)
    .describe("maximum index for the normal search"),
  symmetrize: z.boolean().default(false).describe("remove surface atoms until both faces are equivalent"),
  termination_index: z.number().int().meta({ minimum: 0 }).default(0).describe("which termination to return (0-based)"),
});

const SlabResult = z.object({
  ...StructureResult,
  miller: z.array(z.number().int()),
  thickness_angstroms: z.number(),
  vacuum_angstroms: z.number(),
  formula: z.string(),
  surface_area: z.number(),
  n_terminations: z.number().int(),
  termination_index: z.number().int(),
});

const signalOf = (ctx: ServiceContext) => ({ signal: ctx.request?.signal });

const slabErrors = [
  { status: 400, code: "INVALID_MILLER", when: `Miller indices are all zero, or one is above ${MAX_MILLER_INDEX} in magnitude` },
  {
    status: 400,
    code: "INVALID_MAX_NORMAL_SEARCH",
    when: `max_normal_search is below 0 or above ${MAX_NORMAL_SEARCH}`,
  },
  { status: 400, code: "MISSING_LATTICE", when: "the structure has no lattice" },
  { status: 400, code: "INVALID_THICKNESS", when: "thickness is 0 or less" },
  { status: 400, code: "INVALID_VACUUM", when: "vacuum is below 0" },
  {
    status: 400,
    code: "TOO_MANY_ATOMS",
    when: `the slab (or its oriented cell) would exceed 10000 atoms, or all its terminations together ${MAX_SLAB_TOTAL_ATOMS}; checked before any is built`,
  },
  { status: 400, code: "INVALID_TERMINATION", when: "termination_index out of range (the message gives the range)" },
  ...COMPUTE_ERRORS,
];

const slabHandler = (req: z.output<typeof SlabRequest>, ctx: ServiceContext) => compute(ctx).run("slab", req, signalOf(ctx));

export const slabOp = defineOperation({
  id: "slab",
  method: "POST",
  path: "/api/structure-build/slab",
  tag: "structure-build",
  summary: "Cut a surface slab (pymatgen SlabGenerator semantics) and return one termination",
  input: SlabRequest,
  output: SlabResult,
  errors: slabErrors,
  handler: slabHandler,
  mcp: "svc_slab",
  assistant: { name: "cut_slab", inject: "structure", replacesStructure: true },
});

export const analysisSlabOp = defineOperation({
  ...slabOp,
  id: "structure_slab",
  path: "/api/structure/slab",
  tag: "structure",
  summary: "Generate a slab (the same operation as POST /api/structure-build/slab)",
  mcp: undefined,
  assistant: undefined,
});

export const infoOp = defineOperation({
  id: "structure_info",
  method: "POST",
  path: "/api/structure/info",
  tag: "structure",
  summary: "Formula, composition, lattice, symmetry (space group, crystal system, point group), sites and density",
  input: z.object({ structure: StructureJSON }),
  output: StructureInfoResult,
  description:
    "symmetry is null for molecules and for structures of more than ATOMSTUDIO_SYMMETRY_MAX_ATOMS atoms (default 10000).",
  errors: [{ status: 400, code: "INVALID_STRUCTURE", when: "structure JSON cannot be parsed" }, ...COMPUTE_ERRORS],
  handler: async ({ structure }, ctx) => {
    // Above the symmetry cap the summary is cheap (no symmetry search) and stays in process.
    if (siteCount(structure) > ctx.config.symmetryMaxAtoms) return infoWithoutSymmetry(structure);
    return compute(ctx).run("structureInfo", { structure }, signalOf(ctx));
  },
  mcp: "svc_analyze_structure",
  assistant: { name: "analyze_structure", inject: "structure", replacesStructure: false },
});

const standardCell = (kind: "conventional" | "primitive") =>
  defineOperation({
    id: `${kind}_cell`,
    method: "POST",
    path: `/api/structure/${kind}-cell`,
    tag: "structure",
    summary:
      kind === "conventional"
        ? "The conventional standard cell (spglib's standardized cell)"
        : "The primitive standard cell (spglib's primitive standardized cell)",
    input: z.object({ structure: PeriodicStructureJSON }),
    output: z.object({ ...StructureResult, formula: z.string(), original_n_atoms: z.number().int() }),
    errors: [
      { status: 400, code: "MISSING_LATTICE", when: "the structure has no lattice" },
      { status: 400, code: "INVALID_STRUCTURE", when: "structure JSON cannot be parsed" },
      { status: 400, code: "TOO_MANY_ATOMS", when: "more atoms than ATOMSTUDIO_SYMMETRY_MAX_ATOMS (default 10000)" },
      ...COMPUTE_ERRORS,
    ],
    handler: async ({ structure }, ctx) => {
      const n = siteCount(structure);
      const limit = ctx.config.symmetryMaxAtoms;
      if (n > limit)
        fail("TOO_MANY_ATOMS", `The symmetry search takes structures of up to ${limit} atoms; this one has ${n}`, {
          n_atoms: n,
          limit,
        });
      return compute(ctx).run("standardCell", { structure, kind }, signalOf(ctx));
    },
    mcp: `svc_${kind}_cell`,
    assistant: { name: `${kind}_cell`, inject: "structure", replacesStructure: true },
  });

export const structureAnalysis = [slabOp, analysisSlabOp, infoOp, standardCell("conventional"), standardCell("primitive")];
