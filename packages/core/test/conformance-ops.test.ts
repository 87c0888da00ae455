/**
 * Conformance with pymatgen: every editing and building operation, applied by the core to real
 * files and generated structures (1 to 10,000 atoms), must load with Structure/Molecule.from_dict
 * and equal what pymatgen produces for the same operation: same site count, species, labels and
 * properties, formulas identical, coordinates within 1e-8 Angstrom.
 */
import { runPython, testdataPath } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import {
  addAtom,
  addAtoms,
  deleteAtoms,
  fromDict,
  merge,
  moveAtom,
  moveAtoms,
  replaceAtom,
  type Structure,
  structureFormula,
  structureReducedFormula,
  supercell,
  toDict,
} from "../src/index.ts";
import { generate, rng } from "./generate.ts";

const ORACLE = new URL("./oracle/ops.py", import.meta.url).pathname;
const FILES = [
  "structures/Cod_2100513.cif",
  "structures/POSCAR_LiFePO4",
  "structures/benzene.xyz",
  "lobster/NaCl/CONTCAR.gz",
].map(testdataPath);

interface Case {
  name: string;
  op: string;
  input: Record<string, unknown>;
  args: Record<string, unknown>;
  ours: Record<string, unknown>;
  formula: string;
  reduced: string;
}

interface Result {
  loads: boolean;
  error: string | null;
  n?: [number, number];
  has_lattice?: [boolean, boolean];
  formula?: [string, string];
  reduced_formula?: [string, string];
  species_equal?: boolean;
  labels_equal?: boolean;
  properties_equal?: boolean;
  max_dxyz?: number;
  max_dlattice?: number;
  density?: [number, number];
}

const water = generate({ n: 3, periodic: false, seed: 7 });

/** Every operation with arguments drawn from the structure itself. */
const casesFor = (name: string, dict: Record<string, unknown>, seed: number): Case[] => {
  const s = fromDict(dict);
  const r = rng(seed);
  const n = s.length;
  const idx = () => Math.floor(r() * n);
  const some = () => [...new Set(Array.from({ length: Math.max(1, Math.floor(n / 7)) }, idx))];
  const v = (scale = 3) =>
    [r() * scale - scale / 2, r() * scale - scale / 2, r() * scale - scale / 2] as [number, number, number];
  const out: Array<[string, Record<string, unknown>, Structure]> = [];
  const add = (op: string, args: Record<string, unknown>, result: Structure) => out.push([op, args, result]);
  const p = v(5);
  add("add_atom", { element: "O", position: p }, addAtom(s, "O", p).structure);
  const atoms = [
    { element: "H", xyz: v() },
    { element: "Pt", xyz: v() },
    { element: "C", xyz: v() },
  ];
  add("add_atoms", { atoms }, addAtoms(s, atoms).structure);
  const merged = (mode: string) => merge(s, fromDict(water), p, mode);
  add("merge", { incoming: water, position: p, mode: "preserve_lattice" }, merged("preserve_lattice"));
  add("merge", { incoming: water, position: p, mode: "to_molecule" }, merged("to_molecule"));
  if (n > 0) {
    const i = idx();
    const del = n > 1 ? some() : [0];
    add("delete_atoms", { indices: del }, deleteAtoms(s, del).structure);
    add("replace_atom", { index: i, new_element: "Au" }, replaceAtom(s, i, "Au").structure);
    add("move_atom", { index: i, new_position: p }, moveAtom(s, i, p).structure);
    const d = v(20);
    const mv = some();
    add("move_atoms", { indices: mv, displacement: d }, moveAtoms(s, mv, d).structure);
  }
  if (s.lattice && n > 0) {
    const scalings: number[][] = [
      [1, 1, 1],
      [2, 1, 1],
      [1, 3, 2],
      [2, 2, 2],
      [3, 1, 1],
    ];
    for (const sc of scalings.filter((x) => n * (x[0] as number) * (x[1] as number) * (x[2] as number) <= 10_000))
      add("supercell", { scaling: sc }, supercell(s, sc));
  }
  return out.map(([op, args, result]) => ({
    name: `${name} ${op} ${JSON.stringify(args.scaling ?? args.mode ?? "")}`,
    op,
    input: dict,
    args,
    ours: toDict(result) as unknown as Record<string, unknown>,
    formula: structureFormula(result),
    reduced: structureReducedFormula(result),
  }));
};

const GENERATED: Array<[string, Record<string, unknown>]> = [
  ["molecule 1", generate({ n: 1, periodic: false, seed: 1 })],
  ["molecule 12 props", generate({ n: 12, periodic: false, seed: 2, properties: true })],
  ["molecule 1000", generate({ n: 1000, periodic: false, seed: 3 })],
  ["crystal 1", generate({ n: 1, periodic: true, seed: 4 })],
  ["crystal 9 disordered", generate({ n: 9, periodic: true, seed: 5, disorder: true, properties: true })],
  ["crystal 100", generate({ n: 100, periodic: true, seed: 6 })],
  ["crystal 1250", generate({ n: 1250, periodic: true, seed: 8, properties: true })],
  ["crystal 10000", generate({ n: 10_000, periodic: true, seed: 9 })],
  ["molecule 10000", generate({ n: 10_000, periodic: false, seed: 10 })],
];

let cases: Case[] = [];
let results: Result[] = [];

beforeAll(async () => {
  const { parsed } = await runPython<{ parsed: Record<string, Record<string, unknown>> }>(ORACLE, { files: FILES });
  const inputs: Array<[string, Record<string, unknown>]> = [
    ...FILES.map((f): [string, Record<string, unknown>] => [
      f.split("/").slice(-2).join("/"),
      parsed[f] as Record<string, unknown>,
    ]),
    ...GENERATED,
  ];
  cases = inputs.flatMap(([name, dict], k) => casesFor(name, dict, 100 + k));
  ({ results } = await runPython<{ results: Result[] }>(ORACLE, { cases }, { timeoutMs: 600_000 }));
}, 600_000);

describe("operations equal pymatgen's", () => {
  it("covers every operation on real files and generated structures", () => {
    expect(new Set(cases.map((c) => c.op))).toEqual(
      new Set(["add_atom", "add_atoms", "delete_atoms", "replace_atom", "move_atom", "move_atoms", "supercell", "merge"]),
    );
    expect(cases.length).toBeGreaterThan(100);
  });

  it("every case matches", () => {
    const failures: string[] = [];
    for (const [k, c] of cases.entries()) {
      const r = results[k] as Result;
      const bad = (why: string) => void failures.push(`${c.name}: ${why}`);
      if (r.error) {
        bad(r.error);
        continue;
      }
      if (!r.loads || r.n?.[0] !== r.n?.[1]) {
        bad(r.loads ? `site count ${r.n}` : "does not load");
        continue;
      }
      if (r.has_lattice?.[0] !== r.has_lattice?.[1]) bad(`lattice presence ${r.has_lattice}`);
      if (r.formula?.[0] !== r.formula?.[1]) bad(`formula ${r.formula}`);
      if (c.formula !== r.formula?.[1]) bad(`our formula ${c.formula} vs ${r.formula?.[1]}`);
      if (c.reduced !== r.reduced_formula?.[1]) bad(`our reduced formula ${c.reduced} vs ${r.reduced_formula?.[1]}`);
      if (!r.species_equal) bad("species differ");
      if (!r.labels_equal) bad("labels differ");
      if (!r.properties_equal) bad("site properties differ");
      if (!((r.max_dxyz ?? Number.POSITIVE_INFINITY) <= 1e-8)) bad(`coordinates differ by ${r.max_dxyz} A`);
      if (r.max_dlattice !== undefined && !(r.max_dlattice <= 1e-8)) bad(`lattice differs by ${r.max_dlattice}`);
    }
    expect(failures).toEqual([]);
  });
});
