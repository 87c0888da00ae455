/**
 * `/api/adsorption/*`: adsorption sites and adsorbate placement, with the paths and request fields
 * the earlier implementation accepted and pymatgen's AdsorbateSiteFinder behind them (written up in
 * packages/server/src/adsorption/README.md). Unknown fields are refused (422), every range is a
 * coded 400, and nothing falls back silently.
 */

import { pairDistance, structureFormula, type Vec3 } from "atomstudio-core";
import { z } from "zod";
import type { DualSite } from "../adsorption/placement.ts";
import {
  ADSORBATE_MAX_ATOMS,
  ADSORPTION_MAX_ATOMS,
  compact,
  DUAL_MAX_SITES,
  NEIGHBOR_MAX_COORDINATE,
  NEIGHBOR_MAX_DISTANCE,
  NEIGHBOR_POSITIONS_MAX,
  readStructure,
  runAdsorption,
} from "../adsorption/service.ts";
import { compute } from "../compute/service.ts";
import { serviceError } from "../errors/codes.ts";
import { defineOperation, type ErrorRow } from "../registry/operation.ts";
import { StructureJSON, Vec3 as Vec3Schema } from "../registry/schemas.ts";

const tag = "adsorption";
const KINDS = ["ontop", "bridge", "hollow"] as const;
const SITE_TYPES = ["top", "bridge", "hollow3", "hollow4"] as const;

const bad = (name: string, message: string, details: Record<string, unknown> = {}): never => {
  throw serviceError("INVALID_ADSORPTION_PARAMETER", `${name}: ${message}`, { parameter: name, ...details });
};
const inRange = (name: string, v: number, min: number, max: number): number =>
  v >= min && v <= max ? v : bad(name, `${v} is outside ${min} to ${max}`, { value: v, min, max });

const worker: ErrorRow[] = [
  { status: 503, code: "ANALYSIS_UNAVAILABLE", when: "pymatgen is not installed in the analysis worker's Python" },
  { status: 504, code: "DEADLINE_EXCEEDED", when: "longer than ATOMSTUDIO_ANALYSIS_TIMEOUT_S" },
  { status: 502, code: "WORKER_DIED", when: "the analysis worker died during the request (it is replaced)" },
  {
    status: 400,
    code: "TOO_MANY_ATOMS",
    when: `a slab over ${ADSORPTION_MAX_ATOMS} atoms or an adsorbate over ${ADSORBATE_MAX_ATOMS}`,
  },
  { status: 400, code: "INVALID_STRUCTURE", when: "a structure that cannot be read, or has no atoms" },
  { status: 400, code: "INVALID_ADSORPTION_PARAMETER", when: "a parameter outside its range (the message names it)" },
];

/**
 * Parameters of the earlier alpha-shape finder: accepted at their documented defaults so old
 * clients keep working, refused (400 UNSUPPORTED_PARAMETER) at any other value rather than
 * silently ignored, since AdsorbateSiteFinder has no equivalent.
 */
const LEGACY_DEFAULTS = {
  alpha: 2.7,
  gap_ratio: 1.2,
  blocking: 0.8,
  bottom_fraction: 0.5,
  expansion_distance: 3.0,
  filter_internal: true,
  filter_radius: 5.0,
  filter_threshold: 0.7,
} as const;

const SiteParams = z.strictObject({
  height: z.number().finite().default(1.5).describe("Å above the surface along its normal (pymatgen's distance); 0.5 to 5"),
  surface: z.enum(["top", "bottom", "both"]).optional().describe("which surface (default top; both when keep_bottom is true)"),
  keep_bottom: z.boolean().default(false).describe("also find sites on the lower surface (same as surface: both)"),
  positions: z
    .array(z.enum(KINDS))
    .min(1)
    .max(3)
    .default([...KINDS])
    .describe("pymatgen kinds to find: ontop, bridge, hollow"),
  merge: z
    .number()
    .finite()
    .default(0.01)
    .describe("Å; sites closer than this are one (pymatgen's near_reduce; 0 = never); 0 to 5"),
  symm_reduce: z
    .number()
    .finite()
    .default(0.01)
    .describe("tolerance (fractional) for merging symmetry-equivalent sites (0 = no reduction); 0 to 0.5"),
  surface_height: z
    .number()
    .finite()
    .default(0.9)
    .describe("Å; atoms within this of the outermost along the normal are surface atoms (pymatgen's height); 0.1 to 5"),
  no_obtuse_hollow: z.boolean().default(true).describe("skip hollow sites of obtuse and right triangles (pymatgen's default)"),
  pbc: z.boolean().nullable().default(null).describe("null or true: periodic; false is refused (sites need a periodic slab)"),
  alpha: z.number().optional().describe("earlier alpha-shape finder only: accepted at 2.7"),
  gap_ratio: z.number().optional().describe("earlier alpha-shape finder only: accepted at 1.2"),
  blocking: z.number().optional().describe("earlier alpha-shape finder only: accepted at 0.8"),
  bottom_fraction: z.number().optional().describe("earlier alpha-shape finder only: accepted at 0.5"),
  expansion_distance: z.number().optional().describe("earlier alpha-shape finder only: accepted at 3.0"),
  filter_internal: z.boolean().optional().describe("earlier alpha-shape finder only: accepted at true"),
  filter_radius: z.number().optional().describe("earlier alpha-shape finder only: accepted at 5.0"),
  filter_threshold: z.number().optional().describe("earlier alpha-shape finder only: accepted at 0.7"),
});

const Site = z.object({
  id: z.number().int(),
  position: z.array(z.number()).describe("Å, Cartesian: where the binding atom goes"),
  site_type: z.enum(SITE_TYPES).describe("top, bridge, hollow3 or hollow4 (by the surface atoms nearest in the surface plane)"),
  pymatgen_kind: z.enum(KINDS).describe("the AdsorbateSiteFinder list the site comes from"),
  surface: z.enum(["top", "bottom"]),
  normal: z.array(z.number()).describe("outward unit normal"),
  neighbor_indices: z.array(z.number().int()).describe("surface atoms around the site (an index repeats for a periodic image)"),
  neighbor_elements: z.array(z.string()),
  env_signature: z.string(),
  height: z.number(),
});
type Site = z.output<typeof Site>;

export const adsorptionSitesOp = defineOperation({
  id: "adsorption_sites",
  method: "POST",
  path: "/api/adsorption/sites",
  tag,
  summary: "Adsorption sites on a slab: ontop, bridge and hollow, symmetry-reduced (pymatgen AdsorbateSiteFinder)",
  description:
    "pymatgen's AdsorbateSiteFinder(slab, height=surface_height).find_adsorption_sites(distance=height, near_reduce=merge, symm_reduce): surface atoms within surface_height of the outermost, a Delaunay triangulation of them in the surface plane, sites at its vertices (top), edge midpoints (bridge) and triangle centres (hollow), one per symmetry class. The bottom surface is the same with the normal reversed. Positions are where the binding atom goes; pass one with its normal to /api/adsorption/place.",
  input: z.strictObject({
    structure: StructureJSON.describe("a periodic slab (vacuum along the a×b normal)"),
    params: SiteParams.default(SiteParams.parse({})),
  }),
  output: z.object({
    sites: z.array(Site),
    n_top: z.number().int(),
    n_bridge: z.number().int(),
    n_hollow3: z.number().int(),
    n_hollow4: z.number().int(),
    message: z.string(),
  }),
  errors: [
    ...worker,
    { status: 400, code: "MISSING_LATTICE", when: "the structure is a molecule" },
    { status: 400, code: "UNSUPPORTED_PARAMETER", when: "an alpha-shape parameter other than its default, or pbc false" },
    { status: 400, code: "NO_SURFACE_SITES", when: "no sites can be found (e.g. the surface atoms lie on one line)" },
  ],
  handler: async ({ structure, params }, ctx) => {
    for (const [name, def] of Object.entries(LEGACY_DEFAULTS)) {
      const v = params[name as keyof typeof LEGACY_DEFAULTS];
      if (v !== undefined && v !== def)
        throw serviceError(
          "UNSUPPORTED_PARAMETER",
          `params.${name} belongs to the earlier alpha-shape finder; sites now come from pymatgen's AdsorbateSiteFinder, which has no such parameter (leave it out, or send ${def})`,
          { parameter: name, value: v },
        );
    }
    if (params.pbc === false)
      throw serviceError("UNSUPPORTED_PARAMETER", "params.pbc false: site finding needs a periodic slab", { parameter: "pbc" });
    const height = inRange("params.height", params.height, 0.5, 5);
    const merge = inRange("params.merge", params.merge, 0, 5);
    const symmReduce = inRange("params.symm_reduce", params.symm_reduce, 0, 0.5);
    const surfaceHeight = inRange("params.surface_height", params.surface_height, 0.1, 5);
    if (params.surface === "top" && params.keep_bottom) bad("params.surface", "top contradicts keep_bottom true");
    const surface = params.surface ?? (params.keep_bottom ? "both" : "top");
    const slab = readStructure(structure, "structure", ADSORPTION_MAX_ATOMS, { periodic: true });
    const found = await runAdsorption<{ sites: Omit<Site, "id">[] }>(ctx, "adsorption_sites", {
      structure: compact(slab, structure),
      surface,
      height,
      positions: [...new Set(params.positions)],
      symm_reduce: symmReduce,
      near_reduce: merge,
      surface_height: surfaceHeight,
      no_obtuse_hollow: params.no_obtuse_hollow,
    });
    const sites = found.sites.map((s, id) => ({ id, ...s }));
    const count = (t: string) => sites.filter((s) => s.site_type === t).length;
    const counts = { n_top: count("top"), n_bridge: count("bridge"), n_hollow3: count("hollow3"), n_hollow4: count("hollow4") };
    return {
      sites,
      ...counts,
      message: sites.length
        ? `${sites.length} symmetry-distinct sites on the ${surface} surface${surface === "both" ? "s" : ""}: ${counts.n_top} top, ${counts.n_bridge} bridge, ${counts.n_hollow3} hollow3, ${counts.n_hollow4} hollow4`
        : `no sites of the kinds asked for (${params.positions.join(", ")}) on this slab`,
    };
  },
  mcp: "svc_adsorption_sites",
  assistant: { name: "find_adsorption_sites", inject: "structure", replacesStructure: false },
});

const Placement = {
  auto_rotate: z
    .boolean()
    .default(true)
    .describe(
      "turn the molecule so its centre of mass lies straight above the binding atoms (they face the surface); then two binding atoms are levelled to one height and three or more have their best-fit plane turned parallel to the surface",
    ),
  clearance: z.number().finite().default(1.5).describe("Å; least adsorbate–slab distance, periodic images included; 0 to 5"),
  on_overlap: z
    .enum(["lift", "error"])
    .default("lift")
    .describe("closer than clearance: lift along the normal (reported as lift) or answer 400 ADSORBATE_OVERLAP"),
  max_lift: z.number().finite().default(10).describe("Å; most lift allowed before 400 ADSORBATE_OVERLAP; 0 to 20"),
};
const placementParams = (p: { auto_rotate: boolean; clearance: number; on_overlap: "lift" | "error"; max_lift: number }) => ({
  autoRotate: p.auto_rotate,
  clearance: inRange("clearance", p.clearance, 0, 5),
  onOverlap: p.on_overlap,
  maxLift: inRange("max_lift", p.max_lift, 0, 20),
});

/** The slab of a request that names it `slab` or `structure` (one of the two). */
const slabOf = (slab: unknown, structure: unknown) => {
  if (slab !== undefined && structure !== undefined) bad("slab", "give the surface as slab or as structure, not both");
  const raw = slab ?? structure;
  if (raw === undefined) throw serviceError("INVALID_STRUCTURE", "slab (or structure) is required", { field: "slab" });
  return readStructure(raw, slab !== undefined ? "slab" : "structure", ADSORPTION_MAX_ATOMS);
};

const bindingOf = (indices: number[] | null | undefined, single: number | null | undefined, field: string, nAtoms: number) => {
  const list = indices ?? (single !== null && single !== undefined ? [single] : [0]);
  if (list.length === 0)
    throw serviceError("INVALID_BINDING_INDEX", `${field} is empty; give at least one binding atom`, { field });
  const out = list.filter((i) => i < 0 || i >= nAtoms);
  if (out.length)
    throw serviceError("INVALID_BINDING_INDEX", `${field}: index ${out[0]} is outside the adsorbate (0..${nAtoms - 1})`, {
      field,
      indices: out,
      n_adsorbate_atoms: nAtoms,
    });
  return [...new Set(list)];
};

const unitNormal = (v: readonly number[], field: string): number[] => {
  const n = Math.hypot(v[0] as number, v[1] as number, v[2] as number);
  if (!(n > 1e-8)) bad(field, "has zero length; give the outward normal of the surface (sites carry theirs)");
  return v.map((x) => x / n);
};

/**
 * neighbor_positions capped before any work: at most NEIGHBOR_POSITIONS_MAX, no coordinate beyond
 * NEIGHBOR_MAX_COORDINATE, each within NEIGHBOR_MAX_DISTANCE of the site (nearest image; farther is
 * a unit or frame mistake, e.g. fractional coordinates). Null when not sent.
 */
const neighborPositions = (list: Vec3[] | null | undefined, site: Vec3, lattice: Parameters<typeof pairDistance>[0]) => {
  if (list === null || list === undefined) return null;
  if (list.length > NEIGHBOR_POSITIONS_MAX)
    bad("neighbor_positions", `${list.length} positions; at most ${NEIGHBOR_POSITIONS_MAX}`, {
      count: list.length,
      limit: NEIGHBOR_POSITIONS_MAX,
    });
  for (const [i, q] of list.entries()) {
    if (!q.every((x) => Math.abs(x) <= NEIGHBOR_MAX_COORDINATE))
      bad(`neighbor_positions[${i}]`, `a coordinate beyond ±${NEIGHBOR_MAX_COORDINATE} Å`, {
        index: i,
        limit: NEIGHBOR_MAX_COORDINATE,
      });
    const d = pairDistance(lattice, site, q);
    if (!(d <= NEIGHBOR_MAX_DISTANCE))
      bad(
        `neighbor_positions[${i}]`,
        `${Number.isFinite(d) ? d.toFixed(3) : d} Å from site_position; neighbour positions are Cartesian Å within ${NEIGHBOR_MAX_DISTANCE} Å of the site`,
        { index: i, distance: Number.isFinite(d) ? d : null, limit: NEIGHBOR_MAX_DISTANCE },
      );
  }
  return list;
};

export const adsorptionPlaceOp = defineOperation({
  id: "adsorption_place",
  method: "POST",
  path: "/api/adsorption/place",
  tag,
  summary: "Place an adsorbate at a site, binding atoms down, with a periodic overlap check",
  description:
    "pymatgen's add_adsorbate for any outward normal: the binding atoms' centroid goes to site_position + height_offset·normal, the molecule's own z along the normal and x along the slab's a (auto_rotate first turns the molecule so its centre of mass lies above the binding atoms, then levels two binding atoms to one height or turns the best-fit plane of three or more parallel to the surface; with two or more binding atoms and two or more neighbor_positions it then turns about the normal, every 5° then ±18° in 1° steps around the best, to the angle minimising the summed in-plane distance from each binding atom to its nearest neighbour position). The least adsorbate–slab distance, periodic images included, must reach clearance: on_overlap lift moves it along the normal (the response says by how much), error answers 400.",
  input: z.strictObject({
    slab: StructureJSON.optional().describe("the surface (or send it as structure)"),
    structure: StructureJSON.optional().describe("the surface, when not sent as slab"),
    adsorbate: StructureJSON.describe("the molecule; a lattice, if any, is ignored"),
    binding_atom_indices: z
      .array(z.number().int())
      .max(ADSORBATE_MAX_ATOMS)
      .nullable()
      .optional()
      .describe("binding atoms (0-based)"),
    binding_atom_index: z.number().int().nullable().optional().describe("one binding atom (older form)"),
    site_position: Vec3Schema.describe("Å, Cartesian: where the binding atoms' centroid goes"),
    site_normal: Vec3Schema.default([0, 0, 1]).describe("outward normal of the surface at the site"),
    neighbor_positions: z
      .array(Vec3Schema)
      .nullable()
      .optional()
      .describe(
        `Å, Cartesian: surface atoms around the site, for multidentate alignment (two or more binding atoms, two or more positions, auto_rotate): the molecule is turned about the normal to minimise the summed in-plane distance from each binding atom to its nearest position; otherwise ignored (neighbor_alignment says why). At most ${NEIGHBOR_POSITIONS_MAX}, each within ${NEIGHBOR_MAX_DISTANCE} Å of the site (nearest periodic image), coordinates within ±${NEIGHBOR_MAX_COORDINATE} Å`,
      ),
    height_offset: z.number().finite().default(0).describe("Å; extra distance along the normal; -5 to 10"),
    ...Placement,
  }),
  output: z.object({
    structure: StructureJSON,
    slab_atom_count: z.number().int(),
    adsorbate_atom_count: z.number().int(),
    adsorbate_indices: z.array(z.number().int()),
    binding_atom_position: z.array(z.number()),
    lift: z.number().describe("Å the adsorbate was lifted along the normal to reach the clearance (0: none)"),
    min_distance: z.number().describe("Å; least adsorbate–slab distance, periodic images included"),
    neighbor_alignment: z
      .object({
        applied: z.boolean(),
        reason: z.string().nullable().describe("why the alignment was not applied (null when it was)"),
        rotation_deg: z.number().nullable().describe("turn about the normal after the orientation, degrees in [0, 360)"),
        in_plane_distance: z
          .number()
          .nullable()
          .describe("Å; summed in-plane distance from each binding atom to its nearest neighbour position"),
        nearest_neighbor: z
          .array(z.number().int())
          .nullable()
          .describe("for each binding atom, the index of its nearest neighbour position"),
      })
      .nullable()
      .describe("the multidentate alignment; null when neighbor_positions was not sent"),
    message: z.string(),
  }),
  errors: [
    ...worker,
    { status: 400, code: "INVALID_BINDING_INDEX", when: "a binding index outside the adsorbate, or an empty list" },
    {
      status: 400,
      code: "ADSORBATE_OVERLAP",
      when: "closer than clearance, and on_overlap is error or max_lift does not clear it",
    },
  ],
  handler: async (input, ctx) => {
    const slab = slabOf(input.slab, input.structure);
    const molecule = readStructure(input.adsorbate, "adsorbate", ADSORBATE_MAX_ATOMS);
    const binding = bindingOf(input.binding_atom_indices, input.binding_atom_index, "binding_atom_indices", molecule.length);
    const normal = unitNormal(input.site_normal, "site_normal");
    const heightOffset = inRange("height_offset", input.height_offset, -5, 10);
    const placing = placementParams(input);
    const neighbors = neighborPositions(input.neighbor_positions, input.site_position, slab.lattice);
    const alignmentSkipped =
      neighbors === null
        ? null
        : binding.length < 2
          ? "one binding atom: the alignment is for multidentate adsorbates"
          : neighbors.length < 2
            ? "fewer than two neighbor_positions"
            : !input.auto_rotate
              ? "auto_rotate is false: the molecule keeps its given orientation"
              : null;
    const r = await compute(ctx).run(
      "adsorptionPlace",
      {
        slab: (input.slab ?? input.structure) as Record<string, unknown>,
        adsorbate: input.adsorbate,
        binding,
        site: input.site_position,
        normal: normal as Vec3,
        neighbors: alignmentSkipped === null ? neighbors : null,
        placing: { ...placing, heightOffset },
      },
      { signal: ctx.request?.signal },
    );
    const formula = structureFormula(molecule);
    return {
      structure: r.structure,
      slab_atom_count: slab.length,
      adsorbate_atom_count: molecule.length,
      adsorbate_indices: r.adsorbate_indices,
      binding_atom_position: r.binding_atom_position,
      lift: r.lift,
      min_distance: r.min_distance,
      neighbor_alignment:
        neighbors === null
          ? null
          : r.neighbor_alignment
            ? { applied: true, reason: null, ...r.neighbor_alignment }
            : {
                applied: false,
                reason: alignmentSkipped ?? "not applied",
                rotation_deg: null,
                in_plane_distance: null,
                nearest_neighbor: null,
              },
      message: `placed ${formula} (${molecule.length} atoms)${r.neighbor_alignment ? `, turned ${r.neighbor_alignment.rotation_deg}° about the normal to its ${neighbors?.length} neighbour positions (summed in-plane distance ${r.neighbor_alignment.in_plane_distance.toFixed(3)} Å)` : ""}${alignmentSkipped ? ` (neighbor_positions ignored: ${alignmentSkipped})` : ""}${r.lift > 0 ? `, lifted ${r.lift.toFixed(3)} Å to clear ${placing.clearance} Å` : ""}${r.min_distance >= 0 ? `; least distance to the slab ${r.min_distance.toFixed(3)} Å` : ""}`,
    };
  },
  mcp: "svc_adsorption_place",
  assistant: { name: "place_adsorbate", inject: "structure", replacesStructure: true },
});

const DualSiteInput = z.strictObject({
  position: Vec3Schema,
  normal: Vec3Schema.optional().describe("outward normal (default: the slab's a×b normal)"),
  site_type: z.string().max(32).optional(),
});

const DUAL_TURN_NOTE = {
  applied: (deg: number) => `adsorbate 2 turned ${deg.toFixed(1)}° about its normal to face adsorbate 1`,
  refused_clearance: (deg: number) =>
    `adsorbate 2 not turned: facing adsorbate 1 (${deg.toFixed(1)}°) would bring it closer than the clearance`,
  no_direction: () => "adsorbate 2 not turned: it has no in-plane direction to face adsorbate 1 with",
  off: () => "adsorbate 2 not turned (rotate_adsorbate2 false)",
} as const;

export const adsorptionPlaceDualOp = defineOperation({
  id: "adsorption_place_dual",
  method: "POST",
  path: "/api/adsorption/place-dual",
  tag,
  summary: "Place two adsorbates on the pair of sites closest to a target distance apart",
  description:
    "Of the sites given (or, without sites, the top-surface sites of /api/adsorption/sites at height), the pair whose minimum-image distance is closest to target_distance within distance_tolerance; adsorbate 1 goes on the first, adsorbate 2 on the second against slab + adsorbate 1, both as in /api/adsorption/place with offset 0. Then adsorbate 2 is turned about site 2's normal (through its binding atoms' centroid) so that the in-plane direction from its centroid to its first binding atom points at adsorbate 1's first binding atom (nearest periodic image); the turn is kept only if adsorbate 2 stays at least clearance from slab + adsorbate 1 (ads2_rotation says which). No pair within the tolerance is 400 NO_SITE_PAIR, never a silent nearest pair.",
  input: z.strictObject({
    structure: StructureJSON.optional().describe("the surface (or send it as slab)"),
    slab: StructureJSON.optional().describe("the surface, when not sent as structure"),
    adsorbate1: StructureJSON,
    adsorbate2: StructureJSON,
    ads1_binding_indices: z.array(z.number().int()).max(ADSORBATE_MAX_ATOMS).default([0]),
    ads2_binding_indices: z.array(z.number().int()).max(ADSORBATE_MAX_ATOMS).default([0]),
    target_distance: z.number().finite().default(3.5).describe("Å; 0 to 50"),
    distance_tolerance: z.number().finite().default(1.5).describe("Å; 0 to 50"),
    sites: z.array(DualSiteInput).max(DUAL_MAX_SITES).optional().describe("candidate sites; absent: found on the top surface"),
    height: z.number().finite().default(1.5).describe("Å; site height when the sites are found here; 0.5 to 5"),
    rotate_adsorbate2: z
      .boolean()
      .default(true)
      .describe(
        "turn adsorbate 2 about site 2's normal so the in-plane direction from its centroid to its first binding atom points at adsorbate 1's first binding atom; kept only if adsorbate 2 stays at least clearance from every other atom",
      ),
    ...Placement,
  }),
  output: z.object({
    structure: StructureJSON,
    ads1_indices: z.array(z.number().int()),
    ads2_indices: z.array(z.number().int()),
    all_adsorbate_indices: z.array(z.number().int()),
    site1: z.object({ position: z.array(z.number()), type: z.string().nullable(), index: z.number().int() }),
    site2: z.object({ position: z.array(z.number()), type: z.string().nullable(), index: z.number().int() }),
    site_distance: z.number(),
    binding_distance: z.number(),
    lift: z.array(z.number()),
    ads2_rotation: z
      .object({
        status: z
          .enum(["applied", "refused_clearance", "no_direction", "off"])
          .describe(
            "applied; refused_clearance (the turn would break the clearance, adsorbate 2 left as placed); no_direction (adsorbate 2's first binding atom lies over its centroid, or adsorbate 1's straight over the axis); off (rotate_adsorbate2 false)",
          ),
        angle_deg: z.number().describe("the turn about site 2's normal, degrees in [-180, 180] (applied or refused)"),
        min_distance: z
          .number()
          .nullable()
          .describe("Å; least distance from the turned adsorbate 2 to slab + adsorbate 1, periodic images included"),
      })
      .describe("step 3: adsorbate 2 turned to face adsorbate 1"),
    message: z.string(),
  }),
  errors: [
    ...worker,
    { status: 400, code: "INVALID_BINDING_INDEX", when: "a binding index outside its adsorbate, or an empty list" },
    { status: 400, code: "ADSORBATE_OVERLAP", when: "an adsorbate cannot reach the clearance" },
    { status: 400, code: "NO_SITE_PAIR", when: "fewer than two sites, or no pair within the tolerance" },
    { status: 400, code: "MISSING_LATTICE", when: "no sites given and the surface is a molecule" },
  ],
  handler: async (input, ctx) => {
    const slab = slabOf(input.slab, input.structure);
    const m1 = readStructure(input.adsorbate1, "adsorbate1", ADSORBATE_MAX_ATOMS);
    const m2 = readStructure(input.adsorbate2, "adsorbate2", ADSORBATE_MAX_ATOMS);
    const binding1 = bindingOf(input.ads1_binding_indices, undefined, "ads1_binding_indices", m1.length);
    const binding2 = bindingOf(input.ads2_binding_indices, undefined, "ads2_binding_indices", m2.length);
    const target = inRange("target_distance", input.target_distance, 0, 50);
    const tolerance = inRange("distance_tolerance", input.distance_tolerance, 0, 50);
    const height = inRange("height", input.height, 0.5, 5);
    if (!input.sites && !slab.lattice)
      throw serviceError("MISSING_LATTICE", "without sites, the surface must be a periodic slab to find them", {
        field: "sites",
      });
    const sites: DualSite[] = input.sites
      ? input.sites.map((s, i) => ({
          position: s.position,
          normal: s.normal ? (unitNormal(s.normal, `sites[${i}].normal`) as Vec3) : null,
          site_type: s.site_type ?? null,
        }))
      : (
          await runAdsorption<{ sites: Array<{ position: Vec3; normal: Vec3; site_type: string }> }>(ctx, "adsorption_sites", {
            structure: compact(slab, input.slab ?? input.structure),
            surface: "top",
            height,
            positions: [...KINDS],
            symm_reduce: 0.01,
            near_reduce: 0.01,
            surface_height: 0.9,
            no_obtuse_hollow: true,
          })
        ).sites.map((s) => ({ position: s.position, normal: s.normal, site_type: s.site_type }));
    const r = await compute(ctx).run(
      "adsorptionPlaceDual",
      {
        slab: (input.slab ?? input.structure) as Record<string, unknown>,
        adsorbate1: input.adsorbate1,
        adsorbate2: input.adsorbate2,
        binding1,
        binding2,
        sites,
        target,
        tolerance,
        face: input.rotate_adsorbate2,
        placing: placementParams(input),
      },
      { signal: ctx.request?.signal },
    );
    return {
      ...r,
      all_adsorbate_indices: [...r.ads1_indices, ...r.ads2_indices],
      message: `sites ${r.site1.index} and ${r.site2.index} are ${r.site_distance.toFixed(3)} Å apart (target ${target} ± ${tolerance}); binding atoms ${r.binding_distance.toFixed(3)} Å apart; ${DUAL_TURN_NOTE[r.ads2_rotation.status](r.ads2_rotation.angle_deg)}`,
    };
  },
  mcp: "svc_adsorption_place_dual",
  assistant: { name: "place_two_adsorbates", inject: "structure", replacesStructure: true },
});

export const adsorptionHealthOp = defineOperation({
  id: "adsorption_health",
  method: "GET",
  path: "/api/adsorption/health",
  tag,
  summary: "The adsorption group answers (it does not start the analysis worker)",
  input: z.object({}),
  output: z.object({ status: z.literal("healthy"), service: z.literal("adsorption") }),
  handler: () => ({ status: "healthy" as const, service: "adsorption" as const }),
});

export const adsorptionOps = [adsorptionSitesOp, adsorptionPlaceOp, adsorptionPlaceDualOp, adsorptionHealthOp];
