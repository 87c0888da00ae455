/**
 * The four trajectory analyses behind `/api/md/*` (operations/md.ts declares their schemas). They
 * run in the compute pool's worker threads (compute/tasks.ts), never on the event loop: each is
 * a pure function from the validated request to the response, over the core's typed arrays.
 */
import {
  centreFrames,
  cutLinkage,
  dbscan,
  embed2d,
  fail,
  frameIndices,
  hydrogenBonds,
  kmeans,
  type Linkage,
  linkageMatrix,
  medoids,
  pairwiseRmsd,
  rdf,
  rmsdSeries,
  selectAtoms,
  unwrappedCoordinates,
} from "atomstudio-core";
import type { z } from "zod";
import type { clusteringInput, hbondsOp, rdfOp, rmsdOp } from "../operations/md.ts";
import { loadTrajectory, MD_LIMITS } from "./files.ts";

/** Donor and acceptor elements when the request names none (MDAnalysis's usual N, O, F). */
const DEFAULT_DA = ["N", "O", "F"];

export interface Common {
  trajectory?: { content: string; filename?: string | undefined; encoding?: "text" | "base64" | undefined } | undefined;
  frames?: Record<string, unknown>[] | undefined;
  format?: string | undefined;
  lammps_types?: Record<string, string> | undefined;
  frames_range?: { start?: number | undefined; stop?: number | undefined; step?: number | undefined } | undefined;
  timestep_ps?: number | undefined;
}

export const prepare = (input: Common) => {
  const { trajectory, format } = loadTrajectory(input);
  const frames = frameIndices(trajectory.nFrames, input.frames_range ?? {});
  const times = trajectory.times
    ? frames.map((f) => trajectory.times?.[f] as number)
    : input.timestep_ps !== undefined
      ? frames.map((f) => f * (input.timestep_ps as number))
      : null;
  const info = { format, n_atoms: trajectory.nAtoms, n_frames_total: trajectory.nFrames, frames, time_ps: times };
  return { trajectory, frames, info };
};

const round = (a: ArrayLike<number>, digits = 10): number[] => Array.from(a, (v) => Number(v.toFixed(digits)));

/** The frame list as a range again when it is one (it always is: frameIndices makes a range). */
const rangeOf = (frames: number[]) => {
  const start = frames[0] as number;
  const step = frames.length > 1 ? (frames[1] as number) - start : 1;
  return { start, stop: (frames[frames.length - 1] as number) + 1, step };
};

const rdfAnalysis = (input: z.output<(typeof rdfOp)["input"]>) => {
  const nBins = input.n_bins ?? 200;
  if (nBins > MD_LIMITS.maxBins)
    fail("TOO_MANY_BINS", `n_bins ${nBins} is above ${MD_LIMITS.maxBins}`, { max_bins: MD_LIMITS.maxBins });
  const { trajectory, frames, info } = prepare(input);
  const a = selectAtoms(trajectory, input.selection_a, "selection_a");
  const b = input.selection_b ? selectAtoms(trajectory, input.selection_b, "selection_b") : a;
  const res = rdf(trajectory.select(rangeOf(frames)), {
    a,
    b,
    ...(input.r_max_ang !== undefined ? { rMax: input.r_max_ang } : {}),
    nBins,
  });
  const peak = res.g.indexOf(Math.max(...res.g));
  return {
    ...info,
    r_max_ang: res.rMax,
    n_bins: nBins,
    r: round(res.r),
    g: round(res.g),
    coordination_number: round(res.cn),
    first_peak: { r: res.r[peak] as number, g: res.g[peak] as number, coordination_number: res.cn[peak] as number },
    n_a: a.length,
    n_b: b.length,
    density_b_per_ang3: res.densityB,
  };
};

const rmsdAnalysis = (input: z.output<(typeof rmsdOp)["input"]>) => {
  const { trajectory, frames, info } = prepare(input);
  const atoms = selectAtoms(trajectory, input.selection);
  const fit = input.fit ?? !trajectory.hasCell;
  const unwrap = (input.unwrap ?? true) && trajectory.hasCell;
  const reference = input.reference_frame ?? 0;
  const rmsd = rmsdSeries(trajectory, { atoms, frames, reference, fit, unwrap });
  return { ...info, rmsd_ang: round(rmsd), reference_frame: reference, fit, unwrapped: unwrap, n_selected: atoms.length };
};

const hbondsAnalysis = (input: z.output<(typeof hbondsOp)["input"]>) => {
  const { trajectory, frames, info } = prepare(input);
  const donors = selectAtoms(trajectory, input.donors ?? { elements: DEFAULT_DA }, "donors");
  const hydrogens = selectAtoms(trajectory, input.hydrogens ?? { elements: ["H"] }, "hydrogens");
  const acceptors = selectAtoms(trajectory, input.acceptors ?? { elements: DEFAULT_DA }, "acceptors");
  const res = hydrogenBonds(trajectory, {
    donors,
    hydrogens,
    acceptors,
    frames,
    ...(input.d_a_cutoff_ang !== undefined ? { daCutoff: input.d_a_cutoff_ang } : {}),
    ...(input.d_h_cutoff_ang !== undefined ? { dhCutoff: input.d_h_cutoff_ang } : {}),
    ...(input.angle_cutoff_deg !== undefined ? { angleCutoff: input.angle_cutoff_deg } : {}),
    maxListed: Math.min(input.max_listed ?? 1000, MD_LIMITS.maxListedHbonds),
  });
  const bonds = [];
  for (let k = 0; k < res.distances.length; k++)
    bonds.push({
      frame: res.bonds[4 * k] as number,
      donor: res.bonds[4 * k + 1] as number,
      hydrogen: res.bonds[4 * k + 2] as number,
      acceptor: res.bonds[4 * k + 3] as number,
      distance_ang: Number((res.distances[k] as number).toFixed(6)),
      angle_deg: Number((res.angles[k] as number).toFixed(4)),
    });
  const counts = Array.from(res.counts);
  return {
    ...info,
    counts,
    mean_count: counts.reduce((a, b) => a + b, 0) / counts.length,
    bonds,
    truncated: res.truncated,
    n_donor_hydrogen_pairs: res.pairs.length / 2,
  };
};

type ClusteringInput = z.output<typeof clusteringInput>;

/** The first half of a clustering: the frames' pairwise RMSD matrix (and the vectors k-means needs). */
const clusteringFeatures = (input: ClusteringInput) => {
  const { trajectory, frames, info } = prepare(input);
  const F = frames.length;
  if (F > MD_LIMITS.maxClusterFrames)
    fail(
      "TOO_MANY_FRAMES",
      `Clustering compares every pair of frames; ${F} frames is above ${MD_LIMITS.maxClusterFrames}: give frames_range.step (a stride of ${Math.ceil(F / MD_LIMITS.maxClusterFrames)} fits)`,
      { n_frames: F, max_frames: MD_LIMITS.maxClusterFrames, stride: Math.ceil(F / MD_LIMITS.maxClusterFrames) },
    );
  const atoms = selectAtoms(trajectory, input.selection);
  if ((F * F * atoms.length) / 2 > MD_LIMITS.maxClusterWork)
    fail(
      "TOO_MANY_FRAMES",
      `${F} frames × ${atoms.length} atoms is too much pairwise work; use a stride or a smaller selection`,
      {
        n_frames: F,
        n_atoms: atoms.length,
      },
    );
  const fit = input.fit ?? !trajectory.hasCell;
  const n = atoms.length;
  const xyz = unwrappedCoordinates(trajectory, atoms, frames, trajectory.hasCell);
  if (fit) centreFrames(xyz, n);
  const dist = pairwiseRmsd(xyz, n, fit);
  return { info, frames, F, fit, xyz, dist };
};

/** The second half: each cluster's medoid, the 2D embedding and the response, for any labels. */
const clusteringResult = (r: {
  info: ReturnType<typeof prepare>["info"];
  frames: number[];
  F: number;
  fit: boolean;
  dist: Float64Array;
  labels: Int32Array;
  method: string;
}) => {
  const { frames, F, dist, labels } = r;
  const med = medoids(dist, F, labels);
  const emb = embed2d(dist, F);
  return {
    ...r.info,
    method: r.method,
    labels: Array.from(labels),
    n_clusters: med.length,
    clusters: med.map((m, c) => ({
      cluster: c,
      size: labels.filter((l) => l === c).length,
      medoid_frame: frames[m] as number,
    })),
    embedding: Array.from({ length: F }, (_, i) => [
      Number((emb[2 * i] as number).toFixed(6)),
      Number((emb[2 * i + 1] as number).toFixed(6)),
    ]),
    metric: "rmsd_ang" as const,
    fit: r.fit,
  };
};

/** Bounds of HDBSCAN's parameters (scikit-learn's), checked before any work with a coded 400. */
export const checkHdbscanParameters = (input: ClusteringInput, F: number): void => {
  const mcs = input.min_cluster_size ?? 5;
  if (mcs > F)
    fail("INVALID_CLUSTER_PARAMETERS", `min_cluster_size ${mcs} exceeds the ${F} frames`, { min_cluster_size: mcs, n_frames: F });
  if (input.min_samples !== undefined && input.min_samples > F)
    fail("INVALID_CLUSTER_PARAMETERS", `min_samples ${input.min_samples} exceeds the ${F} frames`, {
      min_samples: input.min_samples,
      n_frames: F,
    });
};

/**
 * HDBSCAN, stage one (in the pool): the RMSD matrix as little-endian float64 bytes in base64,
 * for scikit-learn in the analysis worker (operations/md.ts sends it there).
 */
const hdbscanDistances = (input: ClusteringInput) => {
  const { info, frames, F, fit, dist } = clusteringFeatures(input);
  checkHdbscanParameters(input, F);
  const bytes = new Uint8Array(dist.buffer, dist.byteOffset, dist.byteLength);
  return { info, frames, F, fit, distance: Buffer.from(bytes).toString("base64") };
};

/** HDBSCAN, stage two (in the pool): scikit-learn's labels with the medoids and the embedding. */
const hdbscanResult = (r: {
  info: ReturnType<typeof prepare>["info"];
  frames: number[];
  F: number;
  fit: boolean;
  distance: string;
  labels: number[];
}) => {
  const raw = Buffer.from(r.distance, "base64");
  const dist = new Float64Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  return clusteringResult({ ...r, dist, labels: Int32Array.from(r.labels), method: "hdbscan" });
};

const clusteringAnalysis = (input: ClusteringInput) => {
  const method = input.method ?? "agglomerative";
  if (method === "hdbscan") fail("INVALID_CLUSTER_PARAMETERS", "hdbscan runs in the analysis worker, not here");
  const features = clusteringFeatures(input);
  const { F, xyz, dist } = features;
  const k = input.n_clusters ?? Math.min(3, F);
  if ((method === "agglomerative" || method === "kmeans") && k > F)
    fail("INVALID_N_CLUSTERS", `n_clusters ${k} exceeds the ${F} frames`, { n_clusters: k, n_frames: F });
  let labels: Int32Array;
  if (method === "dbscan") labels = dbscan(dist, F, input.eps_ang ?? 1.0, input.min_samples ?? 5);
  else if (method === "kmeans") labels = kmeans(xyz, F, k, { seed: input.seed ?? 0 }).labels;
  else {
    const Z = linkageMatrix(dist, F, (input.linkage ?? "average") as Linkage);
    labels = cutLinkage(Z, F, input.distance_threshold_ang !== undefined ? { threshold: input.distance_threshold_ang } : { k });
  }
  return clusteringResult({ ...features, labels, method });
};

/** The analyses by name, for the compute pool's `md` task. */
export const mdAnalyses = {
  rdf: rdfAnalysis,
  rmsd: rmsdAnalysis,
  hbonds: hbondsAnalysis,
  clustering: clusteringAnalysis,
  hdbscan_distances: hdbscanDistances,
  hdbscan_result: hdbscanResult,
};
export type MdAnalysis = keyof typeof mdAnalyses;
