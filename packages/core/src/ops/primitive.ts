/**
 * Primitive cell search with the semantics of pymatgen's `Structure.get_primitive_structure`
 * (with `reduce=False`, as `SlabGenerator` calls it): candidate sublattices are the Hermite
 * normal forms of the number of formula units, tried in pymatgen's order, each checked by
 * grouping sites that coincide within `tolerance` Angstrom; the first that maps every site onto
 * an equivalent one wins and the search recurses on it. An optional constraint on lattice
 * parameters rejects primitive cells whose parameters differ (numpy `allclose`).
 */
import type { Mat3 } from "../lattice.ts";
import { inv3, isClose, mul3, roundHalfEven, rowAngles, rowLengths } from "../linalg.ts";
import type { SiteSpecies } from "../structure.ts";
import { type Cell, speciesStrings } from "./cell.ts";

export interface LatticeConstraint {
  a: number;
  b: number;
  alpha: number;
  beta: number;
  gamma: number;
}

// numpy rounds halves to even, but the distance to the nearest integer is the same either way.
const wrapDiff = (d: number): number => Math.abs(d - Math.round(d));

const factors = (n: number): number[] => {
  const out: number[] = [];
  for (let i = 1; i <= n; i++) if (n % i === 0) out.push(i);
  return out;
};

/** (determinant, a, e) of pymatgen's upper-triangular supercell matrices, in its order. */
function* hnfShapes(fu: number): Generator<[number, number, number]> {
  for (const det of factors(fu)) {
    if (det === 1) continue;
    for (const a of factors(det)) for (const e of factors(det / a)) yield [det, a, e];
  }
}

const satisfies = (m: Mat3, k: LatticeConstraint): boolean => {
  const [a, b] = rowLengths(m);
  const [alpha, beta, gamma] = rowAngles(m);
  return isClose(a, k.a) && isClose(b, k.b) && isClose(alpha, k.alpha) && isClose(beta, k.beta) && isClose(gamma, k.gamma);
};

export const primitiveCell = (cell: Cell, tolerance: number, constraint: LatticeConstraint | null = null): Cell => {
  const n = cell.species.length;
  if (n === 0) return cell;
  const names = speciesStrings(cell);
  // Sites grouped by species string, groups in sorted order (Python's stable sorted + groupby).
  const order = [...Array(n).keys()].sort((i, j) => {
    const a = names[i] as string;
    const b = names[j] as string;
    return a < b ? -1 : a > b ? 1 : 0;
  });
  const groups: number[][] = [];
  for (const i of order) {
    const last = groups[groups.length - 1];
    if (last && names[last[0] as number] === names[i]) last.push(i);
    else groups.push([i]);
  }
  const f = cell.frac;
  const fc = (i: number, k: number): number => f[3 * i + k] as number;
  const abc = rowLengths(cell.m);
  const superFtol = abc.map((l) => tolerance / l);

  // Approximate periodicities: differences within the smallest group, kept only if they map
  // every site of every group onto a site of the same group (within twice the tolerance).
  let smallest = groups[0] as number[];
  for (const g of groups) if (g.length < smallest.length) smallest = g;
  const s0 = smallest[0] as number;
  let minVecs: number[][] = smallest.map((i) => [fc(i, 0) - fc(s0, 0), fc(i, 1) - fc(s0, 1), fc(i, 2) - fc(s0, 2)]);
  const [t0, t1, t2] = superFtol as [number, number, number];
  const near2 = (d: number, tol: number): boolean => {
    const w = d - Math.floor(d);
    return Math.min(w, 1 - w) < 2 * tol;
  };
  // Each group's sites binned on a periodic grid of cell >= 2·tol, so "is there a site of the
  // group near this point" looks at 27 bins instead of the whole group (the filter keeps the
  // same vectors as the all-pairs test; pymatgen uses a periodic k-d tree for it).
  const nb = superFtol.map((tol) => Math.max(1, Math.floor(1 / (2 * tol)))) as [number, number, number];
  const binOf = (x: number, k: number): number => {
    const b = Math.floor((x - Math.floor(x)) * (nb[k] as number));
    return b >= (nb[k] as number) ? 0 : b;
  };
  const binKey = (b0: number, b1: number, b2: number): number => (b0 * nb[1] + b1) * nb[2] + b2;
  // Bins as a dense compressed grid (start offsets + members) when not much larger than the
  // group, else a map (a sparse grid would cost more to build than it saves).
  const nBins = nb[0] * nb[1] * nb[2];
  const bins = groups.map((g) => {
    if (nBins <= 8 * g.length) {
      const start = new Int32Array(nBins + 1);
      const keys = g.map((j) => binKey(binOf(fc(j, 0), 0), binOf(fc(j, 1), 1), binOf(fc(j, 2), 2)));
      for (const k of keys) (start[k + 1] as number)++;
      for (let k = 0; k < nBins; k++) start[k + 1] = (start[k + 1] as number) + (start[k] as number);
      const fill = start.slice(0, nBins);
      const items = new Int32Array(g.length);
      g.forEach((j, q) => {
        const k = keys[q] as number;
        items[fill[k] as number] = j;
        fill[k] = (fill[k] as number) + 1;
      });
      return { start, items, map: null };
    }
    const map = new Map<number, number[]>();
    for (const j of g) {
      const key = binKey(binOf(fc(j, 0), 0), binOf(fc(j, 1), 1), binOf(fc(j, 2), 2));
      const list = map.get(key);
      if (list) list.push(j);
      else map.set(key, [j]);
    }
    return { start: null, items: null, map };
  });
  const near2All = (x0: number, x1: number, x2: number, j: number): boolean =>
    near2(x0 - fc(j, 0), t0) && near2(x1 - fc(j, 1), t1) && near2(x2 - fc(j, 2), t2);
  const hasSiteNear = (gi: number, x0: number, x1: number, x2: number): boolean => {
    const bin = bins[gi] as (typeof bins)[number];
    const c0 = binOf(x0, 0);
    const c1 = binOf(x1, 1);
    const c2 = binOf(x2, 2);
    for (let d0 = -1; d0 <= 1; d0++) {
      if (nb[0] < 3 && d0 !== 0 && (nb[0] === 1 || d0 === 1)) continue;
      const b0 = (c0 + d0 + nb[0]) % nb[0];
      for (let d1 = -1; d1 <= 1; d1++) {
        if (nb[1] < 3 && d1 !== 0 && (nb[1] === 1 || d1 === 1)) continue;
        const b1 = (c1 + d1 + nb[1]) % nb[1];
        for (let d2 = -1; d2 <= 1; d2++) {
          if (nb[2] < 3 && d2 !== 0 && (nb[2] === 1 || d2 === 1)) continue;
          const b2 = (c2 + d2 + nb[2]) % nb[2];
          const key = binKey(b0, b1, b2);
          if (bin.start) {
            const end = bin.start[key + 1] as number;
            for (let p = bin.start[key] as number; p < end; p++) if (near2All(x0, x1, x2, bin.items[p] as number)) return true;
          } else {
            const list = bin.map.get(key);
            if (list) for (const j of list) if (near2All(x0, x1, x2, j)) return true;
          }
        }
      }
    }
    return false;
  };
  const sortedIdx = [...groups.keys()].sort((a, b) => (groups[a] as number[]).length - (groups[b] as number[]).length);
  // The result is an intersection, so the order of the tests is free: sites far from the mean
  // along c (a slab's surfaces) first, where a vector that is only a bulk translation fails.
  let zMean = 0;
  for (let i = 0; i < n; i++) zMean += fc(i, 2) / n;
  const refOrder = sortedIdx.map((gi) =>
    [...(groups[gi] as number[])].sort((i, j) => Math.abs(fc(j, 2) - zMean) - Math.abs(fc(i, 2) - zMean)),
  );
  minVecs = minVecs.filter((v) => {
    const v0 = v[0] as number;
    const v1 = v[1] as number;
    const v2 = v[2] as number;
    for (let q = 0; q < sortedIdx.length; q++) {
      const gi = sortedIdx[q] as number;
      for (const ref of refOrder[q] as number[])
        if (!hasSiteNear(gi, fc(ref, 0) + v0, fc(ref, 1) + v1, fc(ref, 2) + v2)) return false;
    }
    return true;
  });
  const mv = Float64Array.from(minVecs.flat());
  const nmv = minVecs.length;
  /** Is the fractional vector x close to one of the approximate periodicities? */
  const nearMinVec = (x0: number, x1: number, x2: number): boolean => {
    for (let q = 0; q < nmv; q++)
      if (
        wrapDiff(x0 - (mv[3 * q] as number)) < t0 &&
        wrapDiff(x1 - (mv[3 * q + 1] as number)) < t1 &&
        wrapDiff(x2 - (mv[3 * q + 2] as number)) < t2
      )
        return true;
    return false;
  };

  // Sites of the same group that are neighbours in the supercell must not be merged.
  const nonNbrs = groups.map((g) => {
    const m = g.length;
    const out = new Uint8Array(m * m);
    for (let a = 0; a < m; a++)
      for (let b = 0; b < m; b++) {
        const i = g[a] as number;
        const j = g[b] as number;
        if (i === j) out[a * m + b] = 1;
        else
          for (let k = 0; k < 3; k++)
            if (wrapDiff(fc(j, k) - fc(i, k)) > 2 * (superFtol[k] as number)) {
              out[a * m + b] = 1;
              break;
            }
      }
    return out;
  });

  const numFu = groups.reduce((acc, g) => {
    let x = acc;
    let y = g.length;
    while (y) [x, y] = [y, x % y];
    return x;
  }, 0);

  // Scratch buffers shared by every candidate (the search allocates nothing per candidate).
  const maxGroup = Math.max(...groups.map((g) => g.length));
  const allBuf = new Float64Array(3 * maxGroup);
  const adjBuf = new Uint8Array(maxGroup * maxGroup);
  /**
   * pymatgen's candidate supercell matrices in its order (determinant, a, e, then b, c, f),
   * keeping those whose inverse rows are all near an approximate periodicity. The rows are
   * tested as soon as their entries are fixed: (0, 0, 1/g) per (a, e), (0, 1/e, -f/(e g)) per
   * f, the first row per (b, c, f), so the enumeration skips whole blocks.
   */
  function* candidates(fu: number): Generator<[number, number[][]]> {
    for (const [det, a, e] of hnfShapes(fu)) {
      const g = det / a / e;
      if (!nearMinVec(0, 0, 1 / g)) continue;
      const fs: number[] = [];
      for (let f = 0; f < e; f++) if (nearMinVec(0, 1 / e, -f / (e * g))) fs.push(f);
      if (!fs.length) continue;
      for (let b = 0; b < a; b++) {
        // The first row's first two entries are fixed by b: skip every c when no periodicity fits them.
        const i0 = 1 / a;
        const i1 = -b / (a * e);
        let any = false;
        for (let q = 0; q < nmv && !any; q++)
          any = wrapDiff(i0 - (mv[3 * q] as number)) < t0 && wrapDiff(i1 - (mv[3 * q + 1] as number)) < t1;
        if (!any) continue;
        for (let c = 0; c < a; c++)
          for (const f of fs)
            if (nearMinVec(1 / a, -b / (a * e), (b * f - c * e) / (a * e * g)))
              yield [
                det,
                [
                  [a, b, c],
                  [0, e, f],
                  [0, 0, g],
                ],
              ];
      }
    }
  }

  for (const [size, latt] of candidates(numFu)) {
    {
      const inv = inv3(latt);
      const newM = mul3(inv, cell.m);
      const ftol = rowLengths(newM).map((l) => tolerance / l);
      let valid = true;
      const newSpecies: SiteSpecies[] = [];
      const newLabels: string[] = [];
      const newProps: Record<string, unknown>[] = [];
      const newCoords: number[] = [];
      for (let gi = 0; gi < groups.length && valid; gi++) {
        const g = groups[gi] as number[];
        const nn = nonNbrs[gi] as Uint8Array;
        const m = g.length;
        const all = allBuf;
        for (let a = 0; a < m; a++) {
          const i = g[a] as number;
          for (let k = 0; k < 3; k++)
            all[3 * a + k] =
              fc(i, 0) * (latt[0]?.[k] as number) + fc(i, 1) * (latt[1]?.[k] as number) + fc(i, 2) * (latt[2]?.[k] as number);
        }
        // The relation is symmetric, so column sums are row sums: a wrong candidate fails on
        // its first row instead of after the whole matrix.
        const adjFlat = adjBuf;
        adjFlat.fill(0, 0, m * m);
        for (let a = 0; a < m && valid; a++) {
          let s = 0;
          for (let b = 0; b < m; b++) {
            if (!nn[a * m + b]) continue;
            let close = true;
            for (let k = 0; k < 3 && close; k++)
              if (!(wrapDiff((all[3 * b + k] as number) - (all[3 * a + k] as number)) < (ftol[k] as number))) close = false;
            if (close) {
              adjFlat[a * m + b] = 1;
              s++;
            }
          }
          if (s !== size) valid = false;
        }
        if (!valid) break;
        const adj = { at: (x: number, y: number): boolean => adjFlat[x * m + y] === 1 };
        for (let a = 0; a < m && valid; a++) {
          const members = [];
          for (let b = 0; b < m; b++) if (adj.at(a, b)) members.push(b);
          for (const x of members) for (const y of members) if (!adj.at(x, y)) valid = false;
        }
        if (!valid) break;
        const added = new Array(m).fill(false);
        for (let a = 0; a < m; a++) {
          if (added[a]) continue;
          const members: number[] = [];
          for (let b = 0; b < m; b++)
            if (adj.at(a, b)) {
              added[b] = true;
              members.push(b);
            }
          const first = members[0] as number;
          const coords = [0, 1, 2].map((k) => {
            const v = all[3 * first + k] as number;
            return v - Math.floor(v);
          });
          members.slice(1).forEach((b, inner) => {
            for (let k = 0; k < 3; k++) {
              const v = all[3 * b + k] as number;
              const offset = v - Math.floor(v) - (coords[k] as number);
              coords[k] = (coords[k] as number) + (offset - roundHalfEven(offset)) / (inner + 2);
            }
          });
          const site = g[first] as number;
          newSpecies.push(cell.species[site] as SiteSpecies);
          newLabels.push(cell.labels[site] as string);
          newProps.push(cell.props[site] as Record<string, unknown>);
          newCoords.push(...coords);
        }
      }
      if (!valid) continue;
      const reduced: Cell = {
        m: mul3(inv3(latt), cell.m),
        species: newSpecies,
        frac: Float64Array.from(newCoords),
        labels: newLabels,
        props: newProps,
      };
      const prim = primitiveCell(reduced, tolerance, constraint);
      if (!constraint || satisfies(prim.m, constraint)) return prim;
    }
  }
  return cell;
};
