/**
 * Measurements against pymatgen: distances are `Structure.get_distance` (nearest image); angles
 * and dihedrals are pymatgen's `get_angle` / `get_dihedral` on the chain of nearest images (each
 * atom placed at the image `distance_and_image` picks relative to the one before).
 */
import { parseStructureFile, type Structure, toDict } from "atomstudio-core";
import { readTestdata, runPython } from "atomstudio-testkit";
import { describe, expect, it } from "vitest";
import { fromDict, measure } from "../src/index.ts";

const ORACLE = `
import json, sys
from pymatgen.core import Structure, Molecule
cases = json.load(sys.stdin)
out = []
for c in cases:
    d = c["structure"]
    s = (Structure if d["@class"] == "Structure" else Molecule).from_dict(d)
    idx = c["sites"]
    if isinstance(s, Molecule):
        pts = [s[i].coords for i in idx]
    else:
        pts = [s[idx[0]].coords]
        for a, b in zip(idx, idx[1:]):
            dist, image = s[a].distance_and_image(s[b])
            prev = pts[-1] - s[a].coords
            pts.append(s[b].coords + s.lattice.get_cartesian_coords(image) + prev)
    m = Molecule(["H"] * len(pts), pts)
    if len(idx) == 2:
        out.append(s.get_distance(idx[0], idx[1]))
    elif len(idx) == 3:
        out.append(m.get_angle(0, 1, 2))
    else:
        out.append(m.get_dihedral(0, 1, 2, 3))
print(json.dumps(out))
`;

const triclinic = fromDict({
  "@class": "Structure",
  lattice: {
    matrix: [
      [4.1, 0, 0],
      [1.3, 3.9, 0],
      [0.7, -0.9, 5.2],
    ],
  },
  sites: [
    ["O", [0.02, 0.03, 0.01]],
    ["H", [0.97, 0.1, 0.05]],
    ["H", [0.05, 0.95, 0.12]],
    ["C", [0.5, 0.48, 0.97]],
    ["N", [0.51, 0.55, 0.08]],
  ].map(([el, abc]) => ({ species: [{ element: el as string, occu: 1 }], abc: abc as number[] })),
});

const rows = (s: Structure, name: string, picks: number[][]) => picks.map((sites) => ({ name, s, sites }));

describe("measurements equal pymatgen's (periodic images respected)", async () => {
  const lifepo4 = parseStructureFile(readTestdata("structures/POSCAR_LiFePO4"), { filename: "POSCAR" }).structure;
  const benzene = parseStructureFile(readTestdata("structures/benzene.xyz"), { filename: "benzene.xyz" }).structure;
  const cases = [
    ...rows(triclinic, "triclinic across faces", [
      [0, 1],
      [0, 2],
      [1, 0, 2],
      [3, 4],
      [1, 0, 2, 3],
      [2, 0, 1, 4],
      [0, 3],
    ]),
    ...rows(lifepo4, "LiFePO4", [
      [0, 5],
      [4, 8, 12],
      [1, 9, 17, 20],
      [3, 27],
      [10, 22, 11],
    ]),
    ...rows(benzene, "benzene", [
      [0, 1],
      [0, 1, 2],
      [0, 1, 2, 3],
      [6, 0, 1, 7],
    ]),
  ];
  const expected = await runPython<number[]>(
    ORACLE,
    cases.map((c) => ({ structure: toDict(c.s), sites: c.sites })),
  );
  it.each(cases.map((c, i) => [c.name, c.sites.join("-"), c, expected[i] as number] as const))(
    "%s, sites %s",
    (_name, _sites, c, want) => {
      const got = measure(c.s, c.sites).value;
      expect(Math.abs(got - want)).toBeLessThan(1e-8);
    },
  );

  it("refuses fewer than 2 or more than 4 sites, and indices out of range", () => {
    expect(() => measure(triclinic, [0])).toThrow(/2, 3 or 4/);
    expect(() => measure(triclinic, [0, 1, 2, 3, 4])).toThrow(/2, 3 or 4/);
    expect(() => measure(triclinic, [0, 99])).toThrow(/out of range/);
  });
});
