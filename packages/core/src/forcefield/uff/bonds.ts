/**
 * Bonds and bond orders from a geometry, for molecules that arrive as bare coordinates (XYZ, the
 * studio's hand-built molecules). Connectivity as RDKit's DetermineConnectivity does it: two atoms
 * are bonded when closer than 1.3 × the sum of RDKit's covalent radii. Orders: each atom has a target
 * valence (its lowest allowed valence not below its degree; N with four neighbours is N+); the
 * remaining unsaturation is placed as double and triple bonds by an exhaustive matching, so
 * conjugated and aromatic rings get a Kekulé structure. Atoms left unsaturated carry a charge so
 * that the total matches the molecule's charge where it can (O⁻, N⁻, C⁻ for anions).
 */

import type { MolGraph } from "./chemistry.ts";
import { RDKIT_ELEMENT_FACTS } from "./elements.ts";

const ALLOWED_VALENCES: ReadonlyMap<number, readonly number[]> = new Map([
  [1, [1]],
  [5, [3]],
  [6, [4]],
  [7, [3]],
  [8, [2]],
  [9, [1]],
  [14, [4]],
  [15, [3, 5]],
  [16, [2, 4, 6]],
  [17, [1]],
  [33, [3, 5]],
  [34, [2, 4, 6]],
  [35, [1]],
  [53, [1, 3, 5]],
]);

const COVALENT_FACTOR = 1.3;

export const perceiveBonds = (z: readonly number[], pos: ArrayLike<number>, totalCharge = 0): MolGraph => {
  const n = z.length;
  const rcov = z.map((zi) => (RDKIT_ELEMENT_FACTS[zi] ?? [0, -1, 0.77])[2]);
  const candidates: { a: number; b: number; ratio: number }[] = [];
  // Cell list: bonds are short, so only neighbouring cells need comparing.
  const maxR = Math.max(0.5, ...rcov);
  const cell = 2 * maxR * COVALENT_FACTOR;
  const cells = new Map<string, number[]>();
  const cellOf = (i: number) => [0, 1, 2].map((k) => Math.floor((pos[3 * i + k] as number) / cell));
  for (let i = 0; i < n; i++) {
    const c = cellOf(i).join(",");
    const list = cells.get(c);
    if (list) list.push(i);
    else cells.set(c, [i]);
  }
  const distance = (i: number, j: number) =>
    Math.hypot(
      (pos[3 * i] as number) - (pos[3 * j] as number),
      (pos[3 * i + 1] as number) - (pos[3 * j + 1] as number),
      (pos[3 * i + 2] as number) - (pos[3 * j + 2] as number),
    );
  for (let i = 0; i < n; i++) {
    const [cx, cy, cz] = cellOf(i) as [number, number, number];
    for (let dx = -1; dx <= 1; dx++)
      for (let dy = -1; dy <= 1; dy++)
        for (let dz = -1; dz <= 1; dz++) {
          for (const j of cells.get(`${cx + dx},${cy + dy},${cz + dz}`) ?? []) {
            if (j <= i) continue;
            const limit = (rcov[i] as number) + (rcov[j] as number);
            const d = distance(i, j);
            if (d <= COVALENT_FACTOR * limit) candidates.push({ a: i, b: j, ratio: d / limit });
          }
        }
  }
  // Shortest (relative to the radii) first. A candidate is rejected when it would give hydrogen a
  // second bond, or when it closes a triangle whose angle at the shared neighbour is wide: a
  // distorted ring's diagonal or two ligands of one centre, not a three-membered ring (60°).
  candidates.sort((p, q) => p.ratio - q.ratio);
  const nbrs: Set<number>[] = Array.from({ length: n }, () => new Set<number>());
  const bonds: { a: number; b: number; order: number }[] = [];
  const angleAt = (k: number, i: number, j: number) => {
    const u = [0, 1, 2].map((c) => (pos[3 * i + c] as number) - (pos[3 * k + c] as number));
    const v = [0, 1, 2].map((c) => (pos[3 * j + c] as number) - (pos[3 * k + c] as number));
    const cos = u.reduce((s, x, c) => s + x * (v[c] as number), 0) / (Math.hypot(...u) * Math.hypot(...v));
    return (Math.acos(Math.max(-1, Math.min(1, cos))) * 180) / Math.PI;
  };
  for (const { a, b } of candidates) {
    const na = nbrs[a] as Set<number>;
    const nb = nbrs[b] as Set<number>;
    if ((z[a] === 1 && na.size >= 1) || (z[b] === 1 && nb.size >= 1)) continue;
    let wide = false;
    for (const k of na) if (nb.has(k) && angleAt(k, a, b) > 75) wide = true;
    if (wide) continue;
    na.add(b);
    nb.add(a);
    bonds.push({ a: Math.min(a, b), b: Math.max(a, b), order: 1 });
  }
  bonds.sort((p, q) => p.a - q.a || p.b - q.b);
  const degree = new Array<number>(n).fill(0);
  const adj: number[][] = Array.from({ length: n }, () => []);
  for (const [bi, b] of bonds.entries()) {
    degree[b.a] = (degree[b.a] as number) + 1;
    degree[b.b] = (degree[b.b] as number) + 1;
    adj[b.a]?.push(bi);
    adj[b.b]?.push(bi);
  }
  const charges = new Array<number>(n).fill(0);
  const unsat = z.map((zi, i) => {
    const d = degree[i] as number;
    if (zi === 7 && d === 4) {
      charges[i] = 1;
      return 0;
    }
    const allowed = ALLOWED_VALENCES.get(zi);
    if (!allowed) return 0;
    // Hypervalent centres (S, P, As, Se, I) take one double bond per terminal O or S: sulfones, phosphates.
    let wanted = d;
    if (allowed.length > 1)
      for (const bi of adj[i] as number[]) {
        const b = bonds[bi] as { a: number; b: number };
        const o = b.a === i ? b.b : b.a;
        if ((z[o] === 8 || z[o] === 16) && degree[o] === 1) wanted++;
      }
    const v = allowed.find((x) => x >= wanted) ?? allowed.findLast((x) => x >= d);
    return v === undefined ? 0 : v - d;
  });
  // Place multiple bonds: depth-first over unsaturated atoms, fewest options first.
  const order = bonds.map(() => 1);
  const left = [...unsat];
  let best: { order: number[]; score: number } | null = null;
  let budget = 200_000;
  let increments = 0;
  const totalUnsat = unsat.reduce((s, x) => s + x, 0);
  const score = () => totalUnsat - 2 * increments;
  const search = (): boolean => {
    if (--budget < 0) return false;
    let pick = -1;
    let fewest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < n; i++) {
      if ((left[i] as number) <= 0) continue;
      let options = 0;
      for (const bi of adj[i] as number[]) {
        const b = bonds[bi] as { a: number; b: number };
        const o = b.a === i ? b.b : b.a;
        if ((left[o] as number) > 0 && (order[bi] as number) < 3) options++;
      }
      if (options < fewest) {
        fewest = options;
        pick = i;
      }
    }
    const s = score();
    if (!best || s < best.score) best = { order: [...order], score: s };
    if (pick < 0 || s === 0) return s === 0;
    if (fewest === 0) {
      // This atom stays unsaturated (a charge or radical); continue with the others.
      const saved = left[pick] as number;
      left[pick] = 0;
      const done = search();
      left[pick] = saved;
      return done;
    }
    for (const bi of adj[pick] as number[]) {
      const b = bonds[bi] as { a: number; b: number };
      const o = b.a === pick ? b.b : b.a;
      if ((left[o] as number) <= 0 || (order[bi] as number) >= 3) continue;
      order[bi] = (order[bi] as number) + 1;
      increments++;
      left[pick] = (left[pick] as number) - 1;
      left[o] = (left[o] as number) - 1;
      if (search()) return true;
      order[bi] = (order[bi] as number) - 1;
      increments--;
      left[pick] = (left[pick] as number) + 1;
      left[o] = (left[o] as number) + 1;
    }
    return false;
  };
  search();
  const result = best as { order: number[]; score: number } | null;
  const finalOrder = result ? result.order : order;
  const finalLeft = unsat.map((u, i) => u - (adj[i] as number[]).reduce((s, bi) => s + (finalOrder[bi] as number) - 1, 0));
  // Unsatisfied atoms: anions take the negative charge on the most electronegative first.
  let charge = charges.reduce((s, x) => s + x, 0);
  const unsatisfied = finalLeft
    .map((l, i) => ({ i, l }))
    .filter(({ l }) => l > 0)
    .sort((p, q) => (z[q.i] as number) - (z[p.i] as number));
  for (const { i } of unsatisfied) {
    if (charge <= totalCharge) break;
    charges[i] = (charges[i] as number) - 1;
    charge--;
  }
  return { z: [...z], formalCharges: charges, bonds: bonds.map((b, bi) => ({ ...b, order: finalOrder[bi] as number })) };
};
