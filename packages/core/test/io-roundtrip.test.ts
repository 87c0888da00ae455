/**
 * Write then read gives the same structure, for every format that can hold it: the shared test
 * files, hand-made edge cases (site properties, oxidation states, partial occupancy, molecules)
 * and random structures (fast-check).
 */
import { readTestdata } from "atomstudio-testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  Lattice,
  parseStructureFile,
  type SiteSpecies,
  Structure,
  speciesOf,
  writeStructureFile,
  writeStructureFrames,
} from "../src/index.ts";
import { compareCellAndFrac } from "./oracle/io-compare.ts";

const read = (text: string, format: string): Structure[] => {
  const r = parseStructureFile(text, { format });
  return r.frames ?? [r.structure];
};

const speciesKey = (sp: SiteSpecies): string =>
  sp
    .map((e) => `${e.element}:${e.occu.toFixed(8)}:${e.oxidation_state ?? ""}`)
    .sort()
    .join(",");

/** CIF reading sorts by electronegativity and keeps only cell parameters: match sites by species and position. */
const sameUpToOrder = (a: Structure, b: Structure, tol: number): string[] => {
  const problems = compareCellAndFrac(a, a, tol); // sanity of a itself
  if (a.length !== b.length) return [`site count ${a.length} vs ${b.length}`];
  if (!a.lattice || !b.lattice) return ["both need a lattice"];
  const la = [...a.lattice.lengths, ...a.lattice.angles];
  const lb = [...b.lattice.lengths, ...b.lattice.angles];
  la.forEach((v, k) => {
    if (!(Math.abs(v - lb[k]!) <= tol)) problems.push(`lattice parameter ${k}: ${v} vs ${lb[k]}`);
  });
  const used = new Uint8Array(b.length);
  for (let i = 0; i < a.length; i++) {
    const key = speciesKey(a.species[i]!);
    let found = -1;
    for (let j = 0; j < b.length && found < 0; j++) {
      if (used[j] || speciesKey(b.species[j]!) !== key) continue;
      const df = [0, 1, 2].map((k) => {
        const d = a.frac[3 * i + k]! - b.frac[3 * j + k]!;
        return d - Math.round(d);
      });
      if (Math.hypot(...b.lattice.toCartesian(df)) <= tol) found = j;
    }
    if (found < 0) problems.push(`site ${i} (${key}) not found after the round trip`);
    else used[found] = 1;
  }
  return problems;
};

/** Exact-format round trip: same order, Cartesian positions and lattice within `tol`. */
const sameStructure = (
  a: Structure,
  b: Structure,
  tol: number,
  what: { lattice: boolean; props: boolean; oxidation?: boolean } = { lattice: true, props: true },
): string[] => {
  const key = (sp: SiteSpecies) =>
    what.oxidation === false ? sp.map((e) => `${e.element}:${e.occu}`).join(",") : speciesKey(sp);
  if (a.length !== b.length) return [`site count ${a.length} vs ${b.length}`];
  const problems: string[] = [];
  if (what.lattice) {
    if (!a.lattice !== !b.lattice) problems.push("lattice presence differs");
    else if (a.lattice && b.lattice) {
      const d = Math.max(...a.lattice.matrix.flatMap((r, i) => r.map((v, j) => Math.abs(v - b.lattice!.matrix[i]![j]!))));
      if (!(d <= tol)) problems.push(`lattice differs by ${d}`);
      if (a.lattice.pbc.join() !== b.lattice.pbc.join()) problems.push("pbc differs");
    }
  }
  for (let i = 0; i < a.length; i++) {
    if (key(a.species[i]!) !== key(b.species[i]!)) problems.push(`site ${i}: species differ`);
    const d = Math.hypot(...[0, 1, 2].map((k) => a.cart[3 * i + k]! - b.cart[3 * i + k]!));
    if (!(d <= tol)) problems.push(`site ${i}: moved ${d}`);
    if (what.props && JSON.stringify(a.siteProperties[i]) !== JSON.stringify(b.siteProperties[i]))
      problems.push(`site ${i}: properties ${JSON.stringify(a.siteProperties[i])} vs ${JSON.stringify(b.siteProperties[i])}`);
    if (problems.length > 5) break;
  }
  return problems;
};

const cubic = (a: number) =>
  new Lattice([
    [a, 0, 0],
    [0, a, 0],
    [0, 0, a],
  ]);
const make = (
  lattice: Lattice | null,
  els: string[],
  cart: number[],
  extra: Partial<ConstructorParameters<typeof Structure>[0]> = {},
) => new Structure({ lattice, species: els.map((e) => speciesOf(e)), cart: Float64Array.from(cart), ...extra });

const SD_VEL = make(cubic(5.43), ["Si", "Si"], [0, 0, 0, 1.3575, 1.3575, 1.3575], {
  siteProperties: [
    { selective_dynamics: [true, true, false], velocities: [0.001, 0.002, 0.003] },
    { selective_dynamics: [false, false, false], velocities: [-0.001, 0, 0.004] },
  ],
});
const TRICLINIC = new Lattice([
  [4.1, 0.2, -0.3],
  [0.5, 5.2, 0.1],
  [-0.4, 0.6, 6.3],
]);
const OXIDISED = new Structure({
  lattice: TRICLINIC,
  species: [[{ element: "Fe", occu: 1, oxidation_state: 3 }], [{ element: "O", occu: 1, oxidation_state: -2 }]],
  cart: Float64Array.from([0.1, 0.2, 0.3, 2.0, 2.5, 3.0]),
});
const FORCES = make(TRICLINIC, ["Cu", "Au", "Cu"], [0, 0, 0, 1, 1, 1, 2.5, 2.6, 2.7], {
  siteProperties: [{ forces: [0.1, -0.2, 0.3] }, { forces: [0, 0, 0.5] }, { forces: [-0.1, 0.2, -0.8] }],
  properties: { energy: -12.5, comment: "relaxed" },
});
const WATER = make(null, ["O", "H", "H"], [0, 0, 0, 0.9572, 0, 0, -0.24, 0.927, 0]);

const FILES: { name: string; structure: () => Structure }[] = [
  { name: "POSCAR_LiFePO4", structure: () => parseStructureFile(readTestdata("structures/POSCAR_LiFePO4")).structure },
  {
    name: "Cod_2100513.cif (disordered)",
    structure: () => parseStructureFile(readTestdata("structures/Cod_2100513.cif")).structure,
  },
  { name: "benzene.xyz (molecule)", structure: () => parseStructureFile(readTestdata("structures/benzene.xyz")).structure },
  {
    name: "MOF-5.pdb",
    structure: () => parseStructureFile(readTestdata("structures/MOF-5.pdb"), { filename: "MOF-5.pdb" }).structure,
  },
  { name: "selective dynamics + velocities", structure: () => SD_VEL },
  { name: "oxidation states, triclinic", structure: () => OXIDISED },
  { name: "forces and energy, triclinic", structure: () => FORCES },
  { name: "water molecule", structure: () => WATER },
];

const ordered = (s: Structure) => s.species.every((sp) => sp.length === 1 && sp[0]!.occu === 1);

describe("round trips through every format", () => {
  it.each(FILES)("$name", ({ structure }) => {
    const s = structure();
    // json keeps everything (coordinates are re-derived from abc, hence a tolerance).
    const js = read(writeStructureFile(s, "json"), "json")[0]!;
    expect(sameStructure(s, js, 1e-9)).toEqual([]);
    expect([js.labels, js.properties, js.charge]).toEqual([s.labels, s.properties, s.charge]);
    if (s.lattice) {
      expect(sameUpToOrder(s, read(writeStructureFile(s, "cif"), "cif")[0]!, 1e-6)).toEqual([]);
    }
    if (!ordered(s)) return;
    // Only CIF and JSON hold oxidation states; POSCAR holds only its own site properties.
    const plain = { lattice: true, props: false, oxidation: false };
    const vasp = Object.keys(s.siteProperties[0] ?? {}).every((k) => k === "selective_dynamics" || k === "velocities");
    // XYZ keeps elements and Cartesian positions only.
    expect(sameStructure(s, read(writeStructureFile(s, "xyz"), "xyz")[0]!, 1e-9, { ...plain, lattice: false })).toEqual([]);
    const ext = read(writeStructureFile(s, "extxyz"), "extxyz")[0]!;
    expect(sameStructure(s, ext, 1e-9, { lattice: true, props: true, oxidation: false })).toEqual([]);
    expect(ext.properties).toEqual(s.properties);
    // PDB stores 3 decimals and cell parameters (its own orientation).
    expect(compareCellAndFrac(s, read(writeStructureFile(s, "pdb"), "pdb")[0]!, 2e-3, 1e-2)).toEqual([]);
    if (s.lattice) {
      const poscar = read(writeStructureFile(s, "poscar"), "poscar")[0]!;
      expect(sameStructure(s, poscar, 1e-9, { lattice: true, props: vasp, oxidation: false })).toEqual([]);
      expect(sameStructure(s, read(writeStructureFile(s, "xdatcar"), "xdatcar")[0]!, 1e-9, plain)).toEqual([]);
    }
  });

  it("keeps trajectories: XDATCAR, XYZ, extended XYZ, PDB, JSON", () => {
    const frames = parseStructureFile(readTestdata("md/XDATCAR.MD"), { filename: "XDATCAR" }).frames!;
    for (const format of ["xdatcar", "xyz", "extxyz", "pdb", "json"]) {
      const back = read(writeStructureFrames(frames, format), format);
      expect(back.length, format).toBe(frames.length);
      back.forEach((b, k) => {
        const a = frames[k]!;
        const problems =
          format === "pdb"
            ? compareCellAndFrac(a, b, 2e-3, 1e-2)
            : sameStructure(a, b, 1e-9, { lattice: format !== "xyz", props: false });
        expect(problems, `${format} frame ${k}`).toEqual([]);
      });
    }
  });

  it("writes variable-cell trajectories with a header per cell (XDATCAR)", () => {
    const a = make(cubic(4), ["Na", "Cl"], [0, 0, 0, 2, 2, 2]);
    const b = make(cubic(4.2), ["Na", "Cl"], [0, 0, 0, 2.1, 2.1, 2.1]);
    const back = read(writeStructureFrames([a, b, b], "xdatcar"), "xdatcar");
    expect(back.map((s) => s.lattice!.matrix[0]![0])).toEqual([4, 4.2, 4.2]);
    expect(sameStructure(b, back[2]!, 1e-9, { lattice: true, props: false })).toEqual([]);
  });
});

const ELEMENTS = ["H", "C", "N", "O", "Na", "Si", "Cl", "Fe", "Cu", "Zr", "Ba", "Au", "U"];

/** Random cells with sites far enough apart that CIF reading does not merge or snap them. */
const arbStructure = fc
  .record({
    lengths: fc.tuple(
      fc.double({ min: 3, max: 15, noNaN: true }),
      fc.double({ min: 3, max: 15, noNaN: true }),
      fc.double({ min: 3, max: 15, noNaN: true }),
    ),
    angles: fc.tuple(
      fc.double({ min: 70, max: 110, noNaN: true }),
      fc.double({ min: 70, max: 110, noNaN: true }),
      fc.double({ min: 70, max: 110, noNaN: true }),
    ),
    sites: fc.array(
      fc.record({
        el: fc.constantFrom(...ELEMENTS),
        f: fc.tuple(
          fc.double({ min: 0, max: 0.999, noNaN: true }),
          fc.double({ min: 0, max: 0.999, noNaN: true }),
          fc.double({ min: 0, max: 0.999, noNaN: true }),
        ),
      }),
      { minLength: 1, maxLength: 12 },
    ),
  })
  .filter(({ sites }) =>
    sites.every(
      (s, i) =>
        s.f.every((x) => Math.abs(x * 3 - 1) > 1e-3 && Math.abs(x * 1.5 - 1) > 1e-3) &&
        sites.every((t, j) => j <= i || s.f.some((x, k) => Math.abs(x - t.f[k]!) > 1e-2)),
    ),
  )
  .map(({ lengths, angles, sites }) => {
    const l = Lattice.fromParameters(...lengths, ...angles);
    const cart: number[] = [];
    for (const s of sites) cart.push(...l.toCartesian(s.f));
    return make(
      l,
      sites.map((s) => s.el),
      cart,
    );
  });

describe("random structures survive every format (fast-check)", () => {
  it("json, cif, poscar, extxyz, xyz, pdb", () => {
    fc.assert(
      fc.property(arbStructure, (s) => {
        expect(sameStructure(s, read(writeStructureFile(s, "json"), "json")[0]!, 1e-9)).toEqual([]);
        expect(sameUpToOrder(s, read(writeStructureFile(s, "cif"), "cif")[0]!, 1e-6)).toEqual([]);
        expect(sameStructure(s, read(writeStructureFile(s, "poscar"), "poscar")[0]!, 1e-9)).toEqual([]);
        expect(sameStructure(s, read(writeStructureFile(s, "extxyz"), "extxyz")[0]!, 1e-9)).toEqual([]);
        expect(sameStructure(s, read(writeStructureFile(s, "xyz"), "xyz")[0]!, 1e-9, { lattice: false, props: false })).toEqual(
          [],
        );
        expect(compareCellAndFrac(s, read(writeStructureFile(s, "pdb"), "pdb")[0]!, 5e-3, 1e-2)).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });
});
