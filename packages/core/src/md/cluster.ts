/**
 * Clustering of trajectory frames. Frames are compared by their pairwise RMSD (fitted for
 * molecules, plain on unwrapped coordinates in a cell); agglomerative clustering and DBSCAN work
 * on that distance matrix (as scipy's `linkage`/`fcluster` and scikit-learn's DBSCAN with
 * `metric="precomputed"`), k-means on the coordinate vectors (Lloyd's iterations from k-means++
 * seeds, best of several starts, as scikit-learn's `KMeans`). A 2D embedding (classical MDS of
 * the distance matrix) and each cluster's medoid frame come with every result.
 */
import { fail } from "../errors.ts";
import { fittedRmsd, plainRmsd } from "./rmsd.ts";

/** Condensed-free full F×F matrix of RMSDs between frames of xyz (F×n×3, centred when `fit`). */
export const pairwiseRmsd = (xyz: Float64Array, n: number, fit: boolean): Float64Array => {
  const F = xyz.length / (3 * n);
  const d = new Float64Array(F * F);
  for (let i = 0; i < F; i++)
    for (let j = i + 1; j < F; j++) {
      const v = fit ? fittedRmsd(xyz, 3 * n * i, xyz, 3 * n * j, n) : plainRmsd(xyz, 3 * n * i, xyz, 3 * n * j, n);
      d[i * F + j] = v;
      d[j * F + i] = v;
    }
  return d;
};

export type Linkage = "single" | "complete" | "average" | "ward";

/**
 * Agglomerative clustering by the nearest-neighbour chain (exact for these four reducible
 * linkages, O(F²) memory and time per merge chain), Lance–Williams updates on a copy of `dist`.
 * Returns the merges in order of height, scipy's `linkage` rows [a, b, height, size].
 */
export const linkageMatrix = (dist: Float64Array, F: number, method: Linkage): Float64Array => {
  const d = Float64Array.from(dist);
  if (method === "ward") for (let k = 0; k < d.length; k++) d[k] = (d[k] as number) ** 2;
  const size = new Float64Array(F).fill(1);
  const active = new Uint8Array(F).fill(1);
  const label = Int32Array.from({ length: F }, (_, i) => i); // scipy cluster id of each slot
  const merges: [number, number, number, number][] = [];
  const chain: number[] = [];
  let nextId = F;
  for (let step = 0; step < F - 1; step++) {
    if (chain.length === 0) chain.push(active.indexOf(1));
    let x = 0;
    let y = 0;
    let best = 0;
    for (;;) {
      x = chain[chain.length - 1] as number;
      const prev = chain.length > 1 ? (chain[chain.length - 2] as number) : -1;
      best = Number.POSITIVE_INFINITY;
      y = -1;
      if (prev >= 0) {
        best = d[x * F + prev] as number;
        y = prev;
      }
      for (let i = 0; i < F; i++) {
        if (!active[i] || i === x) continue;
        const v = d[x * F + i] as number;
        if (v < best) {
          best = v;
          y = i;
        }
      }
      if (y === prev) break;
      chain.push(y);
    }
    chain.pop();
    chain.pop();
    // Merge y into x.
    const nx = size[x] as number;
    const ny = size[y] as number;
    for (let i = 0; i < F; i++) {
      if (!active[i] || i === x || i === y) continue;
      const dxi = d[x * F + i] as number;
      const dyi = d[y * F + i] as number;
      let v: number;
      if (method === "single") v = Math.min(dxi, dyi);
      else if (method === "complete") v = Math.max(dxi, dyi);
      else if (method === "average") v = (nx * dxi + ny * dyi) / (nx + ny);
      else {
        const ni = size[i] as number;
        v = ((nx + ni) * dxi + (ny + ni) * dyi - ni * best) / (nx + ny + ni);
      }
      d[x * F + i] = v;
      d[i * F + x] = v;
    }
    active[y] = 0;
    size[x] = nx + ny;
    const [a, b] = [label[x] as number, label[y] as number].sort((p, q) => p - q) as [number, number];
    merges.push([a, b, method === "ward" ? Math.sqrt(Math.max(0, best)) : best, nx + ny]);
    label[x] = nextId++;
  }
  // scipy sorts the merges by height (stable) and relabels.
  const order = merges.map((_, k) => k).sort((p, q) => (merges[p] as number[])[2]! - (merges[q] as number[])[2]! || p - q);
  const out = new Float64Array(4 * merges.length);
  const rename = new Map<number, number>();
  order.forEach((k, pos) => {
    const [a, b, h, s] = merges[k] as [number, number, number, number];
    const ra = a < F ? a : (rename.get(a) as number);
    const rb = b < F ? b : (rename.get(b) as number);
    out.set([Math.min(ra, rb), Math.max(ra, rb), h, s], 4 * pos);
    rename.set(F + k, F + pos);
  });
  return out;
};

/** Flat clusters from a linkage: the first F − k merges (scipy `fcluster(..., k, "maxclust")`) or those below a height. */
export const cutLinkage = (Z: Float64Array, F: number, by: { k?: number; threshold?: number }): Int32Array => {
  const parent = Int32Array.from({ length: 2 * F }, (_, i) => i);
  const find = (i: number): number => {
    let r = i;
    while (parent[r] !== r) r = parent[r] as number;
    let c = i;
    while (parent[c] !== r) {
      const next = parent[c] as number;
      parent[c] = r;
      c = next;
    }
    return r;
  };
  const m = Z.length / 4;
  let apply = 0;
  if (by.k !== undefined) apply = Math.max(0, F - by.k);
  else {
    // fcluster "distance": merges at height ≤ threshold join.
    while (apply < m && (Z[4 * apply + 2] as number) <= (by.threshold as number)) apply++;
  }
  for (let s = 0; s < Math.min(apply, m); s++) {
    const a = find(Z[4 * s] as number);
    const b = find(Z[4 * s + 1] as number);
    parent[a] = F + s;
    parent[b] = F + s;
  }
  return relabel(Int32Array.from({ length: F }, (_, i) => find(i)));
};

/** Labels 0, 1, … in order of first appearance; negative labels (noise) stay −1. */
export const relabel = (raw: Int32Array): Int32Array => {
  const map = new Map<number, number>();
  return raw.map((v) => {
    if (v < 0) return -1;
    let l = map.get(v);
    if (l === undefined) {
      l = map.size;
      map.set(v, l);
    }
    return l;
  });
};

/** DBSCAN on a precomputed distance matrix (scikit-learn's: neighbourhoods include the point, `≤ eps`). */
export const dbscan = (dist: Float64Array, F: number, eps: number, minSamples: number): Int32Array => {
  const neighbours: Int32Array[] = [];
  for (let i = 0; i < F; i++) {
    const list: number[] = [];
    for (let j = 0; j < F; j++) if ((dist[i * F + j] as number) <= eps) list.push(j);
    neighbours.push(Int32Array.from(list));
  }
  const core = neighbours.map((l) => l.length >= minSamples);
  const labels = new Int32Array(F).fill(-1);
  let next = 0;
  for (let i = 0; i < F; i++) {
    if (labels[i] !== -1 || !core[i]) continue;
    const stack = [i];
    labels[i] = next;
    while (stack.length) {
      const p = stack.pop() as number;
      if (!core[p]) continue;
      for (const q of neighbours[p] as Int32Array) {
        if (labels[q] !== -1) continue;
        labels[q] = next;
        if (core[q]) stack.push(q);
      }
    }
    next++;
  }
  return labels;
};

/** A small deterministic PRNG (mulberry32), so results repeat for a seed. */
const rng = (seed: number) => {
  let a = seed >>> 0;
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

/** k-means on F points of dimension D (rows of x): best inertia of `nInit` k-means++ starts. */
export const kmeans = (
  x: Float64Array,
  F: number,
  k: number,
  opts: { nInit?: number; maxIter?: number; seed?: number } = {},
): { labels: Int32Array; inertia: number } => {
  const D = x.length / F;
  if (k > F) fail("INVALID_N_CLUSTERS", `n_clusters ${k} is more than the ${F} frames`);
  const random = rng(opts.seed ?? 0);
  const sq = (i: number, c: Float64Array, ci: number): number => {
    let s = 0;
    for (let d = 0; d < D; d++) {
      const v = (x[i * D + d] as number) - (c[ci * D + d] as number);
      s += v * v;
    }
    return s;
  };
  let best: { labels: Int32Array; inertia: number } | null = null;
  for (let run = 0; run < (opts.nInit ?? 10); run++) {
    const centres = new Float64Array(k * D);
    const first = Math.floor(random() * F);
    centres.set(x.subarray(first * D, first * D + D), 0);
    const dmin = new Float64Array(F).fill(Number.POSITIVE_INFINITY);
    for (let c = 1; c < k; c++) {
      let total = 0;
      for (let i = 0; i < F; i++) {
        dmin[i] = Math.min(dmin[i] as number, sq(i, centres, c - 1));
        total += dmin[i] as number;
      }
      let r = random() * total;
      let pick = F - 1;
      for (let i = 0; i < F; i++) {
        r -= dmin[i] as number;
        if (r <= 0) {
          pick = i;
          break;
        }
      }
      centres.set(x.subarray(pick * D, pick * D + D), c * D);
    }
    const labels = new Int32Array(F);
    let inertia = 0;
    for (let it = 0; it < (opts.maxIter ?? 300); it++) {
      let changed = it === 0;
      inertia = 0;
      for (let i = 0; i < F; i++) {
        let bi = 0;
        let bd = Number.POSITIVE_INFINITY;
        for (let c = 0; c < k; c++) {
          const v = sq(i, centres, c);
          if (v < bd) {
            bd = v;
            bi = c;
          }
        }
        if (labels[i] !== bi) changed = true;
        labels[i] = bi;
        inertia += bd;
      }
      if (!changed) break;
      const counts = new Float64Array(k);
      centres.fill(0);
      for (let i = 0; i < F; i++) {
        const c = labels[i] as number;
        counts[c] = (counts[c] as number) + 1;
        for (let d = 0; d < D; d++) centres[c * D + d] = (centres[c * D + d] as number) + (x[i * D + d] as number);
      }
      for (let c = 0; c < k; c++)
        if ((counts[c] as number) > 0)
          for (let d = 0; d < D; d++) centres[c * D + d] = (centres[c * D + d] as number) / (counts[c] as number);
    }
    if (!best || inertia < best.inertia) best = { labels: relabel(labels), inertia };
  }
  return best as { labels: Int32Array; inertia: number };
};

/** Frame of each cluster with the smallest summed distance to its cluster mates. */
export const medoids = (dist: Float64Array, F: number, labels: Int32Array): number[] => {
  const nClusters = Math.max(-1, ...labels) + 1;
  const out: number[] = [];
  for (let c = 0; c < nClusters; c++) {
    let best = -1;
    let bestSum = Number.POSITIVE_INFINITY;
    for (let i = 0; i < F; i++) {
      if (labels[i] !== c) continue;
      let s = 0;
      for (let j = 0; j < F; j++) if (labels[j] === c) s += dist[i * F + j] as number;
      if (s < bestSum) {
        bestSum = s;
        best = i;
      }
    }
    out.push(best);
  }
  return out;
};

/** Classical multidimensional scaling to 2D: the top two eigenvectors of the double-centred squared distances. */
export const embed2d = (dist: Float64Array, F: number): Float64Array => {
  const b = new Float64Array(F * F);
  const rowMean = new Float64Array(F);
  let all = 0;
  for (let i = 0; i < F; i++)
    for (let j = 0; j < F; j++) {
      const v = (dist[i * F + j] as number) ** 2;
      b[i * F + j] = v;
      rowMean[i] = (rowMean[i] as number) + v / F;
      all += v / (F * F);
    }
  for (let i = 0; i < F; i++)
    for (let j = 0; j < F; j++)
      b[i * F + j] = -0.5 * ((b[i * F + j] as number) - (rowMean[i] as number) - (rowMean[j] as number) + all);
  const out = new Float64Array(2 * F);
  const random = rng(1);
  const found: Float64Array[] = [];
  for (let comp = 0; comp < 2 && F > 1; comp++) {
    let v = Float64Array.from({ length: F }, () => random() - 0.5);
    let lambda = 0;
    for (let it = 0; it < 100; it++) {
      const w = new Float64Array(F);
      for (let i = 0; i < F; i++) {
        let s = 0;
        for (let j = 0; j < F; j++) s += (b[i * F + j] as number) * (v[j] as number);
        w[i] = s;
      }
      for (const u of found) {
        let p = 0;
        for (let i = 0; i < F; i++) p += (w[i] as number) * (u[i] as number);
        for (let i = 0; i < F; i++) w[i] = (w[i] as number) - p * (u[i] as number);
      }
      const nrm = Math.hypot(...w);
      if (nrm < 1e-300) break;
      const next = w.map((x) => x / nrm);
      const diff = Math.hypot(...next.map((x, i) => x - (v[i] as number)));
      v = next;
      lambda = nrm;
      if (diff < 1e-10) break;
    }
    found.push(v);
    const s = Math.sqrt(Math.max(0, lambda));
    for (let i = 0; i < F; i++) out[2 * i + comp] = (v[i] as number) * s;
  }
  return out;
};
