/**
 * The chemistry UFF's typer needs, perceived the way RDKit perceives it so that atom types (and so
 * every parameter) agree with RDKit's UFF: rings, aromaticity (Hückel 4n+2 over single rings and
 * pairs of fused rings, RDKit's electron-donor rules), conjugation, hybridization (RDKit's "bonds
 * plus lone pairs" count, an atom with four orbitals and a conjugated bond being sp2) and the UFF
 * label (element, hybridization digit or R, charge suffix for metals and hypervalent atoms).
 *
 * Metals carry no hybridization in a plain graph; RDKit reads it from a stereo tag. Here it is read
 * from the coordination geometry instead: four neighbours with two near-linear pairs are square
 * planar (UFF's "4"), five trigonal bipyramidal ("5"), six octahedral ("6").
 */
import { RDKIT_ELEMENT_FACTS } from "./elements.ts";

export type Hybridization = "S" | "SP" | "SP2" | "SP3" | "SP2D" | "SP3D" | "SP3D2" | "UNSPECIFIED";

/** A molecular graph: atomic numbers, formal charges and bonds with orders (1, 2, 3, or 1.5 aromatic). */
export interface MolGraph {
  readonly z: readonly number[];
  readonly formalCharges: readonly number[];
  readonly bonds: readonly { readonly a: number; readonly b: number; readonly order: number }[];
}

export interface PerceivedChemistry {
  /** Bond orders as UFF uses them (aromatic bonds 1.5). */
  readonly bondOrders: number[];
  readonly aromaticBond: boolean[];
  readonly aromaticAtom: boolean[];
  readonly conjugatedBond: boolean[];
  readonly hybridization: Hybridization[];
  /** For each atom: the neighbour indices in bond order, and the bond index of each. */
  readonly neighbors: number[][];
  readonly neighborBonds: number[][];
  /** Ring sizes each atom belongs to (smallest rings through each bond). */
  readonly ringSizes: Set<number>[];
  readonly labels: string[];
}

const facts = (z: number) => RDKIT_ELEMENT_FACTS[z] ?? [0, -1, 0];
const nOuter = (z: number) => facts(z)[0];
const defaultValence = (z: number) => facts(z)[1];
const SYMBOLS =
  "X H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr".split(
    " ",
  );
export const symbolOf = (z: number): string => SYMBOLS[z] ?? "X";

/** RDKit's PeriodicTable::moreElectroNegative: more outer electrons, then the lighter element. */
const moreElectronegative = (z1: number, z2: number): boolean => {
  const n1 = nOuter(z1);
  const n2 = nOuter(z2);
  if (n1 !== n2) return n1 > n2;
  return z1 < z2;
};

/** Smallest rings through each bond (BFS with that bond removed), deduplicated. */
const findRings = (
  n: number,
  neighbors: number[][],
  neighborBonds: number[][],
  nBonds: number,
  bondAtoms: [number, number][],
): number[][] => {
  const seen = new Set<string>();
  const rings: number[][] = [];
  for (let bi = 0; bi < nBonds; bi++) {
    const [s, t] = bondAtoms[bi] as [number, number];
    const prev = new Int32Array(n).fill(-1);
    prev[s] = s;
    const queue = [s];
    let found = false;
    for (let q = 0; q < queue.length && !found; q++) {
      const u = queue[q] as number;
      const nb = neighbors[u] as number[];
      const nbb = neighborBonds[u] as number[];
      for (let k = 0; k < nb.length; k++) {
        if (nbb[k] === bi) continue;
        const v = nb[k] as number;
        if (prev[v] !== -1) continue;
        prev[v] = u;
        if (v === t) {
          found = true;
          break;
        }
        queue.push(v);
      }
    }
    if (!found) continue;
    const ring: number[] = [];
    for (let v = t; ; v = prev[v] as number) {
      ring.push(v);
      if (v === s) break;
    }
    const key = [...ring].sort((x, y) => x - y).join(",");
    if (!seen.has(key)) {
      seen.add(key);
      rings.push(ring);
    }
  }
  return rings;
};

type Donor = "none" | "vacant" | "one" | "two";

/** Perceives everything UFF's typer needs from the graph (and, for metals, the geometry). */
export const perceiveChemistry = (graph: MolGraph, positions: ArrayLike<number>): PerceivedChemistry => {
  const n = graph.z.length;
  const neighbors: number[][] = Array.from({ length: n }, () => []);
  const neighborBonds: number[][] = Array.from({ length: n }, () => []);
  const bondAtoms: [number, number][] = [];
  for (const [bi, bond] of graph.bonds.entries()) {
    neighbors[bond.a]?.push(bond.b);
    neighborBonds[bond.a]?.push(bi);
    neighbors[bond.b]?.push(bond.a);
    neighborBonds[bond.b]?.push(bi);
    bondAtoms.push([bond.a, bond.b]);
  }
  const nb = graph.bonds.length;
  const inputOrder = graph.bonds.map((b) => b.order);
  const degree = neighbors.map((x) => x.length);
  // Valence from the input orders; aromatic input bonds (1.5) count 1.5 each, as RDKit's do.
  const valence = neighborBonds.map((bs) => Math.round(bs.reduce((s, bi) => s + (inputOrder[bi] as number), 0)));
  const charge = (i: number) => graph.formalCharges[i] ?? 0;
  const nUnsaturations = (i: number) => (valence[i] as number) - (degree[i] as number);
  const multipleBondCount = (i: number) => (neighborBonds[i] as number[]).filter((bi) => (inputOrder[bi] as number) >= 2).length;

  const countAtomElec = (i: number): number => {
    const z = graph.z[i] as number;
    const dv = defaultValence(z);
    if (dv <= 1) return -1;
    const deg = degree[i] as number;
    if (deg > 3) return -1;
    const nlp = Math.max(nOuter(z) - dv - charge(i), 0);
    let res = dv - deg + nlp;
    if (res > 1 && nUnsaturations(i) > 1) res = 1;
    return res;
  };

  const rings = findRings(n, neighbors, neighborBonds, nb, bondAtoms);
  const ringSizes: Set<number>[] = Array.from({ length: n }, () => new Set<number>());
  const inRing = new Array<boolean>(n).fill(false);
  const bondInRing = new Array<boolean>(nb).fill(false);
  const bondIndex = new Map<string, number>();
  for (const [bi, [a, b]] of bondAtoms.entries()) bondIndex.set(a < b ? `${a},${b}` : `${b},${a}`, bi);
  const bondBetween = (a: number, b: number) => bondIndex.get(a < b ? `${a},${b}` : `${b},${a}`);
  const ringBonds = rings.map((r) => r.map((a, k) => bondBetween(a, r[(k + 1) % r.length] as number) as number));
  for (const [ri, r] of rings.entries()) {
    for (const a of r) {
      ringSizes[a]?.add(r.length);
      inRing[a] = true;
    }
    for (const bi of ringBonds[ri] as number[]) bondInRing[bi] = true;
  }

  // Aromaticity (RDKit's default model, reduced to single rings and pairs of fused rings).
  const donor = (i: number): Donor => {
    const z = graph.z[i] as number;
    const nelec = countAtomElec(i);
    const exocyclicMultiple = (neighborBonds[i] as number[]).find((bi) => (inputOrder[bi] as number) >= 2 && !bondInRing[bi]);
    const other = (bi: number) => {
      const [a, b] = bondAtoms[bi] as [number, number];
      return a === i ? b : a;
    };
    const anyMultiple = multipleBondCount(i) > 0;
    const cyclicMultiple = (neighborBonds[i] as number[]).some((bi) => (inputOrder[bi] as number) >= 2 && bondInRing[bi]);
    if (nelec < 0) return "none";
    if (nelec === 0) {
      if (exocyclicMultiple !== undefined) return "vacant";
      return cyclicMultiple ? "one" : "none";
    }
    if (nelec === 1) {
      if (exocyclicMultiple !== undefined)
        return moreElectronegative(graph.z[other(exocyclicMultiple)] as number, z) ? "vacant" : "one";
      if (anyMultiple) return "one";
      return charge(i) === 1 ? "vacant" : "none";
    }
    let e = nelec;
    if (exocyclicMultiple !== undefined && moreElectronegative(graph.z[other(exocyclicMultiple)] as number, z)) e--;
    return e % 2 === 1 ? "one" : "two";
  };
  const aromaticCandidate = (i: number, d: Donor): boolean => {
    const z = graph.z[i] as number;
    if (!inRing[i]) return false;
    if (z > 18 && z !== 34 && z !== 52) return false;
    if (d === "none") return false;
    const dv = defaultValence(z);
    if (dv > 0 && (valence[i] as number) > defaultValence(z - charge(i))) return false;
    if (nUnsaturations(i) > 1 && multipleBondCount(i) > 1) return false;
    return true;
  };
  const donors = graph.z.map((_, i) => donor(i));
  const candidate = donors.map((d, i) => aromaticCandidate(i, d));
  const electrons = (atoms: Iterable<number>) => {
    let e = 0;
    for (const a of atoms) e += donors[a] === "two" ? 2 : donors[a] === "one" ? 1 : 0;
    return e;
  };
  const huckel = (e: number) => e >= 2 && (e - 2) % 4 === 0;
  const aromaticBond = new Array<boolean>(nb).fill(false);
  const aromaticAtom = new Array<boolean>(n).fill(false);
  const candidateRings = rings.map((r, ri) => ({ r, ri })).filter(({ r }) => r.every((a) => candidate[a]));
  const markRing = (ri: number) => {
    for (const a of rings[ri] as number[]) aromaticAtom[a] = true;
    for (const bi of ringBonds[ri] as number[]) aromaticBond[bi] = true;
  };
  for (const { r, ri } of candidateRings) if (huckel(electrons(r))) markRing(ri);
  for (let x = 0; x < candidateRings.length; x++) {
    for (let y = x + 1; y < candidateRings.length; y++) {
      const rx = candidateRings[x] as { r: number[]; ri: number };
      const ry = candidateRings[y] as { r: number[]; ri: number };
      const shared = rx.r.filter((a) => ry.r.includes(a));
      if (shared.length !== 2) continue;
      const union = new Set([...rx.r, ...ry.r]);
      if (huckel(electrons(union))) {
        markRing(rx.ri);
        markRing(ry.ri);
      }
    }
  }

  // Conjugation (RDKit's setConjugation).
  const conjugatedBond = [...aromaticBond];
  const conjCandidate = graph.z.map((z, i) => {
    const dv = defaultValence(z);
    if (charge(i) === 0 && dv >= 0 && (valence[i] as number) > dv) return false;
    const no = nOuter(z);
    return (z <= 10 || (no !== 5 && no !== 6) || (no === 6 && (degree[i] as number) < 2)) && countAtomElec(i) > 0;
  });
  const bondContrib = (bi: number) => (aromaticBond[bi] ? 1.5 : (inputOrder[bi] as number));
  for (let i = 0; i < n; i++) {
    if (!conjCandidate[i]) continue;
    const subs = degree[i] as number;
    if (subs < 2 || subs > 3) continue;
    const nbs = neighbors[i] as number[];
    const nbbs = neighborBonds[i] as number[];
    for (let k1 = 0; k1 < nbs.length; k1++) {
      const b1 = nbbs[k1] as number;
      if (bondContrib(b1) < 1.5 || !conjCandidate[nbs[k1] as number]) continue;
      for (let k2 = 0; k2 < nbs.length; k2++) {
        if (k1 === k2) continue;
        const at2 = nbs[k2] as number;
        if (conjCandidate[at2] && (degree[at2] as number) <= 3) {
          conjugatedBond[b1] = true;
          conjugatedBond[nbbs[k2] as number] = true;
        }
      }
    }
  }
  const hasConjugatedBond = (i: number) => (neighborBonds[i] as number[]).some((bi) => conjugatedBond[bi]);

  const hybridization = graph.z.map((z, i): Hybridization => {
    const geometric = metalGeometry(z, i, neighbors[i] as number[], positions);
    if (geometric) return geometric;
    const deg = degree[i] as number;
    let norbs: number;
    if (z <= 1 || z >= 89) norbs = deg;
    else {
      const no = nOuter(z);
      const tv = valence[i] as number;
      const chg = charge(i);
      const free = no - (tv + chg);
      // C++ integer division truncates towards zero.
      norbs = deg + Math.trunc(free / 2);
    }
    switch (norbs) {
      case 0:
      case 1:
        return "S";
      case 2:
        return "SP";
      case 3:
        return "SP2";
      case 4:
        return deg > 3 || !hasConjugatedBond(i) ? "SP3" : "SP2";
      case 5:
        return "SP3D";
      case 6:
        return "SP3D2";
      default:
        return "UNSPECIFIED";
    }
  });

  const bondOrders = inputOrder.map((o, bi) => (aromaticBond[bi] ? 1.5 : o));
  const labels = graph.z.map((z, i) =>
    uffLabel(z, hybridization[i] as Hybridization, aromaticAtom[i] || hasConjugatedBond(i), valence[i] as number),
  );
  return { bondOrders, aromaticBond, aromaticAtom, conjugatedBond, hybridization, neighbors, neighborBonds, ringSizes, labels };
};

/** Metals (no default valence) with 4, 5 or 6 neighbours: hybridization from the coordination shape. */
const metalGeometry = (z: number, i: number, nbs: number[], pos: ArrayLike<number>): Hybridization | null => {
  if (defaultValence(z) !== -1 || z <= 2) return null;
  if (nbs.length === 5) return "SP3D";
  if (nbs.length === 6) return "SP3D2";
  if (nbs.length !== 4) return null;
  let nearLinear = 0;
  for (let a = 0; a < 4; a++) {
    for (let b = a + 1; b < 4; b++) {
      const p = nbs[a] as number;
      const q = nbs[b] as number;
      const u = [0, 1, 2].map((k) => (pos[3 * p + k] as number) - (pos[3 * i + k] as number));
      const v = [0, 1, 2].map((k) => (pos[3 * q + k] as number) - (pos[3 * i + k] as number));
      const dot = (u[0] as number) * (v[0] as number) + (u[1] as number) * (v[1] as number) + (u[2] as number) * (v[2] as number);
      const cos = dot / Math.sqrt(u.reduce((s, x) => s + x * x, 0) * v.reduce((s, x) => s + x * x, 0));
      if (cos < -0.8) nearLinear++;
    }
  }
  return nearLinear >= 2 ? "SP2D" : "SP3";
};

const CHARGE_SUFFIX: ReadonlyMap<number, string> = new Map([
  ...[29, 47].map((z) => [z, "+1"] as const),
  ...[4, 12, 20, 25, 26, 28, 30, 34, 46, 48, 52, 78, 80, 84].map((z) => [z, "+2"] as const),
  ...[21, 24, 27, 31, 33, 49, 51, 79, 81, 82, 83, 89, 96, 97, 98, 99, 100, 101, 102, 103].map((z) => [z, "+3"] as const),
  ...[2, 18, 22, 36, 54, 90, 91, 92, 93, 94, 95].map((z) => [z, "+4"] as const),
  ...[23, 41, 43, 73].map((z) => [z, "+5"] as const),
  [42, "+6"] as const,
]);

/** RDKit's UFF label (getAtomLabel with charge flags, mismatches tolerated as RDKit does by default). */
export const uffLabel = (z: number, hyb: Hybridization, aromaticOrConjugated: boolean, totalValence: number): string => {
  let key = symbolOf(z);
  if (key.length === 1) key += "_";
  const no = nOuter(z);
  if (defaultValence(z) === -1 || (no !== 1 && no !== 7)) {
    if ([12, 13, 14, 15, 50, 51, 52, 81, 82, 83, 84].includes(z)) key += "3";
    else if (z === 80) key += "1";
    else {
      switch (hyb) {
        case "S":
          break;
        case "SP":
          key += "1";
          break;
        case "SP2":
          key += aromaticOrConjugated && [6, 7, 8, 16].includes(z) ? "R" : "2";
          break;
        case "SP3":
          key += "3";
          break;
        case "SP2D":
          key += "4";
          break;
        case "SP3D":
          key += "5";
          break;
        case "SP3D2":
          key += "6";
          break;
        default:
          key += "?";
      }
    }
  }
  if (z === 15) key += totalValence === 3 ? "+3" : "+5";
  else if (z === 16) {
    if (hyb !== "SP2") key += totalValence === 2 ? "+2" : totalValence === 4 ? "+4" : "+6";
  } else if (z === 75) {
    if (key === "Re6") key = "Re6+5";
    else if (key === "Re3") key = "Re3+7";
  } else if (z >= 57 && z <= 71) key += "+3";
  else {
    const suffix = CHARGE_SUFFIX.get(z);
    if (suffix) key += suffix;
  }
  return key;
};
