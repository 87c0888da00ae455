/**
 * The core's UFF against RDKit's (PyPI rdkit, run directly on the same molecules): energies and
 * analytic gradients within 1e-6 relative, bonds perceived from the bare geometry giving the same
 * energy, finite-difference gradients, and minimised geometries within 0.01 Å RMSD of RDKit's.
 * Starting geometries are RDKit embeddings displaced at random (seeded), so every term is strained.
 */

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AtomStudioError, fromDict, parseStructureFile } from "atomstudio-core";
import { readTestdata, runPython } from "atomstudio-testkit";
import { describe, expect, it } from "vitest";
import { minimize, perceiveBonds, relaxWithUff, UffField, uffEnergy } from "../src/forcefield/uff/index.ts";
import { bestRmsd } from "./uff-support.ts";

const ORACLE = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "oracle/uff_oracle.py"), "utf8");

// One molecule per row; `covers` names the UFF terms or typing paths it exercises.
const CASES: { name: string; smiles: string; covers: string; minimize?: false; perceive?: false }[] = [
  { name: "butane", smiles: "CCCC", covers: "sp3-sp3 torsions, 1-4 vdW" },
  { name: "cyclohexane", smiles: "C1CCCCC1", covers: "ring sp3" },
  { name: "benzene", smiles: "c1ccccc1", covers: "aromatic C_R, bond order 1.5, inversion" },
  { name: "toluene", smiles: "Cc1ccccc1", covers: "sp2-sp3 torsion next to sp2" },
  { name: "pyridine", smiles: "c1ccncc1", covers: "aromatic N_R" },
  { name: "pyrrole", smiles: "c1cc[nH]c1", covers: "two-electron donor N" },
  { name: "furan", smiles: "c1ccoc1", covers: "O_R" },
  { name: "thiophene", smiles: "c1ccsc1", covers: "S_R" },
  { name: "naphthalene", smiles: "c1ccc2ccccc2c1", covers: "fused aromatic rings" },
  { name: "phenol", smiles: "Oc1ccccc1", covers: "conjugated O (O_R)" },
  { name: "N-methylacetamide", smiles: "CNC(C)=O", covers: "amide: conjugated N_R, C bound to sp2 O inversion" },
  { name: "acetic acid", smiles: "CC(=O)O", covers: "carboxylic acid" },
  { name: "propene", smiles: "CC=C", covers: "double bond C_2" },
  { name: "propyne", smiles: "CC#C", covers: "sp C_1 linear angle" },
  { name: "acetonitrile", smiles: "CC#N", covers: "N_1" },
  { name: "dimethyl sulfoxide", smiles: "CS(C)=O", covers: "S_3+4" },
  { name: "dimethyl sulfone", smiles: "CS(C)(=O)=O", covers: "S_3+6" },
  { name: "trimethylphosphine", smiles: "CP(C)C", covers: "P_3+3 inversion" },
  { name: "phosphoric acid", smiles: "OP(=O)(O)O", covers: "P_3+5" },
  { name: "hydrogen peroxide", smiles: "OO", covers: "group 6 sp3-sp3 torsion" },
  { name: "dimethyl disulfide", smiles: "CSSC", covers: "S-S torsion" },
  { name: "diethyl ether", smiles: "CCOCC", covers: "sp3 O next to sp3 C torsion" },
  { name: "chlorotrifluoromethane", smiles: "FC(F)(F)Cl", covers: "halogens" },
  { name: "bromobenzene", smiles: "Brc1ccccc1", covers: "Br on aromatic ring" },
  { name: "acetate", smiles: "CC(=O)[O-]", covers: "anion" },
  { name: "methylammonium", smiles: "C[NH3+]", covers: "cation, four-coordinate N" },
  { name: "cyclopropene", smiles: "C1=CC1", covers: "sp2 in a three-membered ring" },
  { name: "cyclobutene", smiles: "C1=CCC1", covers: "sp2 in a four-membered ring" },
  // ETKDG's PF5 puts two fluorines 1.28 Å apart, so no geometric rule recovers its bonds.
  { name: "phosphorus pentafluoride", smiles: "FP(F)(F)(F)F", covers: "trigonal bipyramid angles", perceive: false },
  { name: "tetrachlorozincate", smiles: "Cl[Zn@TH1](Cl)(Cl)Cl", covers: "metal Zn3+2" },
  // Square-planar Pt: the minimisers may settle in different local minima of the 90° Fourier term.
  { name: "dichlorodimethylplatinum", smiles: "C[Pt@SP1](C)(Cl)Cl", covers: "metal Pt4+2 (square planar)", minimize: false },
  { name: "hexaammineiron", smiles: "[NH3][Fe@OH1]([NH3])([NH3])([NH3])([NH3])[NH3]", covers: "metal Fe6+2 (octahedral)" },
  { name: "tetramethylsilane", smiles: "C[Si](C)(C)C", covers: "Si3" },
  { name: "trimethylarsine", smiles: "C[As](C)C", covers: "As3+3 inversion" },
];

interface OracleRow {
  name: string;
  z: number[];
  formal_charges: number[];
  charge: number;
  bonds: [number, number, number][];
  positions: number[];
  energy: number;
  gradient: number[];
  minimized: { converged: boolean; positions: number[]; energy: number };
}

const graphOf = (r: OracleRow) => ({
  z: r.z,
  formalCharges: r.formal_charges,
  bonds: r.bonds.map(([a, b, order]) => ({ a, b, order })),
});

const maxRelative = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let scale = 0;
  let err = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(b[i] as number));
    err = Math.max(err, Math.abs((a[i] as number) - (b[i] as number)));
  }
  return err / scale;
};

describe("UFF equals RDKit's UFF", async () => {
  const rows = await runPython<OracleRow[]>(ORACLE, {
    cases: CASES.map((c) => ({ name: c.name, smiles: c.smiles, seed: 7, jitter: 0.05 })),
    minimize: true,
  });
  const byName = new Map(rows.map((r) => [r.name, r]));
  const row = (name: string) => byName.get(name) as OracleRow;

  it.each(CASES)("$name ($covers): energy and gradient", ({ name }) => {
    const r = row(name);
    const field = new UffField(graphOf(r), r.positions);
    const g = new Float64Array(r.positions.length);
    const e = field.energy(r.positions, g);
    expect(Math.abs(e - r.energy) / Math.abs(r.energy)).toBeLessThan(1e-6);
    expect(maxRelative(g, r.gradient)).toBeLessThan(1e-6);
  });

  it.each(CASES.filter((c) => c.perceive !== false))(
    "$name: bonds perceived from the geometry give RDKit's energy",
    ({ name }) => {
      const r = row(name);
      const field = new UffField(perceiveBonds(r.z, r.positions, r.charge), r.positions);
      expect(Math.abs(field.energy(r.positions) - r.energy) / Math.abs(r.energy)).toBeLessThan(1e-6);
    },
  );

  it.each(CASES)("$name: analytic gradient equals central finite differences", ({ name }) => {
    const r = row(name);
    const field = new UffField(graphOf(r), r.positions);
    const x = Float64Array.from(r.positions);
    const g = new Float64Array(x.length);
    field.energy(x, g);
    const h = 1e-5;
    const fd = new Float64Array(x.length);
    for (let i = 0; i < x.length; i++) {
      const x0 = x[i] as number;
      x[i] = x0 + h;
      const ep = field.energy(x);
      x[i] = x0 - h;
      const em = field.energy(x);
      x[i] = x0;
      fd[i] = (ep - em) / (2 * h);
    }
    expect(maxRelative(g, fd)).toBeLessThan(1e-5);
  });

  it.each(CASES.filter((c) => c.minimize !== false))("$name: minimised geometry within 0.01 Å of RDKit's", ({ name }) => {
    const r = row(name);
    expect(r.minimized.converged).toBe(true);
    const field = new UffField(graphOf(r), r.positions);
    let last: { x: Float64Array; energy: number; converged: boolean } | undefined;
    for (const step of minimize((x, g) => field.energy(x, g), r.positions, { gmax: 1e-5, maxSteps: 5000 })) last = step;
    expect(last?.converged).toBe(true);
    expect(Math.abs((last?.energy as number) - r.minimized.energy)).toBeLessThan(
      1e-5 * Math.max(1, Math.abs(r.minimized.energy)),
    );
    expect(bestRmsd(last?.x as Float64Array, r.minimized.positions, r.z, r.bonds)).toBeLessThan(0.01);
  });

  it("frozen atoms never move during a relaxation", () => {
    const r = row("N-methylacetamide");
    const species = r.z.map((z) => [{ element: ["", "H", "", "", "", "", "C", "N", "O"][z] as string, occu: 1 }]);
    const s = fromDict({
      "@class": "Molecule",
      charge: 0,
      sites: species.map((sp, i) => ({ species: sp, xyz: r.positions.slice(3 * i, 3 * i + 3) })),
    });
    let last: ReturnType<typeof relaxWithUff> extends Generator<infer T> ? T : never = undefined as never;
    for (const step of relaxWithUff(s, { fmax: 0.01, maxSteps: 500, frozen: [0, 2] })) last = step;
    for (const i of [0, 2]) expect(last.structure.position(i)).toEqual(s.position(i));
    expect(last.converged).toBe(true);
    expect(last.energy).toBeLessThan(uffEnergy(s).energy);
  });
});

describe("UFF refuses what it does not cover, with coded errors", () => {
  const expectCode = (f: () => unknown, code: string) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(AtomStudioError);
      expect((e as AtomStudioError).code).toBe(code);
      return e as AtomStudioError;
    }
    throw new Error(`expected ${code}`);
  };

  it.each([
    [
      "a crystal",
      () => parseStructureFile(readTestdata("structures/POSCAR_LiFePO4"), { filename: "POSCAR" }).structure,
      "PERIODIC_NOT_SUPPORTED",
    ],
  ])("%s → %s", (_what, make, code) => {
    expectCode(() => uffEnergy(make()), code);
  });

  it("sulfur hexafluoride (no S_6+6 type in UFF): UNSUPPORTED_ATOM_TYPES naming the atom", () => {
    const d = 1.56;
    const sites = [
      ["S", [0, 0, 0]],
      ["F", [d, 0, 0]],
      ["F", [-d, 0, 0]],
      ["F", [0, d, 0]],
      ["F", [0, -d, 0]],
      ["F", [0, 0, d]],
      ["F", [0, 0, -d]],
    ] as const;
    const s = fromDict({ "@class": "Molecule", sites: sites.map(([el, xyz]) => ({ species: [{ element: el, occu: 1 }], xyz })) });
    const e = expectCode(() => uffEnergy(s), "UNSUPPORTED_ATOM_TYPES");
    expect(e.details).toMatchObject({ atoms: [0], labels: ["S_6+6"] });
    expect(e.message).toContain("0 (S_6+6)");
  });
});

describe("optional electrostatics (off by default, as in RDKit)", () => {
  it("adds Coulomb terms whose gradient equals finite differences", () => {
    const z = [8, 1, 1, 8, 1, 1];
    const x = [0, 0, 0, 0.96, 0, 0, -0.24, 0.93, 0, 2.9, 0.1, 0.2, 3.3, 0.9, 0.1, 3.2, -0.6, 0.7];
    const graph = perceiveBonds(z, x);
    const plain = new UffField(graph, x);
    const charged = new UffField(graph, x, {
      charges: [-0.8, 0.4, 0.4, -0.8, 0.4, 0.4],
      ignoreInterfragmentInteractions: false,
    });
    expect(charged.termCounts.electrostatic).toBe(9);
    expect(plain.termCounts.electrostatic).toBe(0);
    const g = new Float64Array(x.length);
    charged.energy(x, g);
    const h = 1e-5;
    const xs = Float64Array.from(x);
    for (let i = 0; i < xs.length; i++) {
      const x0 = xs[i] as number;
      xs[i] = x0 + h;
      const ep = charged.energy(xs);
      xs[i] = x0 - h;
      const em = charged.energy(xs);
      xs[i] = x0;
      expect((ep - em) / (2 * h)).toBeCloseTo(g[i] as number, 5);
    }
  });
});
