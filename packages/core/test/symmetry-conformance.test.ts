import { runPython, TESTDATA } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import {
  conventionalStandardStructure,
  fromDict,
  initSymmetry,
  primitiveStandardStructure,
  structureInfo,
  symmetryInfo,
} from "../src/index.ts";

interface SymCase {
  name: string;
  structure: unknown;
  symbol: string;
  number: number;
  crystal_system: string;
  point_group: string;
  conventional: { n_sites: number; volume: number; formula: string };
  primitive: { n_sites: number; volume: number; formula: string };
}

const ORACLE = new URL("./oracle/symmetry_oracle.py", import.meta.url).pathname;
let cases: SymCase[] = [];

beforeAll(async () => {
  await initSymmetry();
  cases = await runPython<SymCase[]>(ORACLE, { testdata: TESTDATA, seed: 7, n_perturbed: 3, amplitude: 0.002 });
});

describe("symmetry conformance with pymatgen's SpacegroupAnalyzer", () => {
  it("covers the shared structure files, the bulk set and perturbed copies", () => {
    expect(cases.length).toBeGreaterThan(60);
  });

  it("gives the same space group symbol, number, crystal system and point group", () => {
    const mismatches: string[] = [];
    for (const c of cases) {
      const got = symmetryInfo(fromDict(c.structure));
      const want = {
        space_group: c.symbol,
        space_group_number: c.number,
        crystal_system: c.crystal_system,
        point_group: c.point_group,
      };
      if (JSON.stringify(got) !== JSON.stringify(want))
        mismatches.push(`${c.name}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    }
    expect(mismatches).toEqual([]);
  });

  it("standard cells have pymatgen's atom count, volume and formula and keep the space group", () => {
    // Same cells as pymatgen's get_conventional/primitive_standard_structure up to the choice
    // of axes and orientation (pymatgen reorders and rotates axes per crystal system).
    const bad: string[] = [];
    for (const c of cases.filter((c) => !c.name.includes("~"))) {
      const s = fromDict(c.structure);
      for (const [kind, got, want] of [
        ["conventional", conventionalStandardStructure(s), c.conventional],
        ["primitive", primitiveStandardStructure(s), c.primitive],
      ] as const) {
        if (!got?.lattice) {
          bad.push(`${c.name} ${kind}: none`);
          continue;
        }
        const ok =
          got.length === want.n_sites &&
          Math.abs(got.lattice.volume - want.volume) <= 1e-6 * want.volume &&
          structureInfo(got).formula === want.formula &&
          symmetryInfo(got)?.space_group_number === c.number;
        if (!ok)
          bad.push(`${c.name} ${kind}: ${got.length} sites, volume ${got.lattice.volume} vs ${want.n_sites}, ${want.volume}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe("structureInfo", () => {
  it("reports the interface's fields for a crystal", () => {
    const c = cases.find((c) => c.name === "POSCAR_LiFePO4");
    if (!c) throw new Error("oracle lacks LiFePO4");
    const info = structureInfo(fromDict(c.structure));
    expect(info.formula).toBe("Li4 Fe4 P4 O16");
    expect(info.reduced_formula).toBe("LiFePO4");
    expect(info.n_atoms).toBe(28);
    expect(info.elements).toEqual(["Li", "Fe", "P", "O"]);
    expect(info.element_counts).toEqual({ Li: 4, Fe: 4, P: 4, O: 16 });
    expect(info.has_lattice).toBe(true);
    expect(info.is_molecule).toBe(false);
    expect(info.symmetry).toEqual({
      space_group: "Pnma",
      space_group_number: 62,
      crystal_system: "orthorhombic",
      point_group: "mmm",
    });
    expect(info.lattice?.matrix).toHaveLength(3);
    expect(info.density).toBeGreaterThan(3.4);
    expect(info.sites[5]).toMatchObject({ index: 5, element: expect.any(String), label: expect.any(String) });
    expect(info.sites[5]?.abc).toHaveLength(3);
  });

  it("gives null lattice, symmetry and density for a molecule", () => {
    const info = structureInfo(
      fromDict({
        "@class": "Molecule",
        sites: [
          { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 0] },
          { species: [{ element: "H", occu: 1 }], xyz: [0.96, 0, 0] },
          { species: [{ element: "H", occu: 1 }], xyz: [-0.24, 0.93, 0] },
        ],
      }),
    );
    expect(info).toMatchObject({ formula: "H2 O1", reduced_formula: "H2O", n_atoms: 3, has_lattice: false, lattice: null });
    expect(info).toMatchObject({ symmetry: null, density: null, is_molecule: true });
    expect(info.sites[0]).toEqual({ index: 0, element: "O", xyz: [0, 0, 0], abc: [], label: "O" });
  });
});
