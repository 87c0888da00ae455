/** Surface slabs, structure analysis (symmetry, formulas, density) and standard cells. */
import {
  conventionalStandardStructure,
  fail,
  fromDict,
  initSymmetry,
  MAX_NORMAL_SEARCH,
  primitiveStandardStructure,
  slab,
  structureFormula,
  structureInfo,
  toDict,
} from "atomstudio-core";
import { z } from "zod";
import { defineOperation } from "../registry/operation.ts";
import { PeriodicStructureJSON, StructureJSON, StructureResult } from "../registry/schemas.ts";
import { StructureInfoResult } from "./viewer.ts";

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

const slabErrors = [
  { status: 400, code: "INVALID_MILLER", when: "Miller indices are all zero" },
  { status: 400, code: "MISSING_LATTICE", when: "the structure has no lattice" },
  { status: 400, code: "INVALID_THICKNESS", when: "thickness is 0 or less" },
  { status: 400, code: "INVALID_VACUUM", when: "vacuum is below 0" },
  { status: 400, code: "TOO_MANY_ATOMS", when: "the slab would exceed 10000 atoms" },
  { status: 400, code: "INVALID_TERMINATION", when: "termination_index out of range (the message gives the range)" },
];

const slabHandler = async (req: z.output<typeof SlabRequest>) => {
  // Symmetrization and the plane search use the symmetry tables (loaded once).
  await initSymmetry();
  const { structure, miller, ...opts } = req;
  const r = slab(fromDict(structure), { miller, ...opts });
  return {
    structure: toDict(r.structure),
    n_atoms: r.structure.length,
    miller,
    thickness_angstroms: r.thicknessAngstroms,
    vacuum_angstroms: r.vacuumAngstroms,
    formula: r.formula,
    surface_area: r.surfaceArea,
    n_terminations: r.nTerminations,
    termination_index: r.terminationIndex,
  };
};

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
  errors: [{ status: 400, code: "INVALID_STRUCTURE", when: "structure JSON cannot be parsed" }],
  handler: async ({ structure }) => {
    await initSymmetry();
    return structureInfo(fromDict(structure));
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
    ],
    handler: async ({ structure }) => {
      await initSymmetry();
      const s = fromDict(structure);
      if (!s.lattice) fail("MISSING_LATTICE", `A ${kind} cell needs a periodic structure; this is a molecule`);
      const out = kind === "conventional" ? conventionalStandardStructure(s) : primitiveStandardStructure(s);
      if (!out) return fail("INVALID_STRUCTURE", "No symmetry could be determined for this structure");
      return { structure: toDict(out), n_atoms: out.length, formula: structureFormula(out), original_n_atoms: s.length };
    },
    mcp: `svc_${kind}_cell`,
    assistant: { name: `${kind}_cell`, inject: "structure", replacesStructure: true },
  });

export const structureAnalysis = [slabOp, analysisSlabOp, infoOp, standardCell("conventional"), standardCell("primitive")];
