/** Slab, structure info and standard cells over HTTP (their pymatgen conformance lives in the core's tests). */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cuCell, makeApp, water } from "./helpers.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await makeApp();
});
afterAll(() => app.close());
const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, payload: payload as object });

describe("slab", () => {
  it("cuts Cu(111) by layers with the interface's SlabResult", async () => {
    const res = await post("/api/structure-build/slab", { structure: cuCell, miller: [1, 1, 1], thickness: 4 });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(
      [
        "formula",
        "miller",
        "n_atoms",
        "n_terminations",
        "structure",
        "surface_area",
        "termination_index",
        "thickness_angstroms",
        "vacuum_angstroms",
      ].sort(),
    );
    expect(body.n_atoms).toBe(6); // pymatgen's SlabGenerator gives 6 (4 planes rounded up to whole oriented cells)
    expect(body.n_terminations).toBe(1);
    expect(body.vacuum_angstroms).toBeGreaterThan(14);
    expect(body.surface_area).toBeCloseTo((3.61 ** 2 * Math.sqrt(3)) / 4, 6);
  });

  it("a fractional thickness is Angstrom, the same operation answers under /api/structure/slab", async () => {
    const a = await post("/api/structure-build/slab", { structure: cuCell, miller: [1, 0, 0], thickness: 7.5, vacuum: 10 });
    const b = await post("/api/structure/slab", { structure: cuCell, miller: [1, 0, 0], thickness: 7.5, vacuum: 10 });
    expect(a.statusCode).toBe(200);
    expect(a.json()).toEqual(b.json());
    expect(a.json().thickness_angstroms).toBeGreaterThanOrEqual(7.5 - 1.81);
  });

  // [condition, code, body]
  const rows: Array<[string, string, Record<string, unknown>]> = [
    ["Miller indices all zero", "INVALID_MILLER", { structure: cuCell, miller: [0, 0, 0], thickness: 3 }],
    ["structure has no lattice", "MISSING_LATTICE", { structure: water, miller: [1, 1, 1], thickness: 3 }],
    ["thickness 0", "INVALID_THICKNESS", { structure: cuCell, miller: [1, 1, 1], thickness: 0 }],
    ["thickness below 0", "INVALID_THICKNESS", { structure: cuCell, miller: [1, 1, 1], thickness: -2.5 }],
    ["vacuum below 0", "INVALID_VACUUM", { structure: cuCell, miller: [1, 1, 1], thickness: 3, vacuum: -1 }],
    ["slab over 10000 atoms", "TOO_MANY_ATOMS", { structure: cuCell, miller: [1, 1, 1], thickness: 3000 }],
    [
      "termination index out of range",
      "INVALID_TERMINATION",
      { structure: cuCell, miller: [1, 1, 1], thickness: 3, termination_index: 5 },
    ],
  ];
  it.each(rows)("%s → 400 %s", async (_c, code, body) => {
    const res = await post("/api/structure-build/slab", body);
    expect([res.statusCode, res.json().code]).toEqual([400, code]);
  });
});

describe("structure info", () => {
  it("gives formula, symmetry and density of fcc Cu", async () => {
    const res = await post("/api/structure/info", { structure: cuCell });
    expect(res.statusCode).toBe(200);
    const info = res.json();
    expect(info).toMatchObject({
      formula: "Cu4",
      reduced_formula: "Cu",
      n_atoms: 4,
      elements: ["Cu"],
      element_counts: { Cu: 4 },
      has_lattice: true,
      is_molecule: false,
    });
    expect(info.symmetry).toEqual({
      space_group: "Fm-3m",
      space_group_number: 225,
      crystal_system: "cubic",
      point_group: "m-3m",
    });
    expect(info.density).toBeCloseTo((4 * 63.546 * 1.66053906892) / 3.61 ** 3, 6);
    expect(info.sites).toHaveLength(4);
  });

  it("a molecule has no lattice, symmetry or density", async () => {
    const info = (await post("/api/structure/info", { structure: water })).json();
    expect([info.lattice, info.symmetry, info.density, info.is_molecule, info.reduced_formula]).toEqual([
      null,
      null,
      null,
      true,
      "H2O",
    ]);
  });
});

describe("standard cells", () => {
  it("primitive fcc Cu has one atom, conventional has four", async () => {
    const prim = (await post("/api/structure/primitive-cell", { structure: cuCell })).json();
    expect([prim.n_atoms, prim.original_n_atoms]).toEqual([1, 4]);
    const conv = (await post("/api/structure/conventional-cell", { structure: prim.structure })).json();
    expect(conv.n_atoms).toBe(4);
  });
  it("standard cells of a 500-atom supercell come from its translation-reduced cell, quickly", async () => {
    const big = (await post("/api/structure-build/supercell", { structure: cuCell, scaling: [5, 5, 5] })).json().structure;
    const t = performance.now();
    const prim = (await post("/api/structure/primitive-cell", { structure: big })).json();
    const conv = (await post("/api/structure/conventional-cell", { structure: big })).json();
    expect(performance.now() - t).toBeLessThan(5000);
    expect([prim.n_atoms, conv.n_atoms, prim.original_n_atoms]).toEqual([1, 4, 500]);
    expect(conv.structure.lattice.a).toBeCloseTo(3.61, 6);
  });

  it("a molecule → 400 MISSING_LATTICE", async () => {
    const res = await post("/api/structure/primitive-cell", { structure: water });
    expect([res.statusCode, res.json().code]).toEqual([400, "MISSING_LATTICE"]);
  });
});
