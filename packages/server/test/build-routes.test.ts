/**
 * `/api/build` through HTTP with the real compute pool and the real analysis worker: the worker
 * routes against pymatgen-analysis-defects and ASE run directly (same counts, multiplicities and
 * structures up to StructureMatcher; cluster geometry within 1e-6 Å), one row per defect of the
 * earlier implementation (kept-routes §5) showing the fixed behaviour, and bad-input and abuse
 * rows for every route (caps checked before any work). The core routes' conformance with pymatgen
 * is in packages/core/test/builders-conformance.test.ts.
 */
import { runPython, testdataPath } from "atomstudio-testkit";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defectOp, intercalationOp, nanoparticleOp } from "../src/operations/build.ts";
import { cuCell, makeApp, water } from "./helpers.ts";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field
type Body = Record<string, any>;
const ORACLE = new URL("./oracle/build_oracle.py", import.meta.url).pathname;

let app: FastifyInstance;
let hosts: Record<string, Body> = {};
const post = async (route: string, payload: unknown): Promise<{ status: number; body: Body }> => {
  const res = await app.inject({ method: "POST", url: `/api/build/${route}`, payload: payload as Body });
  return { status: res.statusCode, body: res.json() };
};

beforeAll(async () => {
  app = await makeApp({ maxStructures: 100 });
  hosts = await runPython<Record<string, Body>>(ORACLE, { mode: "hosts", lfp: testdataPath("structures/POSCAR_LiFePO4") });
}, 120_000);
afterAll(async () => {
  await app?.close();
});

describe("defects against pymatgen-analysis-defects", () => {
  const rows: [string, "vacancy" | "substitution" | "interstitial", string][] = [
    ["rutile", "vacancy", ""],
    ["LiFePO4", "vacancy", ""],
    ["Pt_fcc", "vacancy", ""],
    ["rutile", "substitution", "V"],
    ["LiFePO4", "substitution", "Mn"],
    ["Fe_bcc", "interstitial", "H"],
    ["rutile", "interstitial", "Li"],
  ];
  it("one structure per inequivalent site, same multiplicities, same structures up to StructureMatcher", async () => {
    const ours: Body[] = [];
    for (const [name, kind, element] of rows) {
      const { status, body } = await post("defect", {
        structure: hosts[name],
        defect_type: kind,
        site_index: -1,
        substitute_element: element,
      });
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      ours.push(body);
    }
    const oracle = await runPython<{ multiplicities: number[]; one_each: boolean }[]>(
      ORACLE,
      {
        mode: "defects",
        cases: rows.map(([name, kind, element], k) => ({ host: hosts[name], kind, element, ours: ours[k]?.structures })),
      },
      { timeoutMs: 300_000 },
    );
    const got = rows.map((r, k) => ({
      row: r.join(" "),
      mult: ours[k]?.defects.map((d: Body) => d.multiplicity),
      one_each: oracle[k]?.one_each,
    }));
    const want = rows.map((r, k) => ({ row: r.join(" "), mult: oracle[k]?.multiplicities, one_each: true }));
    expect(got).toEqual(want);
  }, 300_000);
});

describe("nanoparticles against ASE", () => {
  const base = {
    structure: "fcc",
    surfaces: [
      [1, 1, 1],
      [1, 0, 0],
      [1, 1, 0],
    ],
    energies: [1.0, 1.1, 1.2],
    rounding: "closest",
    vacuum: 10,
  };
  const rows: Body[] = [
    { ...base, element: "Au", shape: "wulff", size: 100 },
    { ...base, element: "Cu", shape: "octahedron", length: 5, cutoff: 1 },
    { ...base, element: "Pt", shape: "icosahedron", shells: 3 },
    { ...base, element: "Ag", shape: "decahedron", p: 3, q: 3, r: 1 },
    { ...base, element: "Pt", shape: "icosahedron", shells: 2, lattice_constant: 4.0, vacuum: 5 },
  ];
  it("same atom count, box and positions", async () => {
    const oracle = await runPython<{ n_atoms: number; matrix: number[][]; cart: number[][] }[]>(ORACLE, {
      mode: "cluster",
      cases: rows,
    });
    for (const [k, p] of rows.entries()) {
      const { status, body } = await post("nanoparticle", { element: p.element, shape: p.shape, ...p, structure: p.structure });
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      const want = oracle[k];
      expect(body.n_atoms).toBe(want?.n_atoms);
      const m: number[][] = body.structure.lattice.matrix;
      for (const [i, row] of m.entries())
        for (const [j, v] of row.entries()) expect(Math.abs(v - (want?.matrix[i]?.[j] as number))).toBeLessThan(1e-8);
      const cart = (body.structure.sites as Body[])
        .map((s) => (s.xyz as number[]).map((x) => Math.round(x * 1e6) / 1e6) as [number, number, number])
        .sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]);
      const ref = [...(want?.cart ?? [])].sort(
        (a, b) =>
          (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number) || (a[2] as number) - (b[2] as number),
      );
      for (const [i, c] of cart.entries())
        for (const [j, v] of c.entries()) expect(Math.abs(v - (ref[i]?.[j] as number))).toBeLessThan(2e-6);
    }
  }, 120_000);
});

// The worker writes these answers and the service passes them on without parsing them again into
// its schemas: this is where the published output schemas are held to them.
describe("worker answers keep the published output schema", () => {
  const rows: [string, string, { output: { safeParse: (v: unknown) => { success: boolean; error?: unknown } } }, Body][] = [
    ["defect", "vacancies", defectOp, { structure: cuCell, site_index: -1 }],
    [
      "defect",
      "interstitials in a supercell",
      defectOp,
      { structure: cuCell, defect_type: "interstitial", substitute_element: "H", supercell: "2x1x1" },
    ],
    ["intercalation", "two Li", intercalationOp, { structure: cuCell, species: "Li", n_intercalants: 2 }],
    ["nanoparticle", "icosahedron", nanoparticleOp, { element: "Pt", shape: "icosahedron", shells: 3 }],
  ];
  it.each(rows)(
    "%s: %s",
    async (route, _what, op, body) => {
      const res = await post(route, body);
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      const checked = op.output.safeParse(res.body);
      expect(checked.error).toBeUndefined();
    },
    60_000,
  );
});

const minDistance = (s: Body, i: number): number => {
  const m: number[][] = s.lattice.matrix;
  const f = (s.sites as Body[]).map((x) => x.abc as number[]);
  let best = Number.POSITIVE_INFINITY;
  for (let j = 0; j < f.length; j++) {
    if (j === i) continue;
    const d = [0, 1, 2].map((k) => {
      const v = (f[i]?.[k] as number) - (f[j]?.[k] as number);
      return v - Math.round(v);
    });
    const c = [0, 1, 2].map((k) => d[0]! * m[0]![k]! + d[1]! * m[1]![k]! + d[2]! * m[2]![k]!);
    best = Math.min(best, Math.hypot(c[0]!, c[1]!, c[2]!));
  }
  return best;
};

describe("known defects of the earlier implementation, fixed (kept-routes §5)", () => {
  it("§5.1 uniaxial strain along a of a hexagonal cell changes only a", async () => {
    const mg = { ...hosts.graphite };
    const { body } = await post("strain", { structure: mg, strain_type: "uniaxial", axis: "a", magnitude: 0.05 });
    expect(body.structures[0].lattice.a / mg.lattice.a).toBeCloseTo(1.05, 12);
    expect(body.structures[0].lattice.b).toBeCloseTo(mg.lattice.b, 12);
    expect(body.labels[0]).toBe("uniaxial a +5.00%");
  });
  it("§5.1 an unknown axis is a 400, not c", async () => {
    const { status, body } = await post("strain", { structure: cuCell, axis: "q" });
    expect([status, body.code]).toEqual([400, "INVALID_AXIS"]);
  });
  it("§5.2 a one-sided sweep keeps the sign; steps are capped", async () => {
    const { body } = await post("strain", { structure: cuCell, magnitude: -0.02, n_steps: 2, sweep: "one_sided" });
    expect(body.strains).toEqual([-0.01, -0.02]);
    const capped = await post("strain", { structure: cuCell, n_steps: 1000 });
    expect([capped.status, capped.body.code]).toEqual([400, "TOO_MANY_STRUCTURES"]);
  });
  it("§5.3 no silent 2x2x2: the default keeps the cell; an unreadable supercell is a 400; site_index counts the input cell", async () => {
    const { body } = await post("defect", { structure: cuCell });
    expect(body.structures[0].sites.length).toBe(3);
    expect((await post("defect", { structure: cuCell, supercell: "two" })).body.code).toBe("INVALID_SCALING");
    expect((await post("defect", { structure: cuCell, supercell: "" })).body.code).toBe("INVALID_SCALING");
    expect((await post("defect", { structure: cuCell, site_index: -2 })).body.code).toBe("INVALID_INDEX");
    const big = await post("defect", { structure: cuCell, supercell: "2x2x2", site_index: 3 });
    expect(big.body.structures[0].sites.length).toBe(31);
    expect(big.body.defects[0].frac_coords).toEqual([0, 0.5, 0.5]);
  });
  it("§5.4 an interstitial in bcc Fe sits in a void, away from every atom; its element is required", async () => {
    const { body } = await post("defect", {
      structure: hosts.Fe_bcc,
      defect_type: "interstitial",
      substitute_element: "H",
      site_index: -1,
    });
    for (const s of body.structures) expect(minDistance(s, s.sites.length - 1)).toBeGreaterThan(0.9);
    expect((await post("defect", { structure: hosts.Fe_bcc, defect_type: "interstitial" })).body.code).toBe("MISSING_ELEMENT");
  });
  it("§5.5 doping draws sites at random with a seed, reproducibly; too many dopants is a 400", async () => {
    const req = { structure: hosts.Pt_fcc, dopant: "Au", host_element: "Pt", concentration: 2, seed: 5 };
    const a = await post("doping", req);
    expect((await post("doping", req)).body.labels).toEqual(a.body.labels);
    const draws = new Set<string>();
    for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) draws.add((await post("doping", { ...req, seed })).body.labels[0]);
    expect(draws.size).toBeGreaterThan(1);
    for (const concentration of [5, -1, 0])
      expect((await post("doping", { ...req, concentration })).body.code).toBe("INVALID_CONCENTRATION");
  });
  it("§5.6 enumerations are grouped by symmetry and say when the cap cut them", async () => {
    const req = { structure: hosts.Pt_fcc, dopant: "Au", host_element: "Pt", concentration: 2, enumerate: true };
    const all = await post("doping", req);
    // 6 pairs of the 4 fcc sites are all equivalent
    expect([all.body.count, all.body.multiplicities, all.body.truncated]).toEqual([1, [6], false]);
    const cut = await post("doping", { ...req, structure: hosts.LiFePO4, host_element: "Fe", dopant: "Mn", max_structures: 1 });
    expect([cut.body.count, cut.body.truncated]).toEqual([1, true]);
  });
  it("§5.7 intercalation: guests in distinct voids, no overlap; unknown or empty custom modes are 400s", async () => {
    const { status, body } = await post("intercalation", { structure: hosts.graphite, species: "Li", n_intercalants: 2 });
    expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
    const s = body.structures[0];
    for (const i of [s.sites.length - 1, s.sites.length - 2]) expect(minDistance(s, i)).toBeGreaterThan(0.9);
    expect((await post("intercalation", { structure: hosts.graphite, position: "custom" })).body.code).toBe("INVALID_POSITION");
    expect((await post("intercalation", { structure: hosts.graphite, position: "sideways" })).body.code).toBe("INVALID_POSITION");
    const crowded = await post("intercalation", { structure: cuCell, species: "H", n_intercalants: 60, min_guest_distance: 3 });
    expect([crowded.status, crowded.body.code]).toEqual([400, "NOT_ENOUGH_SITES"]);
    const onAtom = await post("intercalation", { structure: cuCell, species: "H", position: "custom", positions: [[0, 0, 0]] });
    expect([onAtom.status, onAtom.body.code]).toEqual([400, "SITE_OVERLAP"]);
  });
  it("§5.8 random substitution skips arrangements equal by symmetry", async () => {
    const { body } = await post("random-substitution", {
      structure: hosts.Pt_fcc,
      host_element: "Pt",
      dopants: [{ element: "Au", count: 2 }],
      n_samples: 5,
      seed: 3,
    });
    // every pair of the 4 fcc sites is the same structure
    expect(body.count).toBe(1);
  });
  it("§5.9 occupancies are kept; molecules and unknown elements are 400s, not 500s", async () => {
    const alloy = {
      ...cuCell,
      sites: cuCell.sites.map((s, i) =>
        i === 0
          ? {
              ...s,
              species: [
                { element: "Cu", occu: 0.5 },
                { element: "Au", occu: 0.5 },
              ],
            }
          : s,
      ),
    };
    const { body } = await post("strain", { structure: alloy });
    expect(body.structures[0].sites[0].species).toEqual([
      { element: "Cu", occu: 0.5 },
      { element: "Au", occu: 0.5 },
    ]);
    expect((await post("strain", { structure: water })).body.code).toBe("MISSING_LATTICE");
    expect((await post("doping", { structure: cuCell, dopant: "Xx", host_element: "Cu" })).body.code).toBe("INVALID_ELEMENT");
  });
  it("§5.24 an unknown (misspelled) field is a 422 naming it", async () => {
    const { status, body } = await post("strain", { structure: cuCell, strain: [0.01, 0, 0] });
    expect([status, body.code]).toEqual([422, "MALFORMED_REQUEST"]);
    expect(JSON.stringify(body.details)).toContain("strain");
  });
});

describe("bad input and abuse, per route (caps before work)", () => {
  const big = {
    ...cuCell,
    sites: Array.from({ length: 2500 }, (_, i) => ({
      species: [{ element: "Cu", occu: 1 }],
      abc: [(i % 20) / 20, (Math.floor(i / 20) % 10) / 10, Math.floor(i / 200) / 13],
    })),
  };
  // a site pymatgen empties: it drops occupancies below 1e-8 (an IndexError in the worker, found by fuzzing)
  const fadedSite = {
    ...cuCell,
    sites: [
      { species: [{ element: "Cu", occu: 1e-9 }], abc: [0, 0, 0] },
      { species: [{ element: "Cu", occu: 1 }], abc: [0.5, 0.5, 0.5] },
    ],
  };
  // 14000 lattice points within 1.2 × the longest vector: pymatgen's Niggli reduction in the void
  // search compares them pairwise (gigabytes; a thinner cell killed the worker on a small machine)
  const needle = {
    lattice: {
      matrix: [
        [0.5, 0, 0],
        [0, 1000, 0],
        [0, 0, 1000],
      ],
    },
    sites: [
      { species: [{ element: "Cu", occu: 1 }], abc: [0, 0, 0] },
      { species: [{ element: "Cu", occu: 1 }], abc: [0.5, 0.5, 0.5] },
    ],
  };
  // [route, what, body, status, code]
  const rows: [string, string, Body, number, string][] = [
    [
      "defect",
      "vacancy at a site pymatgen empties (occu 1e-9)",
      { structure: fadedSite, site_index: 0 },
      400,
      "INVALID_STRUCTURE",
    ],
    [
      "defect",
      "substitution at a site pymatgen empties (occu 1e-9)",
      { structure: fadedSite, defect_type: "substitution", substitute_element: "Au", site_index: 0 },
      400,
      "INVALID_STRUCTURE",
    ],
    [
      "intercalation",
      "custom guest beside a site pymatgen empties (occu 1e-9)",
      { structure: fadedSite, position: "custom", positions: [[0.25, 0.25, 0.75]] },
      400,
      "INVALID_STRUCTURE",
    ],
    [
      "defect",
      "interstitials of a 0.5 x 1000 x 1000 Å cell",
      { structure: needle, defect_type: "interstitial", substitute_element: "H", site_index: -1 },
      400,
      "INVALID_STRUCTURE",
    ],
    ["intercalation", "voids of a 0.5 x 1000 x 1000 Å cell", { structure: needle }, 400, "INVALID_STRUCTURE"],
    ["defect", "unknown defect type", { structure: cuCell, defect_type: "antisite" }, 400, "INVALID_DEFECT_TYPE"],
    ["defect", "site index past the end", { structure: cuCell, site_index: 4 }, 400, "INVALID_INDEX"],
    ["defect", "substitution without element", { structure: cuCell, defect_type: "substitution" }, 400, "MISSING_ELEMENT"],
    ["defect", "supercell factor 11", { structure: cuCell, supercell: "11x1x1" }, 400, "INVALID_SCALING"],
    ["defect", "supercell past the atom cap", { structure: big, supercell: "10x10x10" }, 400, "TOO_MANY_ATOMS"],
    ["defect", "molecule", { structure: water }, 400, "MISSING_LATTICE"],
    [
      "defect",
      "disordered host, every inequivalent site",
      {
        structure: {
          ...cuCell,
          sites: [
            {
              species: [
                { element: "Cu", occu: 0.5 },
                { element: "Au", occu: 0.5 },
              ],
              abc: [0, 0, 0],
            },
          ],
        },
        site_index: -1,
      },
      400,
      "INVALID_STRUCTURE",
    ],
    ["defect", "no structure", {}, 422, "MALFORMED_REQUEST"],
    ["strain", "unknown type", { structure: cuCell, strain_type: "twist" }, 400, "INVALID_STRAIN_TYPE"],
    ["strain", "magnitude 5", { structure: cuCell, magnitude: 5 }, 400, "INVALID_STRAIN"],
    ["strain", "unknown frame", { structure: cuCell, frame: "polar" }, 400, "INVALID_STRAIN_FRAME"],
    ["strain", "sweep of 0", { structure: cuCell, magnitude: 0, n_steps: 3 }, 400, "INVALID_STRAIN"],
    ["strain", "magnitude as text", { structure: cuCell, magnitude: "2%" }, 422, "MALFORMED_REQUEST"],
    ["strain", "100 steps of 2500 atoms", { structure: big, n_steps: 100 }, 400, "TOO_MANY_ATOMS"],
    ["doping", "no host site", { structure: cuCell, host_element: "O", dopant: "N" }, 400, "HOST_ELEMENT_NOT_FOUND"],
    ["doping", "index out of range", { structure: cuCell, dopant: "Au", target_indices: [0, 9] }, 400, "INVALID_INDEX"],
    [
      "doping",
      "huge enumeration",
      { structure: big, host_element: "Cu", dopant: "Au", concentration: 3, enumerate: true, max_structures: 1 },
      400,
      "TOO_MANY_CONFIGURATIONS",
    ],
    [
      "doping",
      "max_structures above the cap",
      { structure: cuCell, host_element: "Cu", dopant: "Au", max_structures: 101 },
      400,
      "TOO_MANY_STRUCTURES",
    ],
    ["intercalation", "too many guests", { structure: cuCell, n_intercalants: 65 }, 400, "INVALID_COUNT"],
    ["intercalation", "min_distance 0", { structure: cuCell, min_distance: 0 }, 400, "INVALID_DISTANCE"],
    ["intercalation", "unknown element", { structure: cuCell, species: "Qq" }, 400, "INVALID_ELEMENT"],
    ["substitution", "no groups", { structure: cuCell, groups: [] }, 400, "EMPTY_GROUPS"],
    [
      "substitution",
      "empty group",
      { structure: cuCell, groups: [{ target_indices: [], replacement_elements: ["Au"] }] },
      400,
      "EMPTY_GROUPS",
    ],
    [
      "substitution",
      "index out of range",
      { structure: cuCell, groups: [{ target_indices: [7], replacement_elements: ["Au"] }] },
      400,
      "INVALID_INDEX",
    ],
    [
      "substitution",
      "product too large",
      {
        structure: cuCell,
        groups: [0, 1, 2, 3].map((i) => ({
          target_indices: [i],
          replacement_elements: [
            "Au",
            "Ag",
            "Ni",
            "Pd",
            "Pt",
            "Fe",
            "Co",
            "Zn",
            "Al",
            "Ga",
            "In",
            "Sn",
            "Mg",
            "Ca",
            "Sr",
            "Ba",
            "Ti",
            "V",
          ],
        })),
      },
      400,
      "TOO_MANY_CONFIGURATIONS",
    ],
    [
      "substitution",
      "group without elements field",
      { structure: cuCell, groups: [{ target_indices: [0] }] },
      422,
      "MALFORMED_REQUEST",
    ],
    ["random-substitution", "no pool", { structure: cuCell, dopants: [{ element: "Au", count: 1 }] }, 400, "MISSING_HOST"],
    [
      "random-substitution",
      "no dopant counts",
      { structure: cuCell, host_element: "Cu", dopants: [{ element: "Au", count: 0 }] },
      400,
      "NO_DOPANTS",
    ],
    [
      "random-substitution",
      "more dopants than sites",
      { structure: cuCell, host_element: "Cu", dopants: [{ element: "Au", count: 5 }] },
      400,
      "INVALID_CONCENTRATION",
    ],
    [
      "random-substitution",
      "n_samples above the cap",
      { structure: cuCell, host_element: "Cu", dopants: [{ element: "Au", count: 1 }], n_samples: 1000 },
      400,
      "TOO_MANY_STRUCTURES",
    ],
    ["nanoparticle", "unknown shape", { element: "Pt", shape: "cube" }, 400, "INVALID_SHAPE"],
    ["nanoparticle", "huge wulff", { element: "Pt", size: 10_000_000 }, 400, "INVALID_NANOPARTICLE"],
    ["nanoparticle", "40 icosahedron shells", { element: "Pt", shape: "icosahedron", shells: 40 }, 400, "INVALID_NANOPARTICLE"],
    [
      "nanoparticle",
      "surfaces and energies differ",
      { element: "Pt", surfaces: [[1, 1, 1]], energies: [1, 2] },
      400,
      "INVALID_NANOPARTICLE",
    ],
    ["nanoparticle", "vacuum 1e6", { element: "Pt", shape: "icosahedron", vacuum: 1e6 }, 400, "INVALID_NANOPARTICLE"],
    ["nanoparticle", "element without a lattice", { element: "O", shape: "icosahedron", shells: 2 }, 400, "INVALID_NANOPARTICLE"],
    ["nanoparticle", "no element", { shape: "wulff" }, 422, "MALFORMED_REQUEST"],
    [
      "nanoparticle",
      "one atom without vacuum: a box of no volume (found by fuzzing)",
      { element: "W", shape: "decahedron", p: 1, q: 1, r: 0, vacuum: 0 },
      400,
      "INVALID_NANOPARTICLE",
    ],
  ];
  it.each(rows)(
    "%s: %s",
    async (route, _what, body, status, code) => {
      const started = Date.now();
      const res = await post(route, body);
      expect([res.status, res.body.code], JSON.stringify(res.body).slice(0, 300)).toEqual([status, code]);
      // refused before any work: no enumeration, supercell or cluster was built
      if (code.startsWith("TOO_MANY")) expect(Date.now() - started).toBeLessThan(1500);
    },
    60_000,
  );
});
