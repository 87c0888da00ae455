import { runPython, TESTDATA } from "atomstudio-testkit";
import { beforeAll, describe, expect, it } from "vitest";
import {
  fromDict,
  initSymmetry,
  Lattice,
  majorityElement,
  Structure,
  structureInfo,
  symmetryDistinctSites,
} from "../src/index.ts";

interface SitesCase {
  name: string;
  structure: unknown;
  equivalent_indices: number[][];
}

const ORACLE = new URL("./oracle/sites_oracle.py", import.meta.url).pathname;
let cases: SitesCase[] = [];

beforeAll(async () => {
  await initSymmetry();
  cases = await runPython<SitesCase[]>(ORACLE, { testdata: TESTDATA });
});

describe("symmetry-distinct sites against pymatgen's symmetrized structure", () => {
  it("covers the shared files, the bulk set, rutile and LiFePO4 supercells and a disordered alloy", () => {
    expect(cases.length).toBeGreaterThan(15);
  });

  it("gives the same classes (members, hence multiplicities)", () => {
    const bad: string[] = [];
    for (const c of cases) {
      const got = symmetryDistinctSites(fromDict(c.structure));
      const want = [...c.equivalent_indices].sort((a, b) => (a[0] as number) - (b[0] as number));
      const members = got.map((g) => g.members);
      if (JSON.stringify(members) !== JSON.stringify(want)) bad.push(`${c.name}: classes ${JSON.stringify(members)}`);
    }
    expect(bad).toEqual([]);
  });

  it("gives a molecule one class per site", () => {
    const m = new Structure({
      lattice: null,
      species: [[{ element: "O", occu: 1 }], [{ element: "H", occu: 1 }]],
      cart: new Float64Array(6).fill(0).map((_, k) => k),
    });
    expect(symmetryDistinctSites(m).map((g) => g.members)).toEqual([[0], [1]]);
  });
});

describe("majority species of a site (one rule for the info report, the selection panel and the viewer)", () => {
  const rows: [string, { element: string; occu: number }[], string][] = [
    ["ordered site", [{ element: "Fe", occu: 1 }], "Fe"],
    [
      "clear majority",
      [
        { element: "Au", occu: 0.3 },
        { element: "Cu", occu: 0.7 },
      ],
      "Cu",
    ],
    [
      "tie, Cu listed first",
      [
        { element: "Cu", occu: 0.5 },
        { element: "Au", occu: 0.5 },
      ],
      "Cu",
    ],
    [
      "tie, Au listed first: same answer",
      [
        { element: "Au", occu: 0.5 },
        { element: "Cu", occu: 0.5 },
      ],
      "Cu",
    ],
    [
      "tie of three, lowest electronegativity wins",
      [
        { element: "O", occu: 1 / 3 },
        { element: "Na", occu: 1 / 3 },
        { element: "Cl", occu: 1 / 3 },
      ],
      "Na",
    ],
    ["empty site", [], ""],
  ];
  it.each(rows)("%s", (_name, species, want) => {
    expect(majorityElement(species)).toBe(want);
  });

  it("structure-info names the tied site by the same rule whatever the listing order", () => {
    const lattice = new Lattice([
      [3.8, 0, 0],
      [0, 3.8, 0],
      [0, 0, 3.8],
    ]);
    const s = new Structure({
      lattice,
      species: [
        [
          { element: "Au", occu: 0.5 },
          { element: "Cu", occu: 0.5 },
        ],
        [
          { element: "Cu", occu: 0.5 },
          { element: "Au", occu: 0.5 },
        ],
      ],
      cart: new Float64Array([0, 0, 0, 1.9, 1.9, 0]),
    });
    expect(structureInfo(s).sites.map((x) => x.element)).toEqual(["Cu", "Cu"]);
  });
});
