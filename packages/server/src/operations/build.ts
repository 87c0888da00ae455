/**
 * `/api/build`: point defects, strain, doping, intercalation, combinatorial and random
 * substitution, nanoparticles (paths and request fields of the earlier interface, its defects
 * fixed; packages/server/src/build/README.md). Strain, doping and both substitutions are computed by
 * the core in the compute pool (the studio runs the same code); defects, intercalation and
 * nanoparticles by pymatgen-analysis-defects and ASE in the warm analysis worker.
 * Bodies are strict: an unknown field is a 422 naming it, never a silently ignored misspelling.
 */
import { fail, fromDict, MAX_STRAIN, MAX_STRAIN_STEPS, requireElement, type Structure, toDict } from "atomstudio-core";
import { z } from "zod";
import { runAnalysis } from "../analysis/service.ts";
import { COMPUTE_ERRORS, compute } from "../compute/service.ts";
import type { ServiceContext } from "../context.ts";
import { defineOperation } from "../registry/operation.ts";
import { ElementSymbol, PeriodicStructureJSON, publishedInt, StructureJSON } from "../registry/schemas.ts";
import { parseScalingString } from "./structure-build.ts";

const tag = "build";
const signalOf = (ctx: ServiceContext) => ({ signal: ctx.request?.signal });

const BuildResult = {
  structures: z.array(StructureJSON).describe("generated structures (pymatgen Structure dictionaries), in generation order"),
  labels: z.array(z.string()).describe("one label per structure"),
  count: z.number().int().describe("number of structures"),
  truncated: z.boolean().describe("true when max_structures cut the list (more distinct structures exist)"),
};

/** Parse and check the host: a periodic structure (a molecule is 400 MISSING_LATTICE). */
const periodicHost = (d: Record<string, unknown>, what: string): Structure => {
  const s = fromDict(d);
  if (!s.lattice) fail("MISSING_LATTICE", `${what} needs a periodic structure with a lattice; this is a molecule`);
  if (s.length === 0) fail("EMPTY_ATOMS", `${what} needs a structure with at least one site`);
  return s;
};

/**
 * The checks a host passes before pymatgen (and pymatgen-analysis-defects) in the analysis worker
 * sees it; each is a case pymatgen fails on that the core reads fine (found by fuzzing).
 *
 * - An occupancy below 1e-8 (pymatgen's `Composition.amount_tolerance`): pymatgen drops the species,
 *   leaving a site with fewer species, or none (an IndexError in the worker, a 500).
 * - With `voids` (the Voronoi interstitial generator, which matches lattices by pymatgen's Niggli
 *   reduction): a cell so elongated that the sphere of 1.2 × its longest vector holds more than
 *   MAX_SPHERE_LATTICE_POINTS lattice points. The reduction lists every such point and compares
 *   them pairwise: a 0.36 × 1000 × 1000 Å cell (20000 points) took 6.6 GB and a minute, a thinner
 *   one asked for 96 GB; on a smaller machine the worker is killed (502 WORKER_DIED).
 */
export const MAX_SPHERE_LATTICE_POINTS = 10_000;
const PYMATGEN_MIN_OCCUPANCY = 1e-8;
const requirePymatgenHost = (s: Structure, voids: boolean): void => {
  for (const [i, site] of s.species.entries())
    for (const [j, sp] of site.entries())
      if (sp.occu < PYMATGEN_MIN_OCCUPANCY)
        fail(
          "INVALID_STRUCTURE",
          `sites[${i}].species[${j}].occu is ${sp.occu}; pymatgen drops occupancies below ${PYMATGEN_MIN_OCCUPANCY}`,
          { field: `sites[${i}].species[${j}].occu`, value: sp.occu, min: PYMATGEN_MIN_OCCUPANCY },
        );
  const lattice = s.lattice;
  if (!voids || !lattice) return;
  const longest = Math.max(...lattice.lengths);
  const points = ((4 / 3) * Math.PI * (1.2 * longest) ** 3) / lattice.volume;
  if (!(points <= MAX_SPHERE_LATTICE_POINTS))
    fail(
      "INVALID_STRUCTURE",
      `The cell is too elongated for pymatgen's void search: its longest vector (${longest.toPrecision(4)} Å) is too long for its volume (${lattice.volume.toPrecision(4)} Å³); use a more compact cell (e.g. a Niggli-reduced one) or a supercell`,
      { field: "lattice", lattice_points: Math.round(points), limit: MAX_SPHERE_LATTICE_POINTS },
    );
};

/** `max_structures` resolved against the service cap, and the atoms all of them would hold. */
const structureBudget = (ctx: ServiceContext, requested: number | undefined, nAtoms: number): number => {
  const cap = ctx.config.maxStructures;
  const n = requested ?? cap;
  if (!Number.isInteger(n) || n < 1 || n > cap)
    fail("TOO_MANY_STRUCTURES", `max_structures must be a whole number from 1 to ${cap}; got ${n}`, {
      max_structures: n,
      limit: cap,
    });
  if (n * nAtoms > ctx.config.maxTotalAtoms)
    fail(
      "TOO_MANY_ATOMS",
      `${n} structures of ${nAtoms} atoms would hold ${n * nAtoms} atoms, more than the limit of ${ctx.config.maxTotalAtoms}; lower max_structures`,
      { total_atoms: n * nAtoms, limit: ctx.config.maxTotalAtoms },
    );
  return n;
};

const ENUMERATION_ERRORS = [
  { code: "TOO_MANY_CONFIGURATIONS", when: "the enumeration would visit more than 100000 configurations" },
  { code: "TOO_MANY_STRUCTURES", when: "max_structures outside 1 to ATOMSTUDIO_MAX_STRUCTURES" },
  { code: "TOO_MANY_ATOMS", when: "max_structures × atoms above ATOMSTUDIO_MAX_TOTAL_ATOMS" },
];
const HOST_ERRORS = [
  { code: "MISSING_LATTICE", when: "the structure is a molecule" },
  { code: "INVALID_STRUCTURE", when: "the structure cannot be read" },
  { code: "INVALID_ELEMENT", when: "an element symbol is not an element" },
];

// ---------------------------------------------------------------------------------------------

export const strainOp = defineOperation({
  id: "build_strain",
  method: "POST",
  path: "/api/build/strain",
  tag,
  summary: "Strain a crystal along its lattice axes (pymatgen's apply_strain), once or as a sweep",
  description:
    "uniaxial (axis a, b or c), biaxial (a and b) and hydrostatic scale the lattice vectors by 1 + strain, keeping fractional coordinates; frame cartesian applies F = I + ε along x, y, z instead. shear is the symmetric strain of engineering shear `magnitude` in `plane` (ε_ij = ε_ji = magnitude/2, F = I + ε: no rotation). n_steps > 1: symmetric sweep −|m| … +|m|, or one_sided m/n … m.",
  input: z.strictObject({
    structure: PeriodicStructureJSON,
    strain_type: z
      .string()
      .meta({ enum: ["uniaxial", "biaxial", "hydrostatic", "shear"] })
      .default("uniaxial"),
    axis: z
      .string()
      .meta({ enum: ["a", "b", "c", "x", "y", "z"] })
      .default("c")
      .describe("uniaxial only: a, b, c (x, y, z in the Cartesian frame)"),
    magnitude: z
      .number()
      .meta({ minimum: -MAX_STRAIN, maximum: MAX_STRAIN })
      .default(0.02)
      .describe("strain as a fraction (0.02 = 2 %); for shear the engineering shear strain"),
    n_steps: publishedInt(1, MAX_STRAIN_STEPS).default(1).describe(`structures in a sweep, 1 to ${MAX_STRAIN_STEPS}`),
    frame: z
      .string()
      .meta({ enum: ["lattice", "cartesian"] })
      .default("lattice"),
    sweep: z
      .string()
      .meta({ enum: ["symmetric", "one_sided"] })
      .default("symmetric"),
    plane: z
      .string()
      .meta({ enum: ["xy", "yz", "xz"] })
      .default("xy")
      .describe("shear only"),
  }),
  output: z.object({ ...BuildResult, strains: z.array(z.number()).describe("the strain of each structure, as a fraction") }),
  errors: [
    { code: "INVALID_STRAIN_TYPE", when: "strain_type is not uniaxial, biaxial, hydrostatic or shear" },
    { code: "INVALID_AXIS", when: "an axis or shear plane that does not exist" },
    { code: "INVALID_STRAIN_FRAME", when: "frame is not lattice or cartesian" },
    { code: "INVALID_STRAIN_SWEEP", when: "sweep is not symmetric or one_sided" },
    { code: "INVALID_STRAIN", when: "|magnitude| above 0.5, or a sweep of magnitude 0" },
    { code: "TOO_MANY_STRUCTURES", when: `n_steps above ${MAX_STRAIN_STEPS} (or not a whole number)` },
    ...HOST_ERRORS,
    ...COMPUTE_ERRORS,
  ],
  handler: (req, ctx) => {
    const s = periodicHost(req.structure, "Strain");
    if (Number.isInteger(req.n_steps) && req.n_steps >= 1) structureBudget(ctx, req.n_steps, s.length);
    return compute(ctx).run(
      "build",
      {
        kind: "strain",
        structure: toDict(s) as Record<string, unknown>,
        options: {
          type: req.strain_type,
          axis: req.axis,
          magnitude: req.magnitude,
          nSteps: req.n_steps,
          frame: req.frame,
          sweep: req.sweep,
          plane: req.plane,
        },
      },
      signalOf(ctx),
    ) as never;
  },
  mcp: "svc_build_strain",
  assistant: { name: "build_strain", inject: "structure", replacesStructure: false },
});

const CountConfigurations = {
  multiplicities: z.array(z.number().int()).describe("configurations of the full enumeration each structure stands for"),
  n_configurations: z.number().int().describe("configurations visited before grouping by symmetry"),
};

export const dopingOp = defineOperation({
  id: "build_doping",
  method: "POST",
  path: "/api/build/doping",
  tag,
  summary: "Substitutional doping by host element or explicit sites; random (seeded) or every symmetry-distinct arrangement",
  description:
    "Without enumerate: one structure with `concentration` sites drawn at random (seed, default 0) from the candidates. With enumerate: every arrangement of `concentration` dopants on the candidates, grouped into symmetry-distinct structures as pymatgen's StructureMatcher groups them, first of each class in lexicographic order; `truncated` when max_structures cut the list.",
  input: z.strictObject({
    structure: PeriodicStructureJSON,
    dopant: ElementSymbol.default("N"),
    host_element: ElementSymbol.default("C").describe("candidates: every site of this element (majority species)"),
    concentration: publishedInt(1)
      .default(1)
      .describe("number of sites to replace (a count, from 1 to the number of candidates)"),
    enumerate: z.boolean().default(false),
    target_indices: z
      .array(z.number())
      .nullable()
      .default(null)
      .describe("when not empty, the candidate sites instead of host_element"),
    seed: z.number().int().default(0).describe("seed of the random draw (the core's xoshiro128**, same in every client)"),
    max_structures: publishedInt(1).optional().describe("cap on the list (default and maximum ATOMSTUDIO_MAX_STRUCTURES)"),
  }),
  output: z.object({ ...BuildResult, ...CountConfigurations }),
  errors: [
    { code: "INVALID_INDEX", when: "a target index out of range" },
    { code: "HOST_ELEMENT_NOT_FOUND", when: "no site of host_element" },
    { code: "INVALID_CONCENTRATION", when: "concentration below 1 or above the number of candidate sites" },
    ...ENUMERATION_ERRORS,
    ...HOST_ERRORS,
    ...COMPUTE_ERRORS,
  ],
  handler: (req, ctx) => {
    const s = periodicHost(req.structure, "Doping");
    const maxStructures = structureBudget(ctx, req.max_structures, s.length);
    return compute(ctx).run(
      "build",
      {
        kind: "doping",
        structure: toDict(s) as Record<string, unknown>,
        options: {
          dopant: req.dopant,
          hostElement: req.host_element,
          concentration: req.concentration,
          enumerate: req.enumerate,
          targetIndices: req.target_indices,
          seed: req.seed,
          maxStructures,
        },
      },
      signalOf(ctx),
    ) as never;
  },
  mcp: "svc_build_doping",
  assistant: { name: "build_doping", inject: "structure", replacesStructure: false },
});

export const substitutionOp = defineOperation({
  id: "build_substitution",
  method: "POST",
  path: "/api/build/substitution",
  tag,
  summary: "Combinatorial substitution over groups of sites; arrangements equal by symmetry are one structure",
  input: z.strictObject({
    structure: PeriodicStructureJSON,
    groups: z
      .array(
        z.strictObject({
          target_indices: z.array(z.number()).describe("sites of the group"),
          replacement_elements: z.array(ElementSymbol).describe("the elements the group's sites take, one per arrangement"),
        }),
      )
      .describe("the product of the groups' replacement lists is enumerated; later groups win on shared sites"),
    max_structures: publishedInt(1).optional().describe("cap on the list (default and maximum ATOMSTUDIO_MAX_STRUCTURES)"),
  }),
  output: z.object({ ...BuildResult, ...CountConfigurations }),
  errors: [
    { code: "EMPTY_GROUPS", when: "no groups, or a group without sites or elements" },
    { code: "INVALID_INDEX", when: "a target index out of range" },
    ...ENUMERATION_ERRORS,
    ...HOST_ERRORS,
    ...COMPUTE_ERRORS,
  ],
  handler: (req, ctx) => {
    const s = periodicHost(req.structure, "Substitution");
    const maxStructures = structureBudget(ctx, req.max_structures, s.length);
    return compute(ctx).run(
      "build",
      {
        kind: "substitution",
        structure: toDict(s) as Record<string, unknown>,
        groups: req.groups.map((g) => ({ targetIndices: g.target_indices, replacementElements: g.replacement_elements })),
        maxStructures,
      },
      signalOf(ctx),
    ) as never;
  },
  mcp: "svc_build_substitution",
  assistant: { name: "build_substitution", inject: "structure", replacesStructure: false },
});

export const randomSubstitutionOp = defineOperation({
  id: "build_random_substitution",
  method: "POST",
  path: "/api/build/random-substitution",
  tag,
  summary: "Random placement of fixed dopant counts on candidate sites (seeded; duplicates by symmetry skipped)",
  input: z.strictObject({
    structure: PeriodicStructureJSON,
    host_element: ElementSymbol.nullable().default(null),
    target_indices: z.array(z.number()).nullable().default(null),
    dopants: z.array(z.strictObject({ element: ElementSymbol, count: z.number().int().default(0) })),
    n_samples: publishedInt(1).default(10).describe("arrangements wanted (at most max_structures)"),
    deduplicate: z.boolean().default(true).describe("skip arrangements equal by symmetry to one already drawn"),
    seed: z.number().int().nullable().default(null).describe("null is seed 0: every answer can be reproduced"),
    max_structures: publishedInt(1).optional().describe("cap on n_samples (default and maximum ATOMSTUDIO_MAX_STRUCTURES)"),
  }),
  output: z.object({
    ...BuildResult,
    attempts: z.number().int().describe("draws made (at most 50 × n_samples with deduplicate)"),
  }),
  errors: [
    { code: "INVALID_INDEX", when: "a target index out of range" },
    { code: "HOST_ELEMENT_NOT_FOUND", when: "no site of host_element" },
    { code: "MISSING_HOST", when: "neither host_element nor target_indices" },
    { code: "NO_DOPANTS", when: "no dopant with a count above 0" },
    { code: "INVALID_CONCENTRATION", when: "the dopants need more sites than there are candidates" },
    ...ENUMERATION_ERRORS,
    ...HOST_ERRORS,
    ...COMPUTE_ERRORS,
  ],
  handler: (req, ctx) => {
    const s = periodicHost(req.structure, "Random substitution");
    const cap = structureBudget(ctx, req.max_structures, s.length);
    if (!Number.isInteger(req.n_samples) || req.n_samples < 1 || req.n_samples > cap)
      fail("TOO_MANY_STRUCTURES", `n_samples must be a whole number from 1 to ${cap} (max_structures); got ${req.n_samples}`, {
        n_samples: req.n_samples,
        limit: cap,
      });
    structureBudget(ctx, req.n_samples, s.length);
    return compute(ctx).run(
      "build",
      {
        kind: "random-substitution",
        structure: toDict(s) as Record<string, unknown>,
        options: {
          hostElement: req.host_element,
          targetIndices: req.target_indices,
          dopants: req.dopants,
          nSamples: req.n_samples,
          deduplicate: req.deduplicate,
          seed: req.seed,
        },
      },
      signalOf(ctx),
    ) as never;
  },
  mcp: "svc_build_random_substitution",
  assistant: { name: "build_random_substitution", inject: "structure", replacesStructure: false },
});

// ---------------------------------------------------------------------------------------------
// Python (pymatgen-analysis-defects, ASE) in the warm analysis worker

const WORKER_ERRORS = [
  { code: "ANALYSIS_UNAVAILABLE", when: "pymatgen, pymatgen-analysis-defects or ASE is not installed in the worker" },
  { code: "DEADLINE_EXCEEDED", when: "longer than ATOMSTUDIO_ANALYSIS_TIMEOUT_S" },
  { code: "QUEUE_FULL", when: "too many requests wait for the analysis worker" },
];

export const defectOp = defineOperation({
  id: "build_defect",
  method: "POST",
  path: "/api/build/defect",
  tag,
  summary: "Point defects by pymatgen-analysis-defects: a vacancy, substitution or interstitial, or one per inequivalent site",
  description:
    "site_index counts sites of the input cell (the defect goes at the first image of that site in the supercell); -1 gives one structure per symmetry-inequivalent site (VacancyGenerator, SubstitutionGenerator). Interstitials sit at the inequivalent voids of VoronoiInterstitialGenerator (at least min_distance from every host atom); site_index then picks the void (-1: all). supercell defaults to 1x1x1: the cell is never enlarged unless asked.",
  input: z.strictObject({
    structure: PeriodicStructureJSON,
    defect_type: z
      .string()
      .meta({ enum: ["vacancy", "substitution", "interstitial"] })
      .default("vacancy"),
    site_index: z
      .number()
      .int()
      .default(0)
      .describe("site of the input cell (or void, for interstitials); -1: one per inequivalent site"),
    substitute_element: z.string().default("").describe("the new element (required for substitution and interstitial)"),
    supercell: z.string().default("1x1x1").describe('expansion applied first, e.g. "2x2x2" (each factor 1 to 10)'),
    min_distance: z
      .number()
      .meta({ minimum: 0.5, maximum: 3 })
      .default(0.9)
      .describe("interstitial: Å kept from every host atom"),
  }),
  output: z.object({
    ...BuildResult,
    defects: z.array(
      z
        .object({
          type: z.string(),
          site_index: z.number().int(),
          element: z.string(),
          multiplicity: z
            .number()
            .int()
            .nullable()
            .describe("equivalent sites in the input cell (null for a single chosen site)"),
          frac_coords: z.array(z.number()),
        })
        .passthrough(),
    ),
    scaling: z.array(z.number().int()),
  }),
  errors: [
    { code: "INVALID_DEFECT_TYPE", when: "defect_type is not vacancy, substitution or interstitial" },
    { code: "INVALID_INDEX", when: "site_index out of range, or negative other than -1" },
    { code: "MISSING_ELEMENT", when: "substitution or interstitial without substitute_element" },
    { code: "INVALID_SCALING", when: "an unreadable supercell string or a factor outside 1 to 10" },
    { code: "INVALID_DISTANCE", when: "min_distance outside 0.5 to 3 Å" },
    { code: "NO_INTERSTITIAL_SITES", when: "no void keeps min_distance from every host atom" },
    {
      code: "TOO_MANY_ATOMS",
      when: "the supercell would exceed ATOMSTUDIO_MAX_ATOMS, or all results ATOMSTUDIO_MAX_TOTAL_ATOMS",
    },
    ...HOST_ERRORS,
    ...WORKER_ERRORS,
  ],
  handler: async (req, ctx) => {
    const s = periodicHost(req.structure, "A point defect");
    if (!["vacancy", "substitution", "interstitial"].includes(req.defect_type))
      fail(
        "INVALID_DEFECT_TYPE",
        `defect_type must be vacancy, substitution or interstitial; got ${JSON.stringify(req.defect_type)}`,
        {
          defect_type: req.defect_type,
        },
      );
    const scaling = parseScalingString(req.supercell);
    if (scaling.some((f) => f < 1 || f > 10))
      fail("INVALID_SCALING", `Each supercell factor must be 1 to 10; got ${scaling.join("x")}`, { scaling });
    const images = scaling[0] * scaling[1] * scaling[2];
    const atoms = s.length * images;
    if (atoms + 1 > ctx.config.maxAtoms)
      fail("TOO_MANY_ATOMS", `The supercell would hold ${atoms} atoms, more than the limit of ${ctx.config.maxAtoms}`, {
        n_atoms: atoms,
        limit: ctx.config.maxAtoms,
      });
    if (req.site_index < -1 || (req.defect_type !== "interstitial" && req.site_index >= s.length))
      fail(
        "INVALID_INDEX",
        `site_index ${req.site_index} is out of range (0 to ${s.length - 1}, or -1 for every inequivalent site)`,
        {
          field: "site_index",
          value: req.site_index,
          n_sites: s.length,
        },
      );
    if (req.defect_type !== "vacancy") {
      if (!req.substitute_element)
        fail("MISSING_ELEMENT", `A ${req.defect_type} needs substitute_element (the element to put in)`, {
          field: "substitute_element",
        });
      requireElement(req.substitute_element, "substitute_element");
    }
    if (!(req.min_distance >= 0.5 && req.min_distance <= 3))
      fail("INVALID_DISTANCE", `min_distance must be 0.5 to 3 Å; got ${req.min_distance}`, { min_distance: req.min_distance });
    requirePymatgenHost(s, req.defect_type === "interstitial");
    // -1 gives at most one structure per site of the input cell
    if (req.site_index === -1) {
      const n = Math.min(s.length, ctx.config.maxStructures);
      if (n * (atoms + 1) > ctx.config.maxTotalAtoms)
        fail(
          "TOO_MANY_ATOMS",
          `Up to ${n} defect cells of ${atoms} atoms exceed the limit of ${ctx.config.maxTotalAtoms} atoms in all`,
          {
            total_atoms: n * (atoms + 1),
            limit: ctx.config.maxTotalAtoms,
          },
        );
    }
    const out = await runAnalysis<Record<string, unknown> & { structures: unknown[] }>(
      ctx,
      "build_defect",
      {},
      {
        structure: toDict(s),
        defect_type: req.defect_type,
        site_index: req.site_index,
        substitute_element: req.substitute_element,
        scaling,
        min_distance: req.min_distance,
      },
    );
    return truncate(out, ctx.config.maxStructures, ["structures", "labels", "defects"]) as never;
  },
  mcp: "svc_build_defect",
  assistant: { name: "build_defect", inject: "structure", replacesStructure: false },
});

/** Cut parallel lists of a worker answer at `cap`, saying so. */
const truncate = (out: Record<string, unknown>, cap: number, lists: string[]): Record<string, unknown> => {
  const n = (out[lists[0] as string] as unknown[]).length;
  if (n <= cap) return out;
  const cut: Record<string, unknown> = { ...out, truncated: true, count: cap };
  for (const k of lists) cut[k] = (out[k] as unknown[]).slice(0, cap);
  return cut;
};

export const MAX_INTERCALANTS = 64;

export const intercalationOp = defineOperation({
  id: "build_intercalation",
  method: "POST",
  path: "/api/build/intercalation",
  tag,
  summary: "Insert guest atoms at the host's voids (Voronoi interstitial sites), with overlap checks",
  description:
    "auto: the largest voids first; tetrahedral / octahedral: voids with 4 / 6 host atoms within 1.2 × the nearest host distance; custom: the fractional `positions` given. Every guest keeps min_distance from host atoms and min_guest_distance from other guests; too few such sites is a 400, never a silent partial answer.",
  input: z.strictObject({
    structure: PeriodicStructureJSON,
    species: ElementSymbol.default("Li"),
    position: z
      .string()
      .meta({ enum: ["auto", "tetrahedral", "octahedral", "custom"] })
      .default("auto"),
    n_intercalants: publishedInt(1, MAX_INTERCALANTS).default(1),
    positions: z.array(z.array(z.number()).length(3)).optional().describe("custom: fractional coordinates, one per guest"),
    min_distance: z.number().default(0.9).describe("Å kept from every host atom (0.5 to 3)"),
    min_guest_distance: z.number().default(2.0).describe("Å kept between guests (0.5 to 10)"),
  }),
  output: z.object({
    ...BuildResult,
    sites: z.array(
      z.object({ frac_coords: z.array(z.number()), nearest_host_distance: z.number(), coordination: z.number().int() }),
    ),
  }),
  errors: [
    {
      code: "INVALID_POSITION",
      when: "position is not auto, tetrahedral, octahedral or custom, or custom positions do not match n_intercalants",
    },
    { code: "INVALID_COUNT", when: `n_intercalants outside 1 to ${MAX_INTERCALANTS}` },
    { code: "INVALID_DISTANCE", when: "min_distance or min_guest_distance out of range" },
    { code: "SITE_OVERLAP", when: "a custom position closer than min_distance to a host atom" },
    { code: "NOT_ENOUGH_SITES", when: "fewer voids than guests keep the distances" },
    ...HOST_ERRORS,
    ...WORKER_ERRORS,
  ],
  handler: async (req, ctx) => {
    const s = periodicHost(req.structure, "Intercalation");
    requireElement(req.species, "species");
    if (!["auto", "tetrahedral", "octahedral", "custom"].includes(req.position))
      fail("INVALID_POSITION", `position must be auto, tetrahedral, octahedral or custom; got ${JSON.stringify(req.position)}`, {
        position: req.position,
      });
    const n = req.n_intercalants;
    if (!Number.isInteger(n) || n < 1 || n > MAX_INTERCALANTS)
      fail("INVALID_COUNT", `n_intercalants must be a whole number from 1 to ${MAX_INTERCALANTS}; got ${n}`, {
        n_intercalants: n,
      });
    if (req.position === "custom" && (req.positions?.length ?? 0) !== n)
      fail("INVALID_POSITION", `custom needs positions: ${n} fractional coordinates (got ${req.positions?.length ?? 0})`, {
        field: "positions",
      });
    if (req.positions?.some((p) => p.some((x) => !Number.isFinite(x) || Math.abs(x) > 1e3)))
      fail("INVALID_POSITION", "positions must be finite fractional coordinates", { field: "positions" });
    if (!(req.min_distance >= 0.5 && req.min_distance <= 3) || !(req.min_guest_distance >= 0.5 && req.min_guest_distance <= 10))
      fail("INVALID_DISTANCE", "min_distance must be 0.5 to 3 Å and min_guest_distance 0.5 to 10 Å", {
        min_distance: req.min_distance,
        min_guest_distance: req.min_guest_distance,
      });
    if (s.length + n > ctx.config.maxAtoms)
      fail("TOO_MANY_ATOMS", `The result would hold more than ${ctx.config.maxAtoms} atoms`, { limit: ctx.config.maxAtoms });
    requirePymatgenHost(s, req.position !== "custom");
    return (await runAnalysis(
      ctx,
      "build_intercalation",
      {},
      {
        structure: toDict(s),
        species: req.species,
        position: req.position,
        n_intercalants: n,
        positions: req.positions ?? [],
        min_distance: req.min_distance,
        min_guest_distance: req.min_guest_distance,
      },
    )) as never;
  },
  mcp: "svc_build_intercalation",
  assistant: { name: "build_intercalation", inject: "structure", replacesStructure: true },
});

/** Parameter caps that keep every shape near or under 10000 atoms (checked again on the result). */
export const NANOPARTICLE_LIMITS = { size: 10_000, length: 24, shells: 14, pqr: 12, vacuum: 100 } as const;

export const nanoparticleOp = defineOperation({
  id: "build_nanoparticle",
  method: "POST",
  path: "/api/build/nanoparticle",
  tag,
  summary: "A metal nanoparticle by ASE (Wulff construction, octahedron, icosahedron, decahedron) in a periodic box",
  input: z.strictObject({
    element: ElementSymbol,
    shape: z
      .string()
      .meta({ enum: ["wulff", "octahedron", "icosahedron", "decahedron"] })
      .default("wulff")
      .describe("case-insensitive"),
    structure: z
      .string()
      .meta({ enum: ["fcc", "bcc", "sc", "hcp"] })
      .default("fcc")
      .describe("wulff: the lattice"),
    size: publishedInt(1, NANOPARTICLE_LIMITS.size).default(100).describe("wulff: target number of atoms"),
    surfaces: z
      .array(z.array(z.number().int()).length(3))
      .nullable()
      .default(null)
      .describe("wulff facets (default 111, 100, 110)"),
    energies: z
      .array(z.number())
      .nullable()
      .default(null)
      .describe("wulff surface energies, one per facet (default 1.0, 1.1, 1.2)"),
    rounding: z
      .string()
      .meta({ enum: ["closest", "above", "below"] })
      .default("closest"),
    length: publishedInt(1, NANOPARTICLE_LIMITS.length).default(5).describe("octahedron edge length (atoms)"),
    cutoff: publishedInt(0).default(0).describe("octahedron truncation"),
    shells: publishedInt(1, NANOPARTICLE_LIMITS.shells).default(3).describe("icosahedron shells"),
    p: publishedInt(1, NANOPARTICLE_LIMITS.pqr).default(3),
    q: publishedInt(1, NANOPARTICLE_LIMITS.pqr).default(3),
    r: publishedInt(0, NANOPARTICLE_LIMITS.pqr).default(0),
    lattice_constant: z.number().default(0).describe("Å; 0: ASE's value for the element"),
    vacuum: z.number().default(10).describe("Å of padding on each side (0 to 100)"),
  }),
  output: z.object({
    structure: StructureJSON,
    n_atoms: z.number().int(),
    formula: z.string(),
    message: z.string(),
  }),
  errors: [
    { code: "INVALID_SHAPE", when: "shape, structure or rounding is not one of the listed values" },
    {
      code: "INVALID_NANOPARTICLE",
      when: "a parameter out of range, surfaces and energies of different lengths, 0 atoms, or a cluster ASE cannot build",
    },
    { code: "TOO_MANY_ATOMS", when: "the cluster exceeds ATOMSTUDIO_MAX_ATOMS" },
    ...WORKER_ERRORS,
  ],
  handler: async (req, ctx) => {
    requireElement(req.element, "element");
    const shape = req.shape.toLowerCase();
    const choice = (v: string, allowed: string[], field: string) => {
      if (!allowed.includes(v))
        fail("INVALID_SHAPE", `${field} must be one of ${allowed.join(", ")}; got ${JSON.stringify(v)}`, { field, value: v });
    };
    choice(shape, ["wulff", "octahedron", "icosahedron", "decahedron"], "shape");
    choice(req.structure, ["fcc", "bcc", "sc", "hcp"], "structure");
    choice(req.rounding, ["closest", "above", "below"], "rounding");
    const L = NANOPARTICLE_LIMITS;
    const range = (v: number, lo: number, hi: number, field: string) => {
      if (!(Number.isInteger(v) && v >= lo && v <= hi))
        fail("INVALID_NANOPARTICLE", `${field} must be a whole number from ${lo} to ${hi}; got ${v}`, {
          field,
          value: v,
          min: lo,
          max: hi,
        });
    };
    if (shape === "wulff") range(req.size, 1, Math.min(L.size, ctx.config.maxAtoms), "size");
    if (shape === "octahedron") {
      range(req.length, 1, L.length, "length");
      range(req.cutoff, 0, Math.max(0, Math.floor((req.length - 1) / 2)), "cutoff");
    }
    if (shape === "icosahedron") range(req.shells, 1, L.shells, "shells");
    if (shape === "decahedron") {
      range(req.p, 1, L.pqr, "p");
      range(req.q, 1, L.pqr, "q");
      range(req.r, 0, L.pqr, "r");
    }
    const surfaces = req.surfaces ?? [
      [1, 1, 1],
      [1, 0, 0],
      [1, 1, 0],
    ];
    const energies = req.energies ?? [1.0, 1.1, 1.2];
    if (shape === "wulff") {
      if (surfaces.length === 0 || surfaces.length !== energies.length || surfaces.length > 12)
        fail(
          "INVALID_NANOPARTICLE",
          `surfaces and energies must be 1 to 12 entries of the same length (got ${surfaces.length} and ${energies.length})`,
          {
            surfaces: surfaces.length,
            energies: energies.length,
          },
        );
      if (
        surfaces.some((h) => h.every((x) => x === 0) || h.some((x) => Math.abs(x) > 6)) ||
        energies.some((e) => !(e > 0 && Number.isFinite(e)))
      )
        fail(
          "INVALID_NANOPARTICLE",
          "each surface is a non-zero Miller index with components up to 6, each energy a positive number",
          {
            field: "surfaces",
          },
        );
    }
    if (!(req.lattice_constant === 0 || (req.lattice_constant >= 1 && req.lattice_constant <= 10)))
      fail("INVALID_NANOPARTICLE", `lattice_constant must be 0 (ASE's value) or 1 to 10 Å; got ${req.lattice_constant}`, {
        field: "lattice_constant",
      });
    if (!(req.vacuum >= 0 && req.vacuum <= L.vacuum))
      fail("INVALID_NANOPARTICLE", `vacuum must be 0 to ${L.vacuum} Å; got ${req.vacuum}`, { field: "vacuum" });
    return (await runAnalysis(
      ctx,
      "build_nanoparticle",
      {},
      {
        ...req,
        shape,
        surfaces,
        energies,
        max_atoms: ctx.config.maxAtoms,
      },
    )) as never;
  },
  mcp: "svc_build_nanoparticle",
  assistant: { name: "build_nanoparticle", replacesStructure: true },
});

export const buildOps = [defectOp, strainOp, dopingOp, intercalationOp, substitutionOp, randomSubstitutionOp, nanoparticleOp];
