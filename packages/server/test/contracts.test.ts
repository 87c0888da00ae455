/**
 * Responses match their declared schemas: every operation of the registry runs on a real input
 * against the real thing (the core, the Python calculator worker, the studio in headless
 * Chromium) and its answer is validated strictly (no property a schema does not declare where
 * it says `additionalProperties: false`) against the output schema the OpenAPI document
 * publishes.
 */
import { readFileSync } from "node:fs";
import { readTestdata, testdataPath } from "atomstudio-testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureStudioBuilt,
  hasChromium,
  launchBrowser,
  openStudio,
  type RunningService,
  startService,
} from "../../studio/test/support.ts";
import { operations } from "../src/operations/index.ts";
import { openApiDocument } from "../src/registry/openapi.ts";
import { responseValidator } from "./contract-support.ts";
import { cuCell, water } from "./helpers.ts";

const validate = responseValidator(openApiDocument(operations));

type Example = { method: "GET" | "POST"; path: string; body?: unknown; query?: Record<string, string> };

const disordered = {
  ...cuCell,
  sites: [
    {
      species: [
        { element: "Fe", occu: 0.5 },
        { element: "Ni", occu: 0.5, oxidation_state: 2 },
      ],
      abc: [0, 0, 0],
    },
  ],
};
/** A shared file of a real code, as the analysis routes take it (base64; gzip detected by its bytes). */
const file = (rel: string) => ({
  content: readFileSync(testdataPath(rel)).toString("base64"),
  filename: rel.split("/").pop(),
  encoding: "base64",
});
const waterMd = { trajectory: file("md/water.pdb.gz"), frames_range: { stop: 20 } };
const slab = { structure: cuCell, miller: [1, 1, 1], thickness: 3, vacuum: 10 };
const emtCell = { structure: cuCell, calculator: "emt" };

/** A 2H-type MX2 monolayer with 20 Å of cell along c (heterostructure examples). */
const tmd = (metal: string, a: number, dz: number) => ({
  lattice: {
    matrix: [
      [a, 0, 0],
      [-a / 2, (a * Math.sqrt(3)) / 2, 0],
      [0, 0, 20],
    ],
  },
  sites: [
    { species: [{ element: metal, occu: 1 }], abc: [1 / 3, 2 / 3, 0.5] },
    { species: [{ element: "S", occu: 1 }], abc: [2 / 3, 1 / 3, 0.5 + dz / 20] },
    { species: [{ element: "S", occu: 1 }], abc: [2 / 3, 1 / 3, 0.5 - dz / 20] },
  ],
});
const hetero = { substrate: tmd("W", 3.153, 1.57), film: tmd("Mo", 3.16, 1.58) };
const unitMatch = {
  match_id: 0,
  film_transformation: [
    [1, 0],
    [0, 1],
  ],
  substrate_transformation: [
    [1, 0],
    [0, 1],
  ],
};
const slabMode = { mode: "slab", max_area: 20 };
const graphite = {
  lattice: {
    matrix: [
      [2.46, 0, 0],
      [-1.23, 2.130422, 0],
      [0, 0, 6.7],
    ],
  },
  sites: [
    [0, 0, 0.25],
    [0, 0, 0.75],
    [1 / 3, 2 / 3, 0.25],
    [2 / 3, 1 / 3, 0.75],
  ].map((abc) => ({ species: [{ element: "C", occu: 1 }], abc })),
};
const heteroPath = (p: string) => `/api/heterostructure/${p}`;
const HETERO: Array<[string, string, Example]> = [
  [
    "heterostructure_search",
    "MoS2 on WS2, slabs",
    { method: "POST", path: heteroPath("search"), body: { ...hetero, params: slabMode } },
  ],
  [
    "heterostructure_build",
    "1x1 match",
    { method: "POST", path: heteroPath("build"), body: { ...hetero, match: unitMatch, search_params: slabMode } },
  ],
  [
    "heterostructure_build_manual",
    "1x1",
    {
      method: "POST",
      path: heteroPath("build-manual"),
      body: {
        ...hetero,
        substrate_transform: [
          [1, 0],
          [0, 1],
        ],
        film_transform: [
          [1, 0],
          [0, 1],
        ],
      },
    },
  ],
  [
    "heterostructure_batch_build",
    "2x2 shifts",
    { method: "POST", path: heteroPath("batch-build"), body: { ...hetero, match: unitMatch, n_shift: 2 } },
  ],
  [
    "heterostructure_build_intermat",
    "graphite on Cu(111)",
    {
      method: "POST",
      path: heteroPath("build-intermat"),
      body: { substrate: cuCell, film: graphite, params: { substrate_miller: [1, 1, 1] } },
    },
  ],
  [
    "heterostructure_search_lateral",
    "MoS2 | WS2",
    { method: "POST", path: heteroPath("search-lateral"), body: { slab_A: hetero.film, slab_B: hetero.substrate } },
  ],
  [
    "heterostructure_build_lateral",
    "1 | 1",
    {
      method: "POST",
      path: heteroPath("build-lateral"),
      body: { slab_A: hetero.film, slab_B: hetero.substrate, match: { n1: 1, n2: 1 } },
    },
  ],
  [
    "heterostructure_grid_scan",
    "WS2 split 1 + 2",
    { method: "POST", path: heteroPath("grid-scan"), body: { heterostructure: hetero.substrate, n_atoms_substrate: 1 } },
  ],
  ["heterostructure_health", "answers", { method: "GET", path: heteroPath("health") }],
];

/** [operation id, what, request]: at least one row for every operation of the registry. */
const OFFLINE: Array<[string, string, Example]> = [
  ["health", "liveness", { method: "GET", path: "/api/health" }],
  [
    "build_defect",
    "one vacancy per inequivalent site",
    { method: "POST", path: "/api/build/defect", body: { structure: cuCell, site_index: -1 } },
  ],
  [
    "build_defect",
    "an interstitial",
    {
      method: "POST",
      path: "/api/build/defect",
      body: { structure: cuCell, defect_type: "interstitial", substitute_element: "H" },
    },
  ],
  ["build_strain", "a sweep", { method: "POST", path: "/api/build/strain", body: { structure: cuCell, axis: "a", n_steps: 3 } }],
  [
    "build_doping",
    "enumerated",
    {
      method: "POST",
      path: "/api/build/doping",
      body: { structure: cuCell, dopant: "Au", host_element: "Cu", concentration: 2, enumerate: true },
    },
  ],
  [
    "build_intercalation",
    "two guests",
    { method: "POST", path: "/api/build/intercalation", body: { structure: cuCell, species: "H", n_intercalants: 2 } },
  ],
  [
    "build_substitution",
    "two groups",
    {
      method: "POST",
      path: "/api/build/substitution",
      body: {
        structure: cuCell,
        groups: [
          { target_indices: [0], replacement_elements: ["Au", "Ag"] },
          { target_indices: [1], replacement_elements: ["Au"] },
        ],
      },
    },
  ],
  [
    "build_random_substitution",
    "seeded",
    {
      method: "POST",
      path: "/api/build/random-substitution",
      body: { structure: cuCell, host_element: "Cu", dopants: [{ element: "Au", count: 1 }], n_samples: 2, seed: 1 },
    },
  ],
  [
    "build_nanoparticle",
    "an icosahedron",
    { method: "POST", path: "/api/build/nanoparticle", body: { element: "Pt", shape: "icosahedron", shells: 2 } },
  ],
  [
    "add_atom",
    "O into Cu",
    { method: "POST", path: "/api/structure-ops/add-atom", body: { structure: cuCell, element: "O", position: [1, 1, 1] } },
  ],
  [
    "add_atom",
    "into a molecule",
    { method: "POST", path: "/api/structure-ops/add-atom", body: { structure: water, element: "H", position: [0, 0, 1] } },
  ],
  [
    "add_atoms",
    "two atoms",
    {
      method: "POST",
      path: "/api/structure-ops/add-atoms",
      body: {
        structure: cuCell,
        atoms: [
          { element: "O", xyz: [0, 0, 1] },
          { element: "H", xyz: [0, 1, 1] },
        ],
      },
    },
  ],
  [
    "delete_atoms",
    "two sites",
    { method: "POST", path: "/api/structure-ops/delete-atoms", body: { structure: cuCell, indices: [0, 2] } },
  ],
  [
    "replace_atom",
    "Cu to Ag",
    { method: "POST", path: "/api/structure-ops/replace-atom", body: { structure: cuCell, index: 1, new_element: "Ag" } },
  ],
  [
    "move_atom",
    "one site",
    { method: "POST", path: "/api/structure-ops/move-atom", body: { structure: cuCell, index: 0, new_position: [0.1, 0, 0] } },
  ],
  [
    "move_atoms",
    "two sites",
    {
      method: "POST",
      path: "/api/structure-ops/move-atoms",
      body: { structure: cuCell, indices: [0, 1], displacement: [0, 0, 0.2] },
    },
  ],
  [
    "supercell",
    "2x1x1 of a disordered cell",
    { method: "POST", path: "/api/structure-build/supercell", body: { structure: disordered, scaling: [2, 1, 1] } },
  ],
  [
    "merge",
    "water into Cu",
    { method: "POST", path: "/api/structure-build/merge", body: { base: cuCell, incoming: water, position: [1.8, 1.8, 1.8] } },
  ],
  [
    "merge",
    "to a molecule",
    {
      method: "POST",
      path: "/api/structure-build/merge",
      body: { base: water, incoming: water, position: [3, 0, 0], mode: "to_molecule" },
    },
  ],
  [
    "build_supercell_legacy",
    "two structures",
    { method: "POST", path: "/api/build/supercell", body: { structures: [cuCell, disordered], scaling: "2x2x1" } },
  ],
  ["slab", "Cu(111)", { method: "POST", path: "/api/structure-build/slab", body: slab }],
  ["structure_slab", "Cu(111)", { method: "POST", path: "/api/structure/slab", body: slab }],
  ["structure_info", "a crystal", { method: "POST", path: "/api/structure/info", body: { structure: cuCell } }],
  ["structure_info", "a molecule", { method: "POST", path: "/api/structure/info", body: { structure: water } }],
  ["conventional_cell", "Cu", { method: "POST", path: "/api/structure/conventional-cell", body: { structure: cuCell } }],
  ["primitive_cell", "Cu", { method: "POST", path: "/api/structure/primitive-cell", body: { structure: cuCell } }],
  [
    "parse_structure",
    "a CIF from COD",
    {
      method: "POST",
      path: "/api/structure/parse",
      body: { content: readTestdata("structures/Cod_2100513.cif"), filename: "Cod_2100513.cif" },
    },
  ],
  [
    "parse_structure",
    "POSCAR of LiFePO4",
    {
      method: "POST",
      path: "/api/structure/parse",
      body: { content: readTestdata("structures/POSCAR_LiFePO4"), filename: "POSCAR" },
    },
  ],
  [
    "parse_structure",
    "an XDATCAR (frames)",
    { method: "POST", path: "/api/structure/parse", body: { content: readTestdata("md/XDATCAR.MD"), filename: "XDATCAR" } },
  ],
  [
    "parse_structure",
    "benzene XYZ",
    {
      method: "POST",
      path: "/api/structure/parse",
      body: { content: readTestdata("structures/benzene.xyz"), filename: "benzene.xyz" },
    },
  ],
  ["export_structure", "CIF", { method: "POST", path: "/api/structure/export", body: { structure: cuCell, format: "cif" } }],
  [
    "export_structure",
    "XYZ frames",
    { method: "POST", path: "/api/structure/export", body: { structure: water, format: "xyz", frames: [water, water] } },
  ],
  ["providers", "no keys set", { method: "GET", path: "/api/chat/providers" }],
  // The real Python worker (EMT from ASE).
  ["optimize_calculators", "the worker's listing", { method: "GET", path: "/api/optimize/calculators" }],
  [
    "optimize_structure",
    "EMT + BFGS on Cu",
    { method: "POST", path: "/api/optimize/structure", body: { ...emtCell, fmax: 0.1, max_steps: 5, return_trajectory: true } },
  ],
  [
    "structure_optimize",
    "EMT + BFGS on Cu",
    { method: "POST", path: "/api/structure/optimize", body: { ...emtCell, max_steps: 3 } },
  ],
  ["energy", "EMT single point", { method: "POST", path: "/api/optimize/energy", body: emtCell }],
  [
    "energy_get",
    "EMT single point",
    { method: "GET", path: "/api/optimize/energy", query: { structure: JSON.stringify(cuCell), calculator: "emt" } },
  ],
  [
    "bands",
    "Si bands with their KPOINTS, projected",
    {
      method: "POST",
      path: "/api/bands",
      body: {
        vasprun: file("vasp/vasprun_Si_bands.xml.gz"),
        kpoints: file("vasp/KPOINTS_Si_bands"),
        projections: [{ label: "Si", elements: ["Si"] }],
      },
    },
  ],
  [
    "dos",
    "projected DOS",
    { method: "POST", path: "/api/dos", body: { vasprun: file("vasp/vasprun.uniform.xml.gz"), mode: "projected" } },
  ],
  [
    "cohp",
    "NaCl COHP with ICOHPLIST",
    {
      method: "POST",
      path: "/api/cohp",
      body: { cohpcar: file("lobster/NaCl/COHPCAR.lobster.gz"), icohplist: file("lobster/NaCl/ICOHPLIST.lobster.gz") },
    },
  ],
  ["md_rdf", "water O-O", { method: "POST", path: "/api/md/rdf", body: { ...waterMd, selection_a: { elements: ["O"] } } }],
  ["md_rmsd", "water O", { method: "POST", path: "/api/md/rmsd", body: { ...waterMd, selection: { elements: ["O"] } } }],
  ["md_hbonds", "water", { method: "POST", path: "/api/md/hbonds", body: waterMd }],
  ["md_clustering", "water frames", { method: "POST", path: "/api/md/clustering", body: { ...waterMd, n_clusters: 2 } }],
  ...HETERO,
  [
    "adsorption_sites",
    "Cu cell, both surfaces",
    { method: "POST", path: "/api/adsorption/sites", body: { structure: cuCell, params: { surface: "both" } } },
  ],
  [
    "adsorption_place",
    "water above Cu",
    {
      method: "POST",
      path: "/api/adsorption/place",
      body: { slab: cuCell, adsorbate: water, site_position: [0, 0, 5.5], site_normal: [0, 0, 1], clearance: 0 },
    },
  ],
  [
    "adsorption_place_dual",
    "two waters on given sites",
    {
      method: "POST",
      path: "/api/adsorption/place-dual",
      body: {
        structure: cuCell,
        adsorbate1: water,
        adsorbate2: water,
        sites: [{ position: [0, 0, 5.5] }, { position: [1.805, 1.805, 5.5] }],
        target_distance: 2.5,
        distance_tolerance: 1,
        clearance: 0,
      },
    },
  ],
  ["adsorption_health", "liveness", { method: "GET", path: "/api/adsorption/health" }],
];

/** Operations answered by a connected studio (run below in Chromium). */
const VIEWER: Array<[string, string, Example]> = [
  ["view_screenshot", "a small PNG", { method: "POST", path: "/api/view/screenshot", body: { width: 64, height: 48 } }],
  [
    "view_screenshot",
    "JPEG with a camera",
    {
      method: "POST",
      path: "/api/view/screenshot",
      body: { width: 40, height: 40, format: "jpeg", camera: { rotation: [10, 20, 0], zoom: 1.2 } },
    },
  ],
  ["view_structure_info", "the loaded crystal", { method: "GET", path: "/api/view/structure-info" }],
  ["view_selection", "two selected sites", { method: "GET", path: "/api/view/selection" }],
];

let svc: RunningService;
const call = async (ex: Example): Promise<{ status: number; body: unknown }> => {
  const url = `${svc.url}${ex.path}${ex.query ? `?${new URLSearchParams(ex.query)}` : ""}`;
  const res = await fetch(url, {
    method: ex.method,
    ...(ex.body !== undefined ? { headers: { "content-type": "application/json" }, body: JSON.stringify(ex.body) } : {}),
  });
  return { status: res.status, body: await res.json() };
};

const expectConforms = async (id: string, ex: Example) => {
  const { status, body } = await call(ex);
  expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
  const errors = validate(ex.method, ex.path, status, body);
  expect(errors, `${id}: ${JSON.stringify(errors)}`).toEqual([]);
};

beforeAll(async () => {
  svc = await startService({ timeoutMs: 60_000 });
});
afterAll(async () => {
  await svc?.close();
});

/** Answered only with Redis: validated against the same published schemas in workflow.test.ts (job_status: optimize-queue.test.ts). */
const WORKFLOW = ["workflow_create", "workflow_run", "workflow_node_types", "workflow_status", "workflow_cancel", "job_status"];

describe("every operation has an example", () => {
  it.each(operations.map((op) => op.id))("%s", (id) => {
    expect([...OFFLINE, ...VIEWER].some(([op]) => op === id) || WORKFLOW.includes(id)).toBe(true);
  });
});

describe("responses conform strictly to the published output schemas", () => {
  it.each(OFFLINE)("%s: %s", async (id, _what, ex) => expectConforms(id, ex), 120_000);
});

describe.skipIf(!hasChromium)("viewer responses, answered by the studio in headless Chromium", () => {
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    await ensureStudioBuilt();
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url);
    await page.evaluate((d) => window.atomstudio?.setStructure(d, { name: "Cu" }), cuCell as Record<string, unknown>);
    await page.evaluate(() => window.atomstudio?.viewerTools.select_atoms?.({ indices: [0, 2] }));
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
  });

  it.each(VIEWER)("%s: %s", async (id, _what, ex) => expectConforms(id, ex), 120_000);
});

describe("the validator can fail", () => {
  // [what, method, path, body]
  const rows: Array<[string, "GET" | "POST", string, unknown]> = [
    ["an undeclared property", "GET", "/api/health", { status: "ok", version: "1", uptime_s: 1, extra: true }],
    ["a missing property", "GET", "/api/health", { status: "ok", version: "1" }],
    ["a fractional integer", "POST", "/api/structure-ops/add-atom", { structure: water, n_atoms: 3.5, added_index: 3 }],
    [
      "a structure with an unknown element",
      "POST",
      "/api/structure-ops/add-atom",
      {
        structure: { ...water, sites: [{ species: [{ element: "Xx", occu: 1 }], xyz: [0, 0, 0] }] },
        n_atoms: 1,
        added_index: 0,
      },
    ],
    ["a wrong type", "POST", "/api/structure/info", { formula: 1 }],
  ];
  it.each(rows)("%s", (_what, method, path, body) => {
    expect(validate(method, path, 200, body).length).toBeGreaterThan(0);
  });
});
