import { describe, expect, it } from "vitest";
import { fromDict, structureFormula, structureReducedFormula, supercell, toDict } from "../src/index.ts";

const cu = {
  "@module": "pymatgen.core.structure",
  "@class": "Structure",
  charge: 0,
  lattice: {
    matrix: [
      [3.6, 0, 0],
      [0, 3.6, 0],
      [0, 0, 3.6],
    ],
    pbc: [true, true, true],
  },
  properties: {},
  sites: [
    { species: [{ element: "Cu", occu: 1 }], abc: [0, 0, 0], label: "Cu", properties: {} },
    { species: [{ element: "Au", occu: 1 }], abc: [0.5, 0.5, 0], label: "Au", properties: {} },
  ],
};

describe("structure core", () => {
  it("round-trips a pymatgen dictionary", () => {
    const d = toDict(fromDict(cu));
    expect(d["@class"]).toBe("Structure");
    expect(d.sites[1]?.xyz).toEqual([1.8, 1.8, 0]);
    if (d["@class"] === "Structure") expect(d.lattice.volume).toBeCloseTo(46.656, 10);
  });
  it("writes formulas as pymatgen does", () => {
    const s = supercell(fromDict(cu), [2, 1, 1]);
    expect(structureFormula(s)).toBe("Cu2 Au2");
    expect(structureReducedFormula(s)).toBe("CuAu");
    expect(s.labels).toEqual(["Cu_1", "Cu_2", "Au_1", "Au_2"]);
  });
});
