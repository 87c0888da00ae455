/**
 * Trajectory analysis: `/api/md/rdf`, `/api/md/rmsd`, `/api/md/hbonds`, `/api/md/clustering`.
 * Each call is self-contained: the trajectory comes as a file (`{content, filename?, encoding}`,
 * gzip/bzip2 detected by magic bytes) or as frames (structure dictionaries), a frame range
 * selects frames (Python slice semantics), selections pick atoms by index or element. The work
 * is done by pure core functions over typed arrays (see packages/core/src/md), proven equal to
 * MDAnalysis, mdtraj, scipy and scikit-learn in the core's oracle tests. Units: Å, degrees, ps;
 * indices 0-based.
 */
import { z } from "zod";
import { runAnalysis } from "../analysis/service.ts";
import { COMPUTE_ERRORS, compute } from "../compute/service.ts";
import type { ServiceContext } from "../context.ts";
import type { MdAnalysis } from "../md/analyses.ts";
import { MD_LIMITS } from "../md/files.ts";
import { defineOperation } from "../registry/operation.ts";
import { StructureJSON } from "../registry/schemas.ts";

/**
 * Analyses read whole trajectories (10,000 atoms × 1,000 frames takes tens of seconds here): they
 * get ten times the compute pool's usual deadline.
 */
const inPool = <I>(ctx: ServiceContext, analysis: MdAnalysis, input: I) =>
  compute(ctx).run("md", { analysis, input } as never, {
    deadlineMs: ctx.config.computeDeadlineMs * 10,
    ...(ctx.request?.signal ? { signal: ctx.request.signal } : {}),
  }) as never;

const FileInput = z
  .object({
    content: z.string().describe("the file's text, or its bytes in base64"),
    filename: z.string().optional().describe("used for format detection: XDATCAR, water.pdb, run.lammpstrj, md.extxyz"),
    encoding: z.enum(["text", "base64"]).optional().describe("text (default) or base64 (gzip and bzip2 files)"),
  })
  .describe("a trajectory file: XDATCAR, extended XYZ, XYZ, multi-model PDB, LAMMPS dump; gzip/bzip2 detected by magic bytes");

const Selection = z
  .object({
    indices: z.array(z.number().int()).optional().describe("0-based atom indices"),
    elements: z.array(z.string()).optional().describe('element symbols, e.g. ["O"]'),
  })
  .describe("atoms by index or by element (one of the two); all atoms when omitted");

const FrameRange = z
  .object({
    start: z.number().int().optional(),
    stop: z.number().int().optional().describe("exclusive; negative counts from the end"),
    step: z.number().int().min(1).optional().describe("stride"),
  })
  .describe("frames start, start+step, … below stop (Python slice semantics)");

const common = {
  trajectory: FileInput.optional(),
  frames: z.array(StructureJSON).optional().describe("frames as structure dictionaries (instead of a file)"),
  format: z.string().optional().describe("xdatcar, extxyz, xyz, pdb or lammpstrj; detected when omitted"),
  lammps_types: z
    .record(z.string(), z.string())
    .optional()
    .describe("LAMMPS atom type → element, for dumps without an element column (else type = atomic number)"),
  frames_range: FrameRange.optional(),
  timestep_ps: z.number().positive().optional().describe("time between consecutive frames of the file, ps"),
};

const commonErrors = [
  { status: 400, code: "INVALID_FORMAT", when: "the file is not a readable trajectory (the message says what was tried)" },
  { status: 400, code: "INVALID_ENCODING", when: "base64 or compressed data is corrupt" },
  { status: 400, code: "MISSING_TRAJECTORY", when: "neither trajectory nor frames was given" },
  { status: 400, code: "AMBIGUOUS_INPUT", when: "both trajectory and frames were given" },
  { status: 400, code: "INCONSISTENT_FRAMES", when: "frames have different atom counts or species" },
  { status: 400, code: "TOO_MANY_FRAMES", when: "more frames than the caps allow" },
  { status: 400, code: "TOO_MANY_ATOMS", when: "more atoms per frame than the cap allows" },
  { status: 400, code: "INVALID_FRAME_RANGE", when: "the frame range selects nothing" },
  { status: 400, code: "EMPTY_SELECTION", when: "a selection matches no atom" },
  { status: 400, code: "INVALID_INDEX", when: "a selected index is out of range" },
  { status: 413, code: "PAYLOAD_TOO_LARGE", when: "the decompressed file is too large" },
  ...COMPUTE_ERRORS,
];

const FrameInfo = {
  format: z.string(),
  n_atoms: z.number().int(),
  n_frames_total: z.number().int(),
  frames: z.array(z.number().int()).describe("analysed frame indices"),
  time_ps: z.array(z.number()).nullable().describe("time of each analysed frame, ps (null when unknown)"),
};

export const rdfOp = defineOperation({
  id: "md_rdf",
  method: "POST",
  path: "/api/md/rdf",
  tag: "md",
  summary: "Radial distribution function g(r) between two atom selections, with the running coordination number",
  description:
    "As MDAnalysis InterRDF (self-pairs excluded), minimum image in any cell, averaged over the selected frames. r_max_ang defaults to min(10, half the smallest perpendicular cell width); a larger one is 400 R_MAX_TOO_LARGE. A trajectory without a cell is 400 MISSING_LATTICE.",
  input: z.object({
    ...common,
    selection_a: Selection.optional(),
    selection_b: Selection.optional().describe("defaults to selection_a"),
    r_max_ang: z.number().positive().optional(),
    n_bins: z.number().int().min(1).optional().describe(`histogram bins (default 200, at most ${MD_LIMITS.maxBins})`),
  }),
  output: z.object({
    ...FrameInfo,
    r_max_ang: z.number(),
    n_bins: z.number().int(),
    r: z.array(z.number()).describe("bin centres, Å"),
    g: z.array(z.number()),
    coordination_number: z.array(z.number()).describe("mean number of B atoms within the bin's outer edge of an A atom"),
    first_peak: z.object({ r: z.number(), g: z.number(), coordination_number: z.number() }),
    n_a: z.number().int(),
    n_b: z.number().int(),
    density_b_per_ang3: z.number(),
  }),
  errors: [
    ...commonErrors,
    { status: 400, code: "MISSING_LATTICE", when: "the trajectory has no periodic cell" },
    { status: 400, code: "R_MAX_TOO_LARGE", when: "r_max_ang is beyond half the smallest perpendicular cell width" },
    { status: 400, code: "TOO_MANY_BINS", when: `n_bins above ${MD_LIMITS.maxBins}` },
  ],
  mcp: "svc_rdf",
  assistant: { name: "md_rdf", description: "Radial distribution function of a trajectory file", replacesStructure: false },
  // CPU work: in the compute pool (worker threads, deadline), never on the event loop.
  handler: (input, ctx) => inPool(ctx, "rdf", input),
});

export const rmsdOp = defineOperation({
  id: "md_rmsd",
  method: "POST",
  path: "/api/md/rmsd",
  tag: "md",
  summary: "RMSD of each frame against a reference frame, periodic jumps undone, optionally after an optimal fit",
  description:
    "Atoms are unwrapped frame to frame by the minimum image (MDAnalysis NoJump). With fit (default: only for trajectories without a cell, i.e. molecules) both frames are centred and optimally rotated (Kabsch, equal to mdtraj.rmsd); without it, the plain root-mean-square displacement.",
  input: z.object({
    ...common,
    selection: Selection.optional(),
    reference_frame: z.number().int().min(0).optional().describe("frame index in the file (default 0)"),
    fit: z.boolean().optional().describe("centre and rotate onto the reference; default true for molecules, false in a cell"),
    unwrap: z.boolean().optional().describe("undo periodic jumps (default true)"),
  }),
  output: z.object({
    ...FrameInfo,
    rmsd_ang: z.array(z.number()),
    reference_frame: z.number().int(),
    fit: z.boolean(),
    unwrapped: z.boolean(),
    n_selected: z.number().int(),
  }),
  errors: [...commonErrors, { status: 400, code: "INVALID_REFERENCE", when: "reference_frame is out of range" }],
  mcp: "svc_rmsd",
  assistant: { name: "md_rmsd", description: "RMSD over time of a trajectory file", replacesStructure: false },
  // CPU work: in the compute pool (worker threads, deadline), never on the event loop.
  handler: (input, ctx) => inPool(ctx, "rmsd", input),
});

export const hbondsOp = defineOperation({
  id: "md_hbonds",
  method: "POST",
  path: "/api/md/hbonds",
  tag: "md",
  summary: "Hydrogen bonds per frame (donor–acceptor 3.0 Å, D–H–A ≥ 150°, as MDAnalysis HydrogenBondAnalysis)",
  description:
    "Donor–hydrogen pairs are the pairs within d_h_cutoff_ang, found again in each frame (MDAnalysis update_selections=True); a bond needs 1 Å < D–A ≤ d_a_cutoff_ang and angle D–H–A ≥ angle_cutoff_deg. Minimum image in any cell. Default donors and acceptors: N, O, F; hydrogens: H.",
  input: z.object({
    ...common,
    donors: Selection.optional(),
    hydrogens: Selection.optional(),
    acceptors: Selection.optional(),
    d_a_cutoff_ang: z.number().positive().max(6).optional(),
    d_h_cutoff_ang: z.number().positive().max(3).optional(),
    angle_cutoff_deg: z.number().min(0).max(180).optional(),
    max_listed: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(`bonds listed (counts are complete), at most ${MD_LIMITS.maxListedHbonds}`),
  }),
  output: z.object({
    ...FrameInfo,
    counts: z.array(z.number().int()),
    mean_count: z.number(),
    bonds: z.array(
      z.object({
        frame: z.number().int(),
        donor: z.number().int(),
        hydrogen: z.number().int(),
        acceptor: z.number().int(),
        distance_ang: z.number(),
        angle_deg: z.number(),
      }),
    ),
    truncated: z.boolean(),
    n_donor_hydrogen_pairs: z.number().int(),
  }),
  errors: commonErrors,
  mcp: "svc_hbonds",
  assistant: { name: "md_hbonds", description: "Hydrogen bonds per frame of a trajectory file", replacesStructure: false },
  // CPU work: in the compute pool (worker threads, deadline), never on the event loop.
  handler: (input, ctx) => inPool(ctx, "hbonds", input),
});

const METHODS = ["agglomerative", "dbscan", "kmeans", "hdbscan"] as const;

export const clusteringInput = z.object({
  ...common,
  selection: Selection.optional(),
  method: z.enum(METHODS).optional().describe("agglomerative (default), dbscan, kmeans or hdbscan"),
  n_clusters: z.number().int().min(1).optional().describe("agglomerative and kmeans (default 3)"),
  linkage: z.enum(["single", "complete", "average", "ward"]).optional(),
  distance_threshold_ang: z.number().positive().optional().describe("agglomerative: cut at this RMSD instead of n_clusters"),
  eps_ang: z.number().positive().optional().describe("dbscan neighbourhood radius, Å RMSD (default 1.0)"),
  min_samples: z.number().int().min(1).optional().describe("dbscan (default 5); hdbscan (default min_cluster_size)"),
  min_cluster_size: z
    .number()
    .int()
    .min(2)
    .optional()
    .describe("hdbscan: smallest cluster, frames (default 5, at most the frames)"),
  cluster_selection_epsilon_ang: z
    .number()
    .min(0)
    .optional()
    .describe("hdbscan: clusters closer than this RMSD are merged (default 0)"),
  allow_single_cluster: z.boolean().optional().describe("hdbscan: allow one cluster for all frames (default false)"),
  fit: z.boolean().optional(),
  seed: z.number().int().optional().describe("kmeans seed (default 0)"),
});

/**
 * HDBSCAN: the RMSD matrix is built in the compute pool as for the other methods, scikit-learn's
 * `HDBSCAN(metric="precomputed")` labels it in the warm analysis worker (no maintained JavaScript
 * HDBSCAN exists), and the pool adds the medoids and the embedding.
 */
const hdbscanClustering = async (input: z.output<typeof clusteringInput>, ctx: ServiceContext): Promise<never> => {
  type Stage = { info: unknown; frames: number[]; F: number; fit: boolean; distance: string };
  const stage = (await inPool(ctx, "hdbscan_distances", input)) as Stage;
  const { labels } = await runAnalysis<{ labels: number[] }>(
    ctx,
    "md_hdbscan",
    {},
    {
      distance: stage.distance,
      n_frames: stage.F,
      min_cluster_size: input.min_cluster_size ?? 5,
      ...(input.min_samples !== undefined ? { min_samples: input.min_samples } : {}),
      cluster_selection_epsilon: input.cluster_selection_epsilon_ang ?? 0,
      allow_single_cluster: input.allow_single_cluster ?? false,
    },
  );
  return inPool(ctx, "hdbscan_result", { ...stage, labels });
};

export const clusteringOp = defineOperation({
  id: "md_clustering",
  method: "POST",
  path: "/api/md/clustering",
  tag: "md",
  summary: "Cluster trajectory frames by RMSD (agglomerative by default, DBSCAN, k-means), with a 2D embedding and medoid frames",
  description: `Frames are compared by pairwise RMSD of the selection (fitted for molecules, on unwrapped coordinates in a cell). agglomerative: scipy linkage (average by default) cut into n_clusters or at distance_threshold_ang; dbscan: scikit-learn DBSCAN on the RMSD matrix (eps_ang, min_samples; label -1 is noise); kmeans: scikit-learn KMeans on the coordinates. More than ${MD_LIMITS.maxClusterFrames} frames is 400 TOO_MANY_FRAMES: give frames_range.step. hdbscan: scikit-learn HDBSCAN on the same RMSD matrix (min_cluster_size, min_samples, cluster_selection_epsilon_ang; label -1 is noise), run in the analysis worker.`,
  input: clusteringInput,
  output: z.object({
    ...FrameInfo,
    method: z.string(),
    labels: z.array(z.number().int()).describe("cluster of each analysed frame (-1: noise)"),
    n_clusters: z.number().int(),
    clusters: z.array(z.object({ cluster: z.number().int(), size: z.number().int(), medoid_frame: z.number().int() })),
    embedding: z.array(z.array(z.number())).describe("2D classical MDS of the RMSD matrix, one point per frame"),
    metric: z.literal("rmsd_ang"),
    fit: z.boolean(),
  }),
  errors: [
    ...commonErrors,
    { status: 400, code: "INVALID_N_CLUSTERS", when: "n_clusters exceeds the frames" },
    { status: 400, code: "INVALID_CLUSTER_PARAMETERS", when: "hdbscan: min_cluster_size or min_samples exceeds the frames" },
    { status: 503, code: "ANALYSIS_UNAVAILABLE", when: "hdbscan: scikit-learn is not installed in the analysis worker" },
    { status: 504, code: "DEADLINE_EXCEEDED", when: "hdbscan: the analysis worker took longer than its deadline" },
  ],
  mcp: "svc_clustering",
  assistant: { name: "md_clustering", description: "Cluster the frames of a trajectory file", replacesStructure: false },
  // CPU work: in the compute pool (worker threads, deadline), never on the event loop.
  handler: (input, ctx) => (input.method === "hdbscan" ? hdbscanClustering(input, ctx) : inPool(ctx, "clustering", input)),
});

export const mdOps = [rdfOp, rmsdOp, hbondsOp, clusteringOp];
