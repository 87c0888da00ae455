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

const wrapDiff = (d: number): number => Math.abs(d - roundHalfEven(d));

const factors = (n: number): number[] => {
  const out: number[] = [];
  for (let i = 1; i <= n; i++) if (n % i === 0) out.push(i);
  return out;
};

/** Upper-triangular supercell matrices of each determinant dividing `fu` (pymatgen's order). */
function* hnfs(fu: number): Generator<[number, number[][][]]> {
  for (const det of factors(fu)) {
    if (det === 1) continue;
    for (const a of factors(det))
      for (const e of factors(det / a)) {
        const g = det / a / e;
        const ms: number[][][] = [];
        for (let b = 0; b < a; b++)
          for (let c = 0; c < a; c++)
            for (let f = 0; f < e; f++)
              ms.push([
                [a, b, c],
                [0, e, f],
                [0, 0, g],
              ]);
        yield [det, ms];
      }
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
  const sortedGroups = [...groups].sort((a, b) => a.length - b.length);
  const [t0, t1, t2] = superFtol as [number, number, number];
  const near2 = (d: number, tol: number): boolean => {
    const w = d - Math.floor(d);
    return Math.min(w, 1 - w) < 2 * tol;
  };
  for (const g of sortedGroups)
    for (const ref of g) {
      const r0 = fc(ref, 0);
      const r1 = fc(ref, 1);
      const r2 = fc(ref, 2);
      minVecs = minVecs.filter((v) => {
        const v0 = v[0] as number;
        const v1 = v[1] as number;
        const v2 = v[2] as number;
        for (const j of g)
          if (near2(v0 - (fc(j, 0) - r0), t0) && near2(v1 - (fc(j, 1) - r1), t1) && near2(v2 - (fc(j, 2) - r2), t2)) return true;
        return false;
      });
    }
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
  for (const [size, ms] of hnfs(numFu)) {
    for (const latt of ms) {
      // Inverse of the upper-triangular [[a, b, c], [0, e, f], [0, 0, g]].
      const [[a, b, c], [, e, f], [, , g]] = latt as [number[], number[], number[]] as [
        [number, number, number],
        [number, number, number],
        [number, number, number],
      ];
      const i00 = 1 / a;
      const i01 = -b / (a * e);
      const i02 = (b * f - c * e) / (a * e * g);
      const i11 = 1 / e;
      const i12 = -f / (e * g);
      const i22 = 1 / g;
      if (!(nearMinVec(i00, i01, i02) && nearMinVec(0, i11, i12) && nearMinVec(0, 0, i22))) continue;
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
