/**
 * `/api/heterostructure/*`: lattice matching (pymatgen's ZSL), interfaces (CoherentInterfaceBuilder,
 * or the slab pipeline for slabs), lateral joins and registry scans. Paths and request fields are
 * the earlier implementation's; its defects are fixed (builds take the match's own transformations,
 * strain is pymatgen's with components, unknown fields and out-of-range values are refused with
 * codes). Written up in packages/server/src/heterostructure/README.md.
 */
import { z } from "zod";
import { serviceError } from "../errors/codes.ts";
import { inRange, periodicDict, runHetero } from "../heterostructure/service.ts";
import { defineOperation, type ErrorRow } from "../registry/operation.ts";
import { PeriodicStructureJSON, StructureJSON } from "../registry/schemas.ts";

const tag = "heterostructure";
const MAX_MILLER = 5;

const Miller = z.array(z.number().int()).length(3).describe("Miller indices (h, k, l), each within ±5");
const Int2x2 = z
  .array(z.array(z.number().int()).length(2))
  .length(2)
  .describe("2x2 integer matrix (rows: new a, b in units of the cell's a, b)");
const Vec2x3 = z.array(z.array(z.number()).length(3)).length(2);
const num = (d: number, what: string) => z.number().default(d).describe(what);

const SearchParams = z
  .strictObject({
    mode: z
      .string()
      .default("bulk")
      .describe("bulk (crystals + Miller indices, pymatgen CoherentInterfaceBuilder) or slab (the inputs are slabs)"),
    substrate_miller: Miller.default([0, 0, 1]),
    film_miller: Miller.default([0, 0, 1]),
    max_area: num(400, "largest superlattice area, Å² (10 to 5000; at most 400 unit cells)"),
    max_area_ratio_tol: num(0.09, "area-ratio tolerance (0.001 to 1)"),
    max_length_tol: num(0.03, "relative length tolerance (0.001 to 0.5)"),
    max_angle_tol: num(
      0.01,
      "relative change of the angle between the two in-plane vectors (0.01 = 1 %), not radians (0.001 to 0.5)",
    ),
    max_results: num(50, "matches kept, in generation order (1 to 200); truncated says when more exist"),
  })
  .prefault({});
type SearchParams = z.output<typeof SearchParams>;

const checkSearch = (p: SearchParams): SearchParams => {
  if (p.mode !== "bulk" && p.mode !== "slab")
    throw serviceError(
      "INVALID_MODE",
      `mode ${JSON.stringify(p.mode)} is not bulk or slab (lateral matches: /api/heterostructure/search-lateral)`,
      {
        field: "mode",
      },
    );
  for (const key of ["substrate_miller", "film_miller"] as const) {
    const m = p[key];
    if (m.some((x) => Math.abs(x) > MAX_MILLER) || m.every((x) => x === 0))
      throw serviceError("INVALID_MILLER", `${key} ${JSON.stringify(m)}: indices within ±${MAX_MILLER}, not all zero`, {
        field: key,
      });
  }
  inRange(p.max_area, "max_area", 10, 5000);
  inRange(p.max_area_ratio_tol, "max_area_ratio_tol", 0.001, 1);
  inRange(p.max_length_tol, "max_length_tol", 0.001, 0.5);
  inRange(p.max_angle_tol, "max_angle_tol", 0.001, 0.5);
  inRange(p.max_results, "max_results", 1, 200, true);
  return p;
};

const Match = z
  .object({
    match_id: z
      .number()
      .int()
      .optional()
      .describe("the search's generation index (informational: the build uses the transformations)"),
    film_transformation: Int2x2,
    substrate_transformation: Int2x2,
    film_sl_vectors: Vec2x3.optional().describe("when sent, checked against what the transformation makes from these inputs"),
    substrate_sl_vectors: Vec2x3.optional(),
  })
  .passthrough()
  .describe("a match as /search returned it (extra fields are kept and ignored)");

const MatchOut = z
  .object({
    match_id: z.number().int(),
    match_area: z.number().describe("Å², film superlattice area (pymatgen's)"),
    substrate_area: z.number(),
    film_miller: z.array(z.number()).nullable(),
    substrate_miller: z.array(z.number()).nullable(),
    film_transformation: z.array(z.array(z.number())),
    substrate_transformation: z.array(z.array(z.number())),
    film_sl_vectors: z.array(z.array(z.number())),
    substrate_sl_vectors: z.array(z.array(z.number())),
    strain: z.number().describe("%: 100 × von Mises of pymatgen's Green–Lagrange strain of the match"),
    von_mises_strain: z.number(),
    strain_components: z.array(z.array(z.number())).describe("pymatgen's Green–Lagrange strain tensor (fractions)"),
    n_atoms_film: z.number().int(),
    n_atoms_substrate: z.number().int(),
  })
  .passthrough();

const BuildResult = {
  structure: StructureJSON,
  n_atoms: z.number().int(),
  n_atoms_substrate: z.number().int(),
  n_atoms_film: z.number().int(),
  match_area: z.number(),
  strain: z.number(),
  von_mises_strain: z.number(),
  strain_components: z.array(z.array(z.number())),
  message: z.string(),
};

const workerErrors: ErrorRow[] = [
  { code: "INVALID_STRUCTURE", when: "a structure the core or pymatgen cannot read" },
  { code: "MISSING_LATTICE", when: "an input without a lattice (a molecule)" },
  { code: "OUT_OF_RANGE", when: "a number outside its documented range (details: field, min, max)" },
  { code: "TOO_MANY_ATOMS", when: "an input, or the result, over the atom cap" },
  { code: "ANALYSIS_UNAVAILABLE", when: "pymatgen is not installed in the analysis worker's Python" },
  { code: "DEADLINE_EXCEEDED", when: "longer than ATOMSTUDIO_ANALYSIS_TIMEOUT_S" },
  { code: "QUEUE_FULL", when: "the analysis worker's queue is full" },
  { code: "INTERFACE_FAILED", when: "pymatgen refuses the inputs (a cell it cannot cut, match or stack), with its reason" },
];
const matchErrors: ErrorRow[] = [
  { code: "INVALID_TRANSFORM", when: "a transformation that is not a non-singular 2x2 integer matrix (entries within ±100)" },
  { code: "MATCH_MISMATCH", when: "the match's superlattice vectors are not what its transformations make from these inputs" },
];

const structures = (o: { substrate: unknown; film: unknown }) => ({
  substrate: periodicDict(o.substrate, "substrate"),
  film: periodicDict(o.film, "film"),
});

export const heteroSearchOp = defineOperation({
  id: "heterostructure_search",
  method: "POST",
  path: "/api/heterostructure/search",
  tag,
  summary: "Lattice matches (pymatgen ZSL) between a substrate and a film; termination pairs in bulk mode",
  description:
    "Bulk mode: pymatgen CoherentInterfaceBuilder on two crystals and Miller indices. Slab mode: ZSL on the in-plane vectors of two slabs. Matches are numbered in generation order (match_id) and sorted by (area, strain); send one back to /build as it is.",
  input: z.strictObject({ substrate: PeriodicStructureJSON, film: PeriodicStructureJSON, params: SearchParams }),
  output: z.object({
    mode: z.string(),
    matches: z.array(MatchOut),
    terminations: z.array(z.object({ film_termination: z.string(), substrate_termination: z.string(), label: z.string() })),
    n_matches: z.number().int(),
    n_terminations: z.number().int(),
    truncated: z.boolean().describe("more matches exist than max_results"),
    message: z.string(),
  }),
  errors: [
    ...workerErrors,
    { code: "INVALID_MODE", when: "mode is not bulk or slab" },
    { code: "INVALID_MILLER", when: "a Miller index beyond ±5, all zero, or one pymatgen cannot cut" },
    { code: "AREA_TOO_LARGE", when: "max_area is more than 400 unit cells of the smaller surface cell" },
  ],
  handler: async ({ params, ...rest }, ctx) =>
    runHetero(ctx, "hetero_search", { ...structures(rest), params: checkSearch(params) }),
  mcp: "svc_heterostructure_search",
  assistant: { name: "heterostructure_search", replacesStructure: false },
});

const BuildParams = z
  .strictObject({
    gap: num(2, "Å between the substrate's top and the film's bottom, along the surface normal (0.5 to 10)"),
    vacuum: num(20, "Å of vacuum in the cell (0 to 60)"),
    substrate_thickness: num(3, "layers, bulk mode (1 to 20)"),
    film_thickness: num(3, "layers, bulk mode (1 to 20)"),
    twist_angle: num(0, "must be 0: a twist inside an unchanged cell breaks periodicity (400 TWIST_NOT_COMMENSURATE)"),
  })
  .prefault({});

const checkGapVacuum = (gap: number, vacuum: number) => {
  inRange(gap, "gap", 0.5, 10);
  inRange(vacuum, "vacuum", 0, 60);
};

export const heteroBuildOp = defineOperation({
  id: "heterostructure_build",
  method: "POST",
  path: "/api/heterostructure/build",
  tag,
  summary: "Build the interface of one match (and termination, bulk mode) from the match's own transformations",
  description:
    "Slab mode: both slabs' superlattices, the film mapped onto the substrate's, stacked gap Å above it along the surface normal, vacuum split above and below. Bulk mode: pymatgen CoherentInterfaceBuilder.get_interfaces with exactly this match. Site property interface_label says substrate or film.",
  input: z.strictObject({
    substrate: PeriodicStructureJSON,
    film: PeriodicStructureJSON,
    match: Match,
    termination_index: z.number().int().default(0).describe("bulk mode: index into /search's terminations"),
    params: BuildParams,
    search_params: SearchParams,
  }),
  output: z.object({ ...BuildResult, mode: z.string(), match_id: z.number().int().nullable().optional() }).passthrough(),
  errors: [
    ...workerErrors,
    ...matchErrors,
    { code: "INVALID_MODE", when: "search_params.mode is not bulk or slab" },
    { code: "INVALID_MILLER", when: "a Miller index beyond ±5 or all zero" },
    { code: "INVALID_TERMINATION", when: "termination_index out of range (bulk mode)" },
    { code: "NO_TERMINATIONS", when: "pymatgen finds no termination pair (bulk mode)" },
    { code: "TWIST_NOT_COMMENSURATE", when: "twist_angle is not 0" },
  ],
  handler: async ({ params, search_params, termination_index, match, ...rest }, ctx) => {
    checkGapVacuum(params.gap, params.vacuum);
    inRange(params.substrate_thickness, "params.substrate_thickness", 1, 20, true);
    inRange(params.film_thickness, "params.film_thickness", 1, 20, true);
    inRange(params.twist_angle, "params.twist_angle", 0, 180);
    inRange(termination_index, "termination_index", 0, 1000, true);
    return runHetero(ctx, "hetero_build", {
      ...structures(rest),
      match,
      termination_index,
      params,
      search_params: checkSearch(search_params),
    });
  },
  mcp: "svc_heterostructure_build",
  assistant: { name: "heterostructure_build", replacesStructure: true },
});

export const heteroBuildManualOp = defineOperation({
  id: "heterostructure_build_manual",
  method: "POST",
  path: "/api/heterostructure/build-manual",
  tag,
  summary: "Stack two slabs with given in-plane supercell matrices (no search); strain reported",
  input: z.strictObject({
    substrate: PeriodicStructureJSON,
    film: PeriodicStructureJSON,
    substrate_transform: Int2x2,
    film_transform: Int2x2,
    gap: num(2, "Å along the surface normal (0.5 to 10)"),
    vacuum: num(20, "Å (0 to 60)"),
    twist_angle: num(0, "must be 0 (400 TWIST_NOT_COMMENSURATE otherwise)"),
  }),
  output: z.object(BuildResult).passthrough(),
  errors: [...workerErrors, ...matchErrors, { code: "TWIST_NOT_COMMENSURATE", when: "twist_angle is not 0" }],
  handler: async ({ substrate_transform, film_transform, gap, vacuum, twist_angle, ...rest }, ctx) => {
    checkGapVacuum(gap, vacuum);
    inRange(twist_angle, "twist_angle", 0, 180);
    return runHetero(ctx, "hetero_build_manual", {
      ...structures(rest),
      substrate_transform,
      film_transform,
      gap,
      vacuum,
      twist_angle,
    });
  },
  mcp: "svc_heterostructure_build_manual",
  assistant: { name: "heterostructure_build_manual", replacesStructure: true },
});

const FORMATS = ["cif", "poscar", "xyz", "extxyz"];

export const heteroBatchBuildOp = defineOperation({
  id: "heterostructure_batch_build",
  method: "POST",
  path: "/api/heterostructure/batch-build",
  tag,
  summary: "Registry candidates: one slab-mode match built with several in-plane film shifts, as files and structures",
  description:
    "Shifts: step_angstrom > 0 gives a grid with that step, else n_shift > 0 an n×n grid, else one shift per distinct top-layer substrate atom (plus the baseline). At most 100 candidates. Answers JSON: candidates[{filename, content, structure}] and manifest.",
  input: z.strictObject({
    substrate: PeriodicStructureJSON,
    film: PeriodicStructureJSON,
    match: Match,
    n_shift: num(0, "0 = shifts over surface atoms; n = n×n grid (0 to 10)"),
    step_angstrom: num(0, "Å; > 0 gives a grid with this step and takes priority over n_shift (0 to 10)"),
    target_z: num(0, "Å; > 0 fixes the c length (at least the stack's height; 0 to 200)"),
    gap: num(2, "Å (0.5 to 10)"),
    vacuum: num(20, "Å (0 to 60)"),
    fmt: z.string().default("cif").describe("cif, poscar, xyz or extxyz"),
    search_params: SearchParams,
  }),
  output: z.object({
    candidates: z.array(z.object({ filename: z.string(), content: z.string(), structure: StructureJSON })),
    manifest: z.array(z.record(z.string(), z.unknown())),
    n_candidates: z.number().int(),
    fmt: z.string(),
    message: z.string(),
  }),
  errors: [
    ...workerErrors,
    ...matchErrors,
    { code: "INVALID_FORMAT", when: "fmt is not cif, poscar, xyz or extxyz" },
    { code: "TOO_MANY_STRUCTURES", when: "the step grid gives more than 100 candidates" },
    { code: "INVALID_VACUUM", when: "target_z is below the stack's height" },
  ],
  handler: async ({ n_shift, step_angstrom, target_z, gap, vacuum, fmt, search_params, match, ...rest }, ctx) => {
    checkGapVacuum(gap, vacuum);
    inRange(n_shift, "n_shift", 0, 10, true);
    inRange(step_angstrom, "step_angstrom", 0, 10);
    inRange(target_z, "target_z", 0, 200);
    if (!FORMATS.includes(fmt))
      throw serviceError("INVALID_FORMAT", `fmt ${JSON.stringify(fmt)} is not one of ${FORMATS.join(", ")}`, { fmt });
    checkSearch(search_params);
    return runHetero(ctx, "hetero_batch_build", {
      ...structures(rest),
      match,
      n_shift,
      step_angstrom,
      target_z,
      gap,
      vacuum,
      fmt,
    });
  },
  mcp: "svc_heterostructure_batch_build",
});

export const heteroIntermatOp = defineOperation({
  id: "heterostructure_build_intermat",
  method: "POST",
  path: "/api/heterostructure/build-intermat",
  tag,
  summary: "Interface in one step from two bulk crystals by the intermat/JARVIS-Tools pipeline (optional library)",
  description:
    "intermat InterfaceCombi (lowest mismatch, conventional cells), first result. Substrate atoms first (intermat's bottom label), interface_label site property, in-plane coordinates wrapped. strain = 100·√(u² + v² − uv) of intermat's mismatches. Without intermat installed: 503 ANALYSIS_UNAVAILABLE with the install command.",
  input: z.strictObject({
    substrate: PeriodicStructureJSON,
    film: PeriodicStructureJSON,
    params: z
      .strictObject({
        substrate_miller: Miller.default([0, 0, 1]),
        film_miller: Miller.default([0, 0, 1]),
        substrate_thickness: num(16, "Å (2 to 100)"),
        film_thickness: num(16, "Å (2 to 100)"),
        separation: num(2.5, "Å gap (0.5 to 10)"),
        vacuum: num(8, "Å (0 to 60)"),
        max_area: num(300, "Å² (10 to 5000)"),
        ltol: num(0.08, "relative length tolerance (0.001 to 0.5)"),
        atol: num(1, "angle tolerance (0.01 to 10)"),
        max_area_ratio_tol: num(1, "area-ratio tolerance (0.01 to 2)"),
        apply_strain: z.boolean().default(false),
        disp_intvl: num(0, "in-plane displacement scan step (0 = none; 0 to 1)"),
      })
      .prefault({}),
  }),
  output: z
    .object({
      ...BuildResult,
      strain_components: z.array(z.array(z.number())).optional(),
      von_mises_strain: z.number().optional(),
      mismatch_u: z.number(),
      mismatch_v: z.number(),
      mismatch_angle: z.number(),
      area_substrate: z.number(),
      area_film: z.number(),
    })
    .passthrough(),
  errors: [
    ...workerErrors,
    { code: "INVALID_MILLER", when: "a Miller index beyond ±5 or all zero" },
    { code: "NO_INTERFACE", when: "intermat finds no interface (or does not label substrate and film)" },
  ],
  handler: async ({ params, ...rest }, ctx) => {
    checkSearch({
      ...params,
      mode: "bulk",
      max_area_ratio_tol: 0.09,
      max_length_tol: 0.03,
      max_angle_tol: 0.01,
      max_results: 1,
      max_area: params.max_area,
    });
    inRange(params.substrate_thickness, "params.substrate_thickness", 2, 100);
    inRange(params.film_thickness, "params.film_thickness", 2, 100);
    inRange(params.separation, "params.separation", 0.5, 10);
    inRange(params.vacuum, "params.vacuum", 0, 60);
    inRange(params.ltol, "params.ltol", 0.001, 0.5);
    inRange(params.atol, "params.atol", 0.01, 10);
    inRange(params.max_area_ratio_tol, "params.max_area_ratio_tol", 0.01, 2);
    inRange(params.disp_intvl, "params.disp_intvl", 0, 1);
    return runHetero(ctx, "hetero_intermat", { ...structures(rest), params });
  },
  mcp: "svc_heterostructure_build_intermat",
});

const LateralParams = z
  .strictObject({
    interface_axis: num(0, "0 = match along a, 1 = along b"),
    max_length: num(100, "Å, longest matched edge (5 to 500)"),
    max_strain: num(5, "%, largest 1-D mismatch (0.1 to 20)"),
    max_results: num(50, "matches returned (1 to 200); truncated says when more exist"),
  })
  .prefault({});
type LateralParams = z.output<typeof LateralParams>;
const checkLateral = (p: LateralParams): LateralParams => {
  inRange(p.interface_axis, "interface_axis", 0, 1, true);
  inRange(p.max_length, "max_length", 5, 500);
  inRange(p.max_strain, "max_strain", 0.1, 20);
  inRange(p.max_results, "max_results", 1, 200, true);
  return p;
};
const lateralSlabs = (o: { slab_A: unknown; slab_B: unknown }) => ({
  slab_A: periodicDict(o.slab_A, "slab_A"),
  slab_B: periodicDict(o.slab_B, "slab_B"),
});

export const heteroSearchLateralOp = defineOperation({
  id: "heterostructure_search_lateral",
  method: "POST",
  path: "/api/heterostructure/search-lateral",
  tag,
  summary: "1-D edge matches for joining two 2-D slabs side by side",
  input: z.strictObject({ slab_A: PeriodicStructureJSON, slab_B: PeriodicStructureJSON, params: LateralParams }),
  output: z.object({
    matches: z.array(
      z.object({
        match_id: z.number().int(),
        n1: z.number().int(),
        n2: z.number().int(),
        edge_length_A: z.number(),
        edge_length_B: z.number(),
        strain_percent: z.number(),
        n_atoms_A: z.number().int(),
        n_atoms_B: z.number().int(),
      }),
    ),
    n_matches: z.number().int(),
    truncated: z.boolean(),
    message: z.string(),
  }),
  errors: [...workerErrors, { code: "AREA_TOO_LARGE", when: "max_length is more than 1000 cells of the shorter edge" }],
  handler: async ({ params, ...rest }, ctx) =>
    runHetero(ctx, "hetero_lateral_search", { ...lateralSlabs(rest), params: checkLateral(params) }),
  mcp: "svc_heterostructure_search_lateral",
  assistant: { name: "heterostructure_search_lateral", replacesStructure: false },
});

export const heteroBuildLateralOp = defineOperation({
  id: "heterostructure_build_lateral",
  method: "POST",
  path: "/api/heterostructure/build-lateral",
  tag,
  summary: "Join two slabs side by side along a matched edge (both strained to the mean edge; buffer at both joints)",
  input: z.strictObject({
    slab_A: PeriodicStructureJSON,
    slab_B: PeriodicStructureJSON,
    match: z
      .object({ match_id: z.number().int().optional(), n1: z.number().int(), n2: z.number().int() })
      .passthrough()
      .describe("a match as /search-lateral returned it; n1 and n2 are used (edge lengths checked when sent)"),
    params: z
      .strictObject({
        width_A: num(1, "repeats of A across the joint (1 to 10)"),
        width_B: num(1, "repeats of B across the joint (1 to 10)"),
        buffer: num(0, "Å of extra gap at each joint (0 to 10)"),
        vacuum: num(20, "Å (0 to 60)"),
      })
      .prefault({}),
    search_params: LateralParams,
  }),
  output: z
    .object({
      structure: StructureJSON,
      n_atoms: z.number().int(),
      n_atoms_A: z.number().int(),
      n_atoms_B: z.number().int(),
      interface_length: z.number(),
      strain: z.number(),
      strain_A: z.number(),
      strain_B: z.number(),
      message: z.string(),
    })
    .passthrough(),
  errors: [...workerErrors, { code: "MATCH_MISMATCH", when: "n1, n2 below 1, or edge lengths that these slabs do not give" }],
  handler: async ({ params, search_params, match, ...rest }, ctx) => {
    inRange(params.width_A, "params.width_A", 1, 10, true);
    inRange(params.width_B, "params.width_B", 1, 10, true);
    inRange(params.buffer, "params.buffer", 0, 10);
    inRange(params.vacuum, "params.vacuum", 0, 60);
    inRange(match.n1, "match.n1", 1, 1000, true);
    inRange(match.n2, "match.n2", 1, 1000, true);
    return runHetero(ctx, "hetero_lateral_build", {
      ...lateralSlabs(rest),
      match,
      params,
      search_params: checkLateral(search_params),
    });
  },
  mcp: "svc_heterostructure_build_lateral",
  assistant: { name: "heterostructure_build_lateral", replacesStructure: true },
});

export const heteroGridScanOp = defineOperation({
  id: "heterostructure_grid_scan",
  method: "POST",
  path: "/api/heterostructure/grid-scan",
  tag,
  summary: "Film shifted over an n×n grid of the interface cell, reduced to the symmetry-distinct shifts",
  description:
    "Substrate and film are told apart by the interface_label site property that /build writes, else by n_atoms_substrate (substrate atoms first). Two shifts are the same when an operation of the substrate part and one of the film part with the same in-plane rotation map one onto the other. Each distinct shift is returned once, with its multiplicity.",
  input: z.strictObject({
    heterostructure: PeriodicStructureJSON,
    film: PeriodicStructureJSON.optional().describe(
      "accepted for compatibility; the film's symmetry is taken as it sits in the interface",
    ),
    n_atoms_substrate: z
      .number()
      .int()
      .optional()
      .describe("needed only when the interface has no interface_label site property"),
    params: z
      .strictObject({
        n_grid_x: num(6, "grid points along a (2 to 30)"),
        n_grid_y: num(6, "grid points along b (2 to 30)"),
        symprec: num(0.1, "symmetry tolerance, Å (0.001 to 1)"),
      })
      .prefault({}),
  }),
  output: z.object({
    entries: z.array(
      z.object({
        shift_frac: z.array(z.number()),
        shift_cart: z.array(z.number()),
        multiplicity: z.number().int(),
        structure: StructureJSON,
        n_atoms: z.number().int(),
        label: z.string(),
      }),
    ),
    n_total_grid: z.number().int(),
    n_irreducible: z.number().int(),
    n_symmetry_ops: z.number().int(),
    reduction_ratio: z.number(),
    split_by: z.string(),
    message: z.string(),
  }),
  errors: [
    ...workerErrors,
    { code: "INVALID_INDEX", when: "n_atoms_substrate missing or out of range when the interface has no labels" },
  ],
  handler: async ({ heterostructure, film, n_atoms_substrate, params }, ctx) => {
    inRange(params.n_grid_x, "params.n_grid_x", 2, 30, true);
    inRange(params.n_grid_y, "params.n_grid_y", 2, 30, true);
    inRange(params.symprec, "params.symprec", 0.001, 1);
    if (film !== undefined) periodicDict(film, "film");
    return runHetero(ctx, "hetero_grid_scan", {
      heterostructure: periodicDict(heterostructure, "heterostructure"),
      ...(n_atoms_substrate !== undefined ? { n_atoms_substrate } : {}),
      params,
    });
  },
  mcp: "svc_heterostructure_grid_scan",
});

export const heteroHealthOp = defineOperation({
  id: "heterostructure_health",
  method: "GET",
  path: "/api/heterostructure/health",
  tag,
  summary: "The heterostructure group answers",
  input: z.object({}),
  output: z.object({ status: z.literal("healthy"), service: z.literal("heterostructure") }),
  handler: () => ({ status: "healthy" as const, service: "heterostructure" as const }),
});

export const heterostructureOps = [
  heteroSearchOp,
  heteroBuildOp,
  heteroBuildManualOp,
  heteroBatchBuildOp,
  heteroIntermatOp,
  heteroSearchLateralOp,
  heteroBuildLateralOp,
  heteroGridScanOp,
  heteroHealthOp,
];
