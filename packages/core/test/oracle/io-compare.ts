/** Comparing our parsed structures with the reference readers' (io_oracle.py) and with each other. */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runPython } from "atomstudio-testkit";
import type { Structure } from "../../src/index.ts";

export const IO_ORACLE = join(dirname(fileURLToPath(import.meta.url)), "io_oracle.py");

export interface OracleFrame {
  lattice: number[][] | null;
  pbc: boolean[];
  species: [string, number, number | null][][];
  cart: number[][];
  props: Record<string, unknown[]>;
}
export type OracleResult = { frames: OracleFrame[] } | { error: string };
export interface OracleJob {
  id: string;
  reader: "cif" | "poscar" | "asevasp" | "xdatcar" | "xyz" | "molecule" | "structure" | "extxyz" | "pdb" | "json";
  content: string;
  name?: string;
}

/** One Python process for every job: pymatgen's import dominates the cost. */
export const runIoOracle = (jobs: OracleJob[]): Promise<Record<string, OracleResult>> =>
  runPython<Record<string, OracleResult>>(IO_ORACLE, jobs, { timeoutMs: 600_000 });

export const framesOf = (r: OracleResult | undefined): OracleFrame[] => {
  if (!r) throw new Error("oracle returned nothing for this job");
  if ("error" in r) throw new Error(`reference reader failed: ${r.error}`);
  return r.frames;
};

const speciesKey = (sp: readonly { element: string; occu: number; oxidation_state?: number }[]): string =>
  sp
    .map((s) => `${s.element}:${s.occu.toFixed(6)}${s.oxidation_state ? `:${s.oxidation_state}` : ""}`)
    .sort()
    .join(",");
const refSpeciesKey = (sp: [string, number, number | null][]): string =>
  sp
    .map(([el, occ, ox]) => `${el}:${occ.toFixed(6)}${ox ? `:${ox}` : ""}`)
    .sort()
    .join(",");

/** Distance between Cartesian points, through the nearest periodic image when there is a lattice. */
const distance = (s: Structure, a: ArrayLike<number>, b: ArrayLike<number>): number => {
  const d = [(a[0] as number) - (b[0] as number), (a[1] as number) - (b[1] as number), (a[2] as number) - (b[2] as number)];
  if (!s.lattice) return Math.hypot(d[0]!, d[1]!, d[2]!);
  const f = s.lattice.toFractional(d);
  const w = f.map((x, k) => (s.lattice?.pbc[k] ? x - Math.round(x) : x));
  const c = s.lattice.toCartesian(w);
  return Math.hypot(c[0], c[1], c[2]);
};

export interface CompareOptions {
  /** Largest allowed coordinate difference, Angstrom. */
  tol?: number;
  latticeTol?: number;
  /** Match sites by species and position instead of by index. */
  anyOrder?: boolean;
  /** Skip the lattice check (ASE forgets a PDB cell after the first model). */
  skipLattice?: boolean;
}

/** Differences between our structure and a reference frame; empty when they agree. */
export const compareFrame = (ours: Structure, ref: OracleFrame, opts: CompareOptions = {}): string[] => {
  const tol = opts.tol ?? 1e-6;
  const ltol = opts.latticeTol ?? 1e-6;
  const problems: string[] = [];
  if (ours.length !== ref.species.length) return [`site count ${ours.length} vs reference ${ref.species.length}`];
  if (!opts.skipLattice) {
    if (!ours.lattice !== !ref.lattice)
      problems.push(`lattice ${ours.lattice ? "present" : "absent"} vs reference ${ref.lattice ? "present" : "absent"}`);
    else if (ours.lattice && ref.lattice) {
      const worst = Math.max(
        ...ours.lattice.matrix.flatMap((r, i) => r.map((v, j) => Math.abs(v - (ref.lattice?.[i]?.[j] ?? Number.NaN)))),
      );
      if (!(worst <= ltol)) problems.push(`lattice matrix differs by ${worst}`);
    }
  }
  const used = new Uint8Array(ref.species.length);
  let worst = 0;
  for (let i = 0; i < ours.length; i++) {
    const key = speciesKey(ours.species[i]!);
    const p = ours.position(i);
    if (!opts.anyOrder) {
      const rk = refSpeciesKey(ref.species[i]!);
      if (rk !== key) {
        problems.push(`site ${i}: species ${key} vs reference ${rk}`);
        if (problems.length > 5) break;
        continue;
      }
      const d = distance(ours, p, ref.cart[i]!);
      worst = Math.max(worst, d);
      if (!(d <= tol)) {
        problems.push(`site ${i} (${key}): position differs by ${d.toExponential(3)} A`);
        if (problems.length > 5) break;
      }
      continue;
    }
    let found = -1;
    for (let j = 0; j < ref.species.length && found < 0; j++)
      if (!used[j] && refSpeciesKey(ref.species[j]!) === key && distance(ours, p, ref.cart[j]!) <= tol) found = j;
    if (found < 0) {
      problems.push(`site ${i} (${key} at ${p.map((x) => x.toFixed(5)).join(" ")}): no reference site within ${tol} A`);
      if (problems.length > 5) break;
    } else used[found] = 1;
  }
  return problems;
};

/**
 * Lattice parameters, fractional coordinates, elements and occupancies (not oxidation states,
 * which the formats this serves cannot hold): an orientation-free comparison of two structures.
 */
export const compareCellAndFrac = (a: Structure, b: Structure, tol = 1e-6, angTol = 1e-6): string[] => {
  if (a.length !== b.length) return [`site count ${a.length} vs ${b.length}`];
  const problems: string[] = [];
  if (!a.lattice || !b.lattice) {
    if (a.lattice || b.lattice) return ["one has a lattice, the other not"];
  } else {
    const la = [...a.lattice.lengths, ...a.lattice.angles];
    const lb = [...b.lattice.lengths, ...b.lattice.angles];
    la.forEach((v, k) => {
      if (!(Math.abs(v - lb[k]!) <= (k < 3 ? tol : angTol))) problems.push(`lattice parameter ${k}: ${v} vs ${lb[k]}`);
    });
  }
  for (let i = 0; i < a.length; i++) {
    const el = (s: Structure) => s.species[i]!.map((e) => `${e.element}:${e.occu.toFixed(6)}`).join(",");
    if (el(a) !== el(b)) problems.push(`site ${i}: species ${el(a)} vs ${el(b)}`);
    let d: number;
    if (a.lattice && b.lattice) {
      const fa = a.frac.subarray(3 * i, 3 * i + 3);
      const fb = b.frac.subarray(3 * i, 3 * i + 3);
      const df = [0, 1, 2].map((k) => fa[k]! - fb[k]! - Math.round(fa[k]! - fb[k]!));
      const c = b.lattice.toCartesian(df);
      d = Math.hypot(...c);
    } else d = distance(a, a.position(i), b.position(i));
    if (!(d <= tol)) problems.push(`site ${i}: moved ${d.toExponential(3)} A`);
    if (problems.length > 5) break;
  }
  return problems;
};
