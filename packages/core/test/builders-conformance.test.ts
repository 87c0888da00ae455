/**
 * The core builders against pymatgen run on the same inputs: strain (apply_strain on lattice
 * axes, Deformation in the Cartesian frame, symmetric shear) within 1e-8, and doping /
 * substitution grouped into the same symmetry-distinct structures as StructureMatcher groups them.
 */
import { runPython, TESTDATA } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Assignment,
  dope,
  fromDict,
  initSymmetry,
  randomSubstitute,
  type Structure,
  strain,
  substitute,
  toDict,
} from "../src/index.ts";

const ORACLE = new URL("./oracle/build_oracle.py", import.meta.url).pathname;
let hosts: Record<string, unknown> = {};
const host = (name: string): Structure => fromDict(hosts[name]);

beforeAll(async () => {
  await initSymmetry();
  hosts = await runPython<Record<string, unknown>>(ORACLE, { mode: "hosts", testdata: TESTDATA });
});

type StrainRow = [
  string,
  { type: string; axis?: string; frame?: string; plane?: string; magnitude: number; nSteps?: number; sweep?: string },
];
const strainRows: StrainRow[] = [
  ["rutile", { type: "uniaxial", axis: "a", magnitude: 0.02 }],
  ["rutile", { type: "uniaxial", axis: "c", magnitude: -0.03 }],
  ["LiFePO4", { type: "uniaxial", axis: "b", magnitude: 0.015 }],
  ["LiFePO4", { type: "biaxial", magnitude: 0.01, nSteps: 5 }],
  ["Mg_hcp", { type: "uniaxial", axis: "a", magnitude: 0.04 }],
  ["Mg_hcp", { type: "uniaxial", axis: "x", frame: "cartesian", magnitude: 0.04 }],
  ["triclinic", { type: "uniaxial", axis: "a", magnitude: 0.05 }],
  ["triclinic", { type: "biaxial", magnitude: -0.02 }],
  ["triclinic", { type: "biaxial", frame: "cartesian", magnitude: -0.02 }],
  ["triclinic", { type: "hydrostatic", magnitude: 0.03, nSteps: 3, sweep: "one_sided" }],
  ["triclinic", { type: "shear", plane: "xy", magnitude: 0.02 }],
  ["triclinic", { type: "shear", plane: "yz", magnitude: -0.01, nSteps: 4 }],
  ["Cod_2100513", { type: "shear", plane: "xz", magnitude: 0.03 }],
  ["Cod_2100513", { type: "hydrostatic", magnitude: -0.05, nSteps: 3, sweep: "one_sided" }],
];

describe("strain: the same lattices and fractional coordinates as pymatgen within 1e-8", () => {
  it("matches apply_strain / Deformation on every row", async () => {
    const cases = strainRows.map(([name, o]) => {
      const r = strain(host(name), o);
      return {
        host: hosts[name],
        options: { frame: "lattice", axis: "c", plane: "xy", ...o },
        values: r.strains,
        ours: r.structures.map(toDict),
      };
    });
    const got = await runPython<{ lattice: number; frac: number }[]>(ORACLE, { mode: "strain", cases });
    const bad = got.map((g, k) => [strainRows[k], g] as const).filter(([, g]) => !(g.lattice <= 1e-8 && g.frac <= 1e-8));
    expect(bad).toEqual([]);
  });

  it("strains a non-orthogonal cell along its lattice axis: only a changes (§5.1 fixed)", () => {
    const s = host("triclinic");
    const [out] = strain(s, { type: "uniaxial", axis: "a", magnitude: 0.1 }).structures;
    const [a, b, c] = s.lattice?.lengths ?? [0, 0, 0];
    const [a2, b2, c2] = out?.lattice?.lengths ?? [0, 0, 0];
    expect(a2 / a).toBeCloseTo(1.1, 12);
    expect(b2).toBeCloseTo(b, 12);
    expect(c2).toBeCloseTo(c, 12);
  });

  it("keeps the sign of a one-sided sweep and caps the steps (§5.2 fixed)", () => {
    expect(strain(host("rutile"), { type: "hydrostatic", magnitude: -0.03, nSteps: 3, sweep: "one_sided" }).strains).toEqual([
      -0.01, -0.02, -0.03,
    ]);
    expect(() => strain(host("rutile"), { type: "hydrostatic", magnitude: 0.01, nSteps: 101 })).toThrow(/n_steps/);
  });
});

interface GroupResult {
  sizes: number[];
  one_per_group: boolean;
}

describe("doping and substitution: StructureMatcher's symmetry-distinct structures", () => {
  const dopingRows: [string, string, string, number][] = [
    ["rutile_2x1x1", "O", "F", 2],
    ["LiFePO4", "Li", "Na", 2],
    ["LiFePO4", "Fe", "Mn", 2],
    ["Pt_2x1x1", "Pt", "Ni", 2],
    ["Pt_2x1x1", "Pt", "Ni", 3],
    ["Pt_2x2x1", "Pt", "Au", 2],
  ];
  it("enumerated doping: same number of classes and class sizes, one representative per class", async () => {
    const cases = dopingRows.map(([name, hostEl, dopant, k]) => {
      const s = host(name);
      const r = dope(s, { dopant, hostElement: hostEl, concentration: k, enumerate: true, maxStructures: 1000 });
      const pool = [...Array(s.length).keys()].filter((i) => s.species[i]?.[0]?.element === hostEl);
      const configurations: Assignment[] = [];
      const rec = (start: number, chosen: number[]) => {
        if (chosen.length === k) {
          configurations.push(chosen.map((i) => [i, dopant] as const));
          return;
        }
        for (let j = start; j < pool.length; j++) rec(j + 1, [...chosen, pool[j] as number]);
      };
      rec(0, []);
      return { host: hosts[name], configurations, ours: r.structures.map(toDict), multiplicities: r.multiplicities };
    });
    const got = await runPython<GroupResult[]>(ORACLE, { mode: "groups", cases });
    const rows = got.map((g, k) => ({
      row: dopingRows[k]?.join(" "),
      sizes: g.sizes,
      ours: [...(cases[k]?.multiplicities ?? [])].sort((a, b) => a - b),
      one_per_group: g.one_per_group,
    }));
    for (const r of rows) {
      expect(r.ours, r.row).toEqual(r.sizes);
      expect(r.one_per_group, r.row).toBe(true);
    }
  });

  it("combinatorial substitution: products equal by symmetry are one structure", async () => {
    const s = host("LiFePO4");
    const li = [...Array(s.length).keys()].filter((i) => s.species[i]?.[0]?.element === "Li");
    const groups = [
      { targetIndices: li.slice(0, 2), replacementElements: ["Na", "K"] },
      { targetIndices: li.slice(2), replacementElements: ["Na", "K"] },
    ];
    const r = substitute(s, groups, 100);
    const configurations = r.n_configurations;
    expect(configurations).toBe(4);
    const all: Assignment[] = [];
    for (const e1 of ["Na", "K"])
      for (const e2 of ["Na", "K"])
        all.push([...li.slice(0, 2).map((i) => [i, e1] as const), ...li.slice(2).map((i) => [i, e2] as const)]);
    const [g] = await runPython<GroupResult[]>(ORACLE, {
      mode: "groups",
      cases: [{ host: hosts.LiFePO4, configurations: all, ours: r.structures.map(toDict) }],
    });
    expect([...r.multiplicities].sort()).toEqual(g?.sizes);
    expect(g?.one_per_group).toBe(true);
  });

  it("cuts an enumeration at max_structures and says so (§5.6 fixed)", () => {
    const r = dope(host("Pt_2x2x1"), { dopant: "Au", hostElement: "Pt", concentration: 2, enumerate: true, maxStructures: 1 });
    expect(r.structures.length).toBe(1);
    expect(r.truncated).toBe(true);
  });

  it("doping without enumeration draws sites at random with a seed, not the first N (§5.5 fixed)", () => {
    const s = host("Pt_2x2x1");
    const picks = [1, 2, 3, 4, 5, 6].map(
      (seed) => dope(s, { dopant: "Au", hostElement: "Pt", concentration: 2, seed, maxStructures: 10 }).labels[0],
    );
    expect(new Set(picks).size).toBeGreaterThan(1);
    expect(dope(s, { dopant: "Au", hostElement: "Pt", concentration: 2, seed: 3, maxStructures: 10 }).labels[0]).toBe(picks[2]);
    expect(() => dope(s, { dopant: "Au", hostElement: "Pt", concentration: 17, maxStructures: 10 })).toThrow(/concentration/);
    expect(() => dope(s, { dopant: "Au", hostElement: "Pt", concentration: -1, maxStructures: 10 })).toThrow(/concentration/);
  });

  it("random substitution deduplicates by symmetry and is reproducible by seed (§5.8 fixed)", async () => {
    const s = host("Pt_2x2x1");
    const o = { hostElement: "Pt", dopants: [{ element: "Au", count: 2 }], nSamples: 20, deduplicate: true, seed: 42 };
    const r = randomSubstitute(s, o);
    expect(randomSubstitute(s, o).labels).toEqual(r.labels);
    expect(JSON.stringify(randomSubstitute(s, o).structures.map(toDict))).toBe(JSON.stringify(r.structures.map(toDict)));
    const [groups] = await runPython<number[]>(ORACLE, { mode: "distinct", cases: [{ ours: r.structures.map(toDict) }] });
    // every returned structure is its own StructureMatcher class
    expect(groups).toBe(r.structures.length);
    // 2 Au among 16 fcc sites of a 2x2x1 cell: all classes are found well within 50 x n_samples draws
    const all = dope(s, { dopant: "Au", hostElement: "Pt", concentration: 2, enumerate: true, maxStructures: 1000 });
    expect(r.structures.length).toBe(all.structures.length);
  });
});
