/**
 * Radial distribution function between two atom groups, averaged over frames, with the same
 * histogram and normalisation as MDAnalysis's `InterRDF` (pairs of one atom with itself are left
 * out, as `exclusion_block=(1, 1)` does for identical groups): g(r) = counts / (F · N_pairs/⟨V⟩ ·
 * 4/3π(r₂³ − r₁³)). The running coordination number is the average count of B atoms within r of
 * an A atom. Minimum image in any cell; r_max at most half the smallest cell width.
 */
import { AtomStudioError, fail } from "../errors.ts";
import { cellGeometry, forEachPairWithin } from "../geometry/neighbors.ts";
import type { Trajectory } from "../trajectory/trajectory.ts";

export interface RdfOptions {
  /** Atom indices of the two groups. */
  a: Int32Array;
  b: Int32Array;
  rMax?: number;
  nBins?: number;
}

export interface RdfResult {
  /** Bin centres, Å. */
  r: Float64Array;
  edges: Float64Array;
  g: Float64Array;
  /** Running coordination number at each bin's outer edge. */
  cn: Float64Array;
  counts: Float64Array;
  rMax: number;
  nFrames: number;
  /** Number density of group B, Å⁻³ (mean over frames). */
  densityB: number;
}

export const DEFAULT_RDF_BINS = 200;

/** The largest allowed r_max for this trajectory: half the smallest perpendicular width over frames. */
export const rdfRMaxLimit = (traj: Trajectory): number => {
  if (!traj.cells) return Number.POSITIVE_INFINITY;
  let w = Number.POSITIVE_INFINITY;
  const nCells = traj.cells.length / 9;
  for (let f = 0; f < nCells; f++) w = Math.min(w, ...cellGeometry(traj.cells.subarray(9 * f, 9 * f + 9)).widths);
  return w / 2;
};

export const rdf = (traj: Trajectory, opts: RdfOptions): RdfResult => {
  if (!traj.cells || !traj.pbc.every(Boolean))
    fail("MISSING_LATTICE", "An RDF needs a periodic cell (the number density is per cell volume); this trajectory has none");
  const limit = rdfRMaxLimit(traj);
  const rMax = opts.rMax ?? Math.min(10, limit);
  if (!(rMax > 0)) fail("INVALID_R_MAX", `r_max must be positive, not ${rMax}`);
  if (rMax > limit + 1e-9)
    throw new AtomStudioError(
      "R_MAX_TOO_LARGE",
      `r_max ${rMax} Å is beyond half the smallest cell width (${limit.toFixed(4)} Å), where the minimum image stops being unique`,
      { r_max_ang: rMax, max_r_max_ang: limit },
    );
  const nBins = opts.nBins ?? DEFAULT_RDF_BINS;
  const counts = new Float64Array(nBins);
  const scale = nBins / rMax;
  let volume = 0;
  const visit = (_i: number, _j: number, _x: number, _y: number, _z: number, r2: number): void => {
    const k = Math.floor(Math.sqrt(r2) * scale);
    counts[k < nBins ? k : nBins - 1] = (counts[k < nBins ? k : nBins - 1] as number) + 1;
  };
  for (let f = 0; f < traj.nFrames; f++) {
    const cell = traj.cell(f) as Float64Array;
    volume += cellGeometry(cell).volume;
    forEachPairWithin(traj.frameCoords(f), cell, rMax, opts.a, opts.b, visit);
  }
  const F = traj.nFrames;
  const meanVolume = volume / F;
  const inB = new Uint8Array(traj.nAtoms);
  for (const j of opts.b) inB[j] = 1;
  let common = 0;
  for (const i of opts.a) common += inB[i] as number;
  const nPairs = opts.a.length * opts.b.length - common;
  const edges = Float64Array.from({ length: nBins + 1 }, (_, k) => (k * rMax) / nBins);
  const r = Float64Array.from({ length: nBins }, (_, k) => ((edges[k] as number) + (edges[k + 1] as number)) / 2);
  const g = new Float64Array(nBins);
  const cn = new Float64Array(nBins);
  let run = 0;
  for (let k = 0; k < nBins; k++) {
    const shell = (4 / 3) * Math.PI * ((edges[k + 1] as number) ** 3 - (edges[k] as number) ** 3);
    g[k] = nPairs > 0 ? (counts[k] as number) / (F * shell * (nPairs / meanVolume)) : 0;
    run += counts[k] as number;
    cn[k] = run / (F * opts.a.length);
  }
  return { r, edges, g, cn, counts, rMax, nFrames: F, densityB: opts.b.length / meanVolume };
};
