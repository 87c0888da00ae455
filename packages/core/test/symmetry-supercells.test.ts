/**
 * Space groups of supercells agree with pymatgen's SpacegroupAnalyzer: plain supercells, the same
 * perturbed by 0.002 Angstrom, and with one atom substituted (lower symmetry). These go through
 * the translation reduction (translations.ts) before moyo; each must also stay fast.
 */
import { runPython, testdataPath } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { fromDict, initSymmetry, symmetryInfo } from "../src/index.ts";

interface Case {
  name: string;
  structure: Record<string, unknown>;
  number: number;
  symbol: string;
  n: number;
}
let cases: Case[] = [];

beforeAll(async () => {
  await initSymmetry();
  cases = await runPython<Case[]>(
    new URL("./oracle/symmetry_supercells.py", import.meta.url).pathname,
    testdataPath("structures/POSCAR_LiFePO4"),
  );
}, 300_000);

describe("symmetry of supercells", () => {
  it("has cases up to hundreds of atoms", () => {
    expect(cases.length).toBe(45);
    expect(Math.max(...cases.map((c) => c.n))).toBeGreaterThanOrEqual(256);
  });

  it("every case matches SpacegroupAnalyzer, each in well under a second", () => {
    const failures: string[] = [];
    for (const c of cases) {
      const t = performance.now();
      const info = symmetryInfo(fromDict(c.structure));
      const ms = performance.now() - t;
      if (info?.space_group_number !== c.number || info?.space_group !== c.symbol)
        failures.push(`${c.name}: ${info?.space_group} (${info?.space_group_number}) vs pymatgen ${c.symbol} (${c.number})`);
      if (ms > 2000) failures.push(`${c.name}: ${ms.toFixed(0)} ms`);
    }
    expect(failures).toEqual([]);
  });
});
