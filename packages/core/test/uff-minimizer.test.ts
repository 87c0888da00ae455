/**
 * The UFF minimiser against RDKit's (ForceField::minimize, PyPI rdkit run directly) from the same
 * starts: as many iterations as RDKit's BFGS within ITERATION_FACTOR, and the same minimised
 * energy. Two stopping rules are checked: RDKit's own relative gradient test at its default
 * tolerance (forceTol 1e-4), and the studio's, a largest per-atom gradient (set to the one RDKit
 * stops at). L-BFGS, used above DENSE_MAX_FREE_ATOMS free atoms, reaches the same minima.
 */

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runPython } from "atomstudio-testkit";
import { describe, expect, it } from "vitest";
import { type MinimizeOptions, minimize, UffField } from "../src/forcefield/uff/index.ts";

const ORACLE = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "oracle/uff_oracle.py"), "utf8");

/** Iterations may differ from RDKit's by this factor either way (rounding makes long runs drift apart). */
const ITERATION_FACTOR = 1.1;

// One molecule per row, from 5 to 100 atoms; the starts are RDKit embeddings displaced at random.
const CASES: { name: string; smiles: string }[] = [
  { name: "butane", smiles: "CCCC" },
  { name: "cyclohexane", smiles: "C1CCCCC1" },
  { name: "naphthalene", smiles: "c1ccc2ccccc2c1" },
  { name: "N-methylacetamide", smiles: "CNC(C)=O" },
  { name: "dimethyl sulfone", smiles: "CS(C)(=O)=O" },
  { name: "tetrachlorozincate", smiles: "Cl[Zn@TH1](Cl)(Cl)Cl" },
  { name: "hexaammineiron", smiles: "[NH3][Fe@OH1]([NH3])([NH3])([NH3])([NH3])[NH3]" },
  { name: "ibuprofen", smiles: "CC(C)Cc1ccc(cc1)C(C)C(=O)O" },
  {
    name: "pentapeptide Tyr-Phe-Leu-Lys-Val",
    smiles: "CC(C)C[C@H](NC(=O)[C@@H](Cc1ccccc1)NC(=O)[C@@H](N)Cc1ccc(O)cc1)C(=O)N[C@@H](CCCCN)C(=O)N[C@@H](C(C)C)C(=O)O",
  },
];

interface OracleRow {
  name: string;
  z: number[];
  formal_charges: number[];
  bonds: [number, number, number][];
  positions: number[];
  default_minimize: { converged: boolean; iterations: number; energy: number; gmax: number };
}

const run = (r: OracleRow, options: Omit<MinimizeOptions, "maxSteps">) => {
  const field = new UffField(
    { z: r.z, formalCharges: r.formal_charges, bonds: r.bonds.map(([a, b, order]) => ({ a, b, order })) },
    r.positions,
  );
  let last: { step: number; energy: number; converged: boolean } | undefined;
  for (const step of minimize((x, g) => field.energy(x, g), r.positions, { maxSteps: 100_000, ...options })) last = step;
  return last as { step: number; energy: number; converged: boolean };
};

const sameEnergy = (a: number, b: number) => Math.abs(a - b) < 1e-5 * Math.max(1, Math.abs(b));

describe("the UFF minimiser converges like RDKit's", async () => {
  const rows = await runPython<OracleRow[]>(
    ORACLE,
    { cases: CASES.map((c) => ({ name: c.name, smiles: c.smiles, seed: 3, jitter: 0.1 })), iterations: true },
    { timeoutMs: 300_000 },
  );
  const row = (name: string) => rows.find((r) => r.name === name) as OracleRow;

  it.each(CASES)("$name: RDKit's stopping rule, iterations within the factor, the same energy", ({ name }) => {
    const r = row(name);
    expect(r.default_minimize.converged).toBe(true);
    const ours = run(r, { gmax: 0, forceTol: 1e-4 });
    expect(ours.converged).toBe(true);
    expect(ours.step).toBeLessThanOrEqual(Math.ceil(r.default_minimize.iterations * ITERATION_FACTOR));
    expect(ours.step).toBeGreaterThanOrEqual(Math.floor(r.default_minimize.iterations / ITERATION_FACTOR));
    expect(sameEnergy(ours.energy, r.default_minimize.energy)).toBe(true);
  });

  it.each(CASES)("$name: the studio's rule (RDKit's final largest gradient), iterations within the factor", ({ name }) => {
    const r = row(name);
    const ours = run(r, { gmax: r.default_minimize.gmax });
    expect(ours.converged).toBe(true);
    expect(ours.step).toBeLessThanOrEqual(Math.ceil(r.default_minimize.iterations * ITERATION_FACTOR));
    expect(sameEnergy(ours.energy, r.default_minimize.energy)).toBe(true);
  });

  it.each(CASES)("$name: L-BFGS (large molecules) reaches the same minimum", ({ name }) => {
    const r = row(name);
    const ours = run(r, { gmax: r.default_minimize.gmax, method: "lbfgs" });
    expect(ours.converged).toBe(true);
    expect(sameEnergy(ours.energy, r.default_minimize.energy)).toBe(true);
  });
});
