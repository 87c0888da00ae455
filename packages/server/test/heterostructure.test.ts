/**
 * `/api/heterostructure/*` through HTTP and MCP with the real analysis worker, against pymatgen run
 * directly on the same inputs (graphene on Cu(111), MoS2 on WS2, Cu(111) + graphite in bulk mode,
 * built by the oracle from lattice parameters). The full conformance and one row per fixed defect
 * run in worker/tests/test_hetero_conformance.py; here: the service path, every route's bad-input
 * and abuse rows, and the defects that live in the request layer (unknown fields, modes, xyz input).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { runPython } from "atomstudio-testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, type RunningService, startService } from "./mcp-fixtures.ts";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field against the oracle
type Body = Record<string, any>;

interface Inputs {
  cu: Body;
  cu111: Body;
  graphene: Body;
  graphite: Body;
  mos2: Body;
  ws2: Body;
  /** MoS2 in an oblique cell, sites with xyz only (the reduced viewer form) */
  mos2_xyz_only: Body;
  zsl: { graphene_cu: { area: number; strain: number }[]; mos2_ws2_count: number };
  bulk: { n_matches: number; terminations: string[][]; areas: number[] };
}

const INPUTS = `
import json, sys
import numpy as np
from pymatgen.core import Lattice, Structure
from pymatgen.core.surface import SlabGenerator
from pymatgen.analysis.interfaces.zsl import ZSLGenerator
from pymatgen.analysis.interfaces.coherent_interfaces import CoherentInterfaceBuilder
from pymatgen.analysis.elasticity.strain import Deformation
def tmd(m, a, dz, c=20.0):
    return Structure(Lattice.hexagonal(a, c), [m, "S", "S"], [[1/3, 2/3, .5], [2/3, 1/3, .5 + dz / c], [2/3, 1/3, .5 - dz / c]])
cu = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.615), ["Cu"], [[0, 0, 0]])
cu111 = SlabGenerator(cu, (1, 1, 1), 6, 15, center_slab=True, primitive=True).get_slab()
cu111 = Structure.from_sites(cu111.sites)
gr = Structure(Lattice.hexagonal(2.46, 20.0), ["C", "C"], [[1/3, 2/3, .5], [2/3, 1/3, .5]])
graphite = Structure(Lattice.hexagonal(2.46, 6.7), ["C"] * 4, [[0, 0, .25], [0, 0, .75], [1/3, 2/3, .25], [2/3, 1/3, .75]])
mos2, ws2 = tmd("Mo", 3.16, 1.58), tmd("W", 3.153, 1.57)
obl = Structure(Lattice([mos2.lattice.matrix[0], mos2.lattice.matrix[1], [2.0, 1.0, 20.0]]), mos2.species, mos2.cart_coords, coords_are_cartesian=True)
xyz_only = {"lattice": {"matrix": obl.lattice.matrix.tolist()}, "sites": [{"species": [{"element": s.specie.symbol, "occu": 1}], "xyz": s.coords.tolist()} for s in obl]}
gen = lambda area: ZSLGenerator(0.09, area, 0.03, 0.01)
zsl = list(gen(100)(gr.lattice.matrix[:2], cu111.lattice.matrix[:2]))
cib = CoherentInterfaceBuilder(cu, graphite, film_miller=(0, 0, 1), substrate_miller=(1, 1, 1), zslgen=gen(100))
print(json.dumps({
  "cu": cu.as_dict(), "cu111": cu111.as_dict(), "graphene": gr.as_dict(), "graphite": graphite.as_dict(),
  "mos2": mos2.as_dict(), "ws2": ws2.as_dict(), "mos2_xyz_only": xyz_only,
  "zsl": {"graphene_cu": [{"area": m.match_area, "strain": Deformation(m.match_transformation).green_lagrange_strain.von_mises_strain * 100} for m in zsl],
          "mos2_ws2_count": len(list(gen(30)(mos2.lattice.matrix[:2], ws2.lattice.matrix[:2])))},
  "bulk": {"n_matches": len(cib.zsl_matches), "terminations": [list(t) for t in cib.terminations], "areas": [m.match_area for m in cib.zsl_matches]},
}))
`;

/** pymatgen's own bulk-mode interface for generation index k, compared with ours by StructureMatcher. */
const SAME_AS_PYMATGEN = `
import json, sys
from pymatgen.core import Structure
from pymatgen.analysis.interfaces.zsl import ZSLGenerator
from pymatgen.analysis.interfaces.coherent_interfaces import CoherentInterfaceBuilder
from pymatgen.analysis.structure_matcher import StructureMatcher
a = json.load(sys.stdin)
cib = CoherentInterfaceBuilder(Structure.from_dict(a["substrate"]), Structure.from_dict(a["film"]), film_miller=(0, 0, 1),
                               substrate_miller=(1, 1, 1), zslgen=ZSLGenerator(0.09, 100, 0.03, 0.01))
want = list(cib.get_interfaces(cib.terminations[0], gap=2.0, vacuum_over_film=20.0, film_thickness=3, substrate_thickness=3))[a["k"]]
got = Structure.from_dict(a["got"])
print(json.dumps({"fit": bool(StructureMatcher(primitive_cell=False, attempt_supercell=False).fit(got, want)), "n": len(want)}))
`;

const SLAB = { mode: "slab", max_area: 100, max_results: 200 };

describe("heterostructure routes", () => {
  let svc: RunningService;
  let inputs: Inputs;
  let mcp: Client;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${svc.url}/api/heterostructure/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Body };
  };

  beforeAll(async () => {
    [svc, inputs] = await Promise.all([startService(), runPython<Inputs>(INPUTS, {})]);
    mcp = new Client({ name: "atomstudio-test", version: "0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
  }, 120_000);
  afterAll(async () => {
    await mcp?.close();
    await svc?.close();
  });

  it("search (slab mode), graphene on Cu(111): the areas and strains of pymatgen's ZSL matches, same count", async () => {
    const { status, body } = await post("search", { substrate: inputs.cu111, film: inputs.graphene, params: SLAB });
    expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
    const want = inputs.zsl.graphene_cu;
    expect([body.n_matches, body.truncated]).toEqual([want.length, false]);
    for (const m of body.matches) {
      expect(Math.abs(m.match_area - (want[m.match_id]?.area ?? Number.NaN))).toBeLessThan(1e-8);
      expect(Math.abs(m.strain - (want[m.match_id]?.strain ?? Number.NaN))).toBeLessThan(1e-8);
    }
  });

  it("search (slab mode), MoS2 on WS2: the same count as pymatgen, and truncated when max_results cuts the list", async () => {
    const all = await post("search", { substrate: inputs.ws2, film: inputs.mos2, params: { ...SLAB, max_area: 30 } });
    expect([all.status, all.body.n_matches, all.body.truncated]).toEqual([200, inputs.zsl.mos2_ws2_count, false]);
    const cut = await post("search", {
      substrate: inputs.ws2,
      film: inputs.mos2,
      params: { ...SLAB, max_area: 30, max_results: 3 },
    });
    expect([cut.status, cut.body.n_matches, cut.body.truncated]).toEqual([200, 3, true]);
  });

  it("search + build (bulk mode), graphite on Cu(111): pymatgen's matches and terminations; the built interface is pymatgen's", async () => {
    const params = { mode: "bulk", substrate_miller: [1, 1, 1], film_miller: [0, 0, 1], max_area: 100, max_results: 200 };
    const s = await post("search", { substrate: inputs.cu, film: inputs.graphite, params });
    expect(s.status, JSON.stringify(s.body).slice(0, 300)).toBe(200);
    expect(s.body.n_matches).toBe(inputs.bulk.n_matches);
    expect(s.body.terminations.map((t: Body) => [t.film_termination, t.substrate_termination])).toEqual(inputs.bulk.terminations);
    const k = inputs.bulk.n_matches - 1;
    const match = s.body.matches.find((m: Body) => m.match_id === k);
    const b = await post("build", { substrate: inputs.cu, film: inputs.graphite, match, search_params: params });
    expect(b.status, JSON.stringify(b.body).slice(0, 300)).toBe(200);
    const check = await runPython<{ fit: boolean; n: number }>(SAME_AS_PYMATGEN, {
      substrate: inputs.cu,
      film: inputs.graphite,
      got: b.body.structure,
      k,
    });
    expect(check).toEqual({ fit: true, n: b.body.n_atoms });
    expect(b.body.n_atoms_substrate + b.body.n_atoms_film).toBe(b.body.n_atoms);
  });

  it("defect 12 fixed: a slab given with xyz only in an oblique cell reads like pymatgen's own dictionary", async () => {
    const a = await post("search", { substrate: inputs.ws2, film: inputs.mos2_xyz_only, params: { ...SLAB, max_area: 30 } });
    expect([a.status, a.body.n_matches]).toEqual([200, inputs.zsl.mos2_ws2_count]);
  });

  it("MCP svc_heterostructure_search answers what the endpoint answers", async () => {
    const args = { substrate: inputs.cu111, film: inputs.graphene, params: SLAB };
    const http = await post("search", args);
    const r = await callTool(mcp, "svc_heterostructure_search", args);
    expect(r.isError ?? false).toBe(false);
    expect(r.structuredContent).toEqual(http.body);
  });

  it("build-manual, search-lateral, build-lateral, grid-scan, batch-build and health answer on MoS2/WS2", async () => {
    const { ws2, mos2, graphene } = inputs;
    const man = await post("build-manual", {
      substrate: ws2,
      film: mos2,
      substrate_transform: [
        [1, 0],
        [0, 1],
      ],
      film_transform: [
        [1, 0],
        [0, 1],
      ],
    });
    expect([man.status, man.body.n_atoms, man.body.n_atoms_substrate]).toEqual([200, 6, 3]);
    const lat = await post("search-lateral", { slab_A: mos2, slab_B: graphene, params: { max_length: 40 } });
    expect(lat.status).toBe(200);
    const lm = lat.body.matches[1];
    const lb = await post("build-lateral", {
      slab_A: mos2,
      slab_B: graphene,
      match: lm,
      params: { width_A: 2, width_B: 2, buffer: 0.5 },
    });
    expect([lb.status, lb.body.n_atoms_A, lb.body.n_atoms_B]).toEqual([200, 3 * lm.n1 * 2, 2 * lm.n2 * 2]);
    const grid = await post("grid-scan", {
      heterostructure: man.body.structure,
      film: mos2,
      params: { n_grid_x: 3, n_grid_y: 3 },
    });
    expect([grid.status, grid.body.n_total_grid]).toEqual([200, 9]);
    expect(grid.body.entries.reduce((n: number, e: Body) => n + e.multiplicity, 0)).toBe(9);
    const s = await post("search", { substrate: ws2, film: mos2, params: { ...SLAB, max_area: 30 } });
    const batch = await post("batch-build", {
      substrate: ws2,
      film: mos2,
      match: s.body.matches[0],
      n_shift: 2,
      fmt: "poscar",
      search_params: SLAB,
    });
    expect([batch.status, batch.body.n_candidates]).toEqual([200, 4]);
    const im = await post("build-intermat", {
      substrate: inputs.cu,
      film: inputs.graphite,
      params: { substrate_miller: [1, 1, 1] },
    });
    expect([im.status, im.body.n_atoms_substrate + im.body.n_atoms_film], JSON.stringify(im.body).slice(0, 300)).toEqual([
      200,
      im.body.n_atoms,
    ]);
    const health = await fetch(`${svc.url}/api/heterostructure/health`);
    expect([health.status, await health.json()]).toEqual([200, { status: "healthy", service: "heterostructure" }]);
  });

  // One row per bad input: route, body (built from the inputs), status, code.
  const rows: [string, string, (i: Inputs, m: Body) => Body, number, string][] = [
    ["search", "unknown field (defect 24)", (i) => ({ substrate: i.ws2, film: i.mos2, parms: {} }), 422, "MALFORMED_REQUEST"],
    [
      "search",
      "misspelled param",
      (i) => ({ substrate: i.ws2, film: i.mos2, params: { max_areaa: 10 } }),
      422,
      "MALFORMED_REQUEST",
    ],
    [
      "search",
      "mode lateral (defect 18)",
      (i) => ({ substrate: i.ws2, film: i.mos2, params: { mode: "lateral" } }),
      400,
      "INVALID_MODE",
    ],
    [
      "search",
      "max_area over 5000",
      (i) => ({ substrate: i.ws2, film: i.mos2, params: { max_area: 6000 } }),
      400,
      "OUT_OF_RANGE",
    ],
    ["search", "max_results 0", (i) => ({ substrate: i.ws2, film: i.mos2, params: { max_results: 0 } }), 400, "OUT_OF_RANGE"],
    [
      "search",
      "Miller index 9",
      (i) => ({ substrate: i.cu, film: i.graphite, params: { substrate_miller: [9, 0, 0] } }),
      400,
      "INVALID_MILLER",
    ],
    [
      "search",
      "area budget",
      (i) => ({ substrate: i.ws2, film: i.graphene, params: { mode: "slab", max_area: 5000 } }),
      400,
      "AREA_TOO_LARGE",
    ],
    ["search", "a molecule", (i) => ({ substrate: { sites: i.ws2.sites }, film: i.mos2 }), 400, "MISSING_LATTICE"],
    [
      "search",
      "unknown element",
      (i) => ({ substrate: i.ws2, film: { ...i.mos2, sites: [{ species: [{ element: "Xx", occu: 1 }], abc: [0, 0, 0] }] } }),
      400,
      "INVALID_ELEMENT",
    ],
    [
      "build",
      "twist (defect 17)",
      (i, m) => ({ substrate: i.ws2, film: i.mos2, match: m, params: { twist_angle: 5 }, search_params: SLAB }),
      400,
      "TWIST_NOT_COMMENSURATE",
    ],
    [
      "build",
      "match of other inputs (defect 16)",
      (i, m) => ({ substrate: i.cu111, film: i.graphene, match: m, search_params: SLAB }),
      400,
      "MATCH_MISMATCH",
    ],
    [
      "build",
      "singular transformation",
      (i, m) => ({
        substrate: i.ws2,
        film: i.mos2,
        match: {
          ...m,
          film_transformation: [
            [1, 1],
            [1, 1],
          ],
        },
        search_params: SLAB,
      }),
      400,
      "INVALID_TRANSFORM",
    ],
    [
      "build",
      "gap 0",
      (i, m) => ({ substrate: i.ws2, film: i.mos2, match: m, params: { gap: 0 }, search_params: SLAB }),
      400,
      "OUT_OF_RANGE",
    ],
    [
      "build",
      "match without transformations",
      (i) => ({ substrate: i.ws2, film: i.mos2, match: { match_id: 0 }, search_params: SLAB }),
      422,
      "MALFORMED_REQUEST",
    ],
    [
      "build",
      "termination out of range",
      (i) => ({
        substrate: i.cu,
        film: i.graphite,
        match: {
          film_transformation: [
            [1, 0],
            [0, 1],
          ],
          substrate_transformation: [
            [1, 0],
            [0, 1],
          ],
        },
        termination_index: 99,
        search_params: { mode: "bulk", substrate_miller: [1, 1, 1] },
      }),
      400,
      "INVALID_TERMINATION",
    ],
    [
      "build-manual",
      "transform too large",
      (i) => ({
        substrate: i.cu111,
        film: i.graphene,
        substrate_transform: [
          [90, 0],
          [0, 90],
        ],
        film_transform: [
          [1, 0],
          [0, 1],
        ],
      }),
      400,
      "TOO_MANY_ATOMS",
    ],
    [
      "build-manual",
      "xy_shift is not a field",
      (i) => ({
        substrate: i.ws2,
        film: i.mos2,
        substrate_transform: [
          [1, 0],
          [0, 1],
        ],
        film_transform: [
          [1, 0],
          [0, 1],
        ],
        xy_shift: [0, 0],
      }),
      422,
      "MALFORMED_REQUEST",
    ],
    [
      "batch-build",
      "unknown format (defect 19)",
      (i, m) => ({ substrate: i.ws2, film: i.mos2, match: m, fmt: "pdb" }),
      400,
      "INVALID_FORMAT",
    ],
    [
      "batch-build",
      "step grid too fine",
      (i, m) => ({ substrate: i.ws2, film: i.mos2, match: m, step_angstrom: 0.01 }),
      400,
      "TOO_MANY_STRUCTURES",
    ],
    ["batch-build", "n_shift 11", (i, m) => ({ substrate: i.ws2, film: i.mos2, match: m, n_shift: 11 }), 400, "OUT_OF_RANGE"],
    [
      "build-intermat",
      "separation 0",
      (i) => ({ substrate: i.cu, film: i.graphite, params: { separation: 0 } }),
      400,
      "OUT_OF_RANGE",
    ],
    [
      "build-intermat",
      "apply_strain as a string",
      (i) => ({ substrate: i.cu, film: i.graphite, params: { apply_strain: "yes" } }),
      422,
      "MALFORMED_REQUEST",
    ],
    [
      "search-lateral",
      "max_length 1000",
      (i) => ({ slab_A: i.mos2, slab_B: i.graphene, params: { max_length: 1000 } }),
      400,
      "OUT_OF_RANGE",
    ],
    [
      "search-lateral",
      "axis 2",
      (i) => ({ slab_A: i.mos2, slab_B: i.graphene, params: { interface_axis: 2 } }),
      400,
      "OUT_OF_RANGE",
    ],
    ["build-lateral", "n1 0", (i) => ({ slab_A: i.mos2, slab_B: i.graphene, match: { n1: 0, n2: 1 } }), 400, "OUT_OF_RANGE"],
    [
      "build-lateral",
      "edge of other slabs (defect 21)",
      (i) => ({ slab_A: i.mos2, slab_B: i.graphene, match: { n1: 1, n2: 1, edge_length_A: 9.9 } }),
      400,
      "MATCH_MISMATCH",
    ],
    [
      "grid-scan",
      "no labels, no n_atoms_substrate (defect 22)",
      (i) => ({ heterostructure: i.ws2, film: i.mos2 }),
      400,
      "INVALID_INDEX",
    ],
    [
      "grid-scan",
      "n_atoms_substrate beyond the atoms",
      (i) => ({ heterostructure: i.ws2, n_atoms_substrate: 3 }),
      400,
      "INVALID_INDEX",
    ],
    [
      "grid-scan",
      "grid 31",
      (i) => ({ heterostructure: i.ws2, n_atoms_substrate: 1, params: { n_grid_x: 31 } }),
      400,
      "OUT_OF_RANGE",
    ],
  ];

  it.each(rows)("%s, %s", async (route, _what, body, status, code) => {
    const s = await post("search", { substrate: inputs.ws2, film: inputs.mos2, params: { ...SLAB, max_area: 30 } });
    const r = await post(route, body(inputs, s.body.matches[0]));
    expect([r.status, r.body.code], JSON.stringify(r.body).slice(0, 300)).toEqual([status, code]);
  });

  it("abuse: the service stays responsive while the worst allowed search runs", async () => {
    const heavy = post("search", {
      substrate: inputs.ws2,
      film: inputs.mos2,
      params: { mode: "slab", max_area: 1200, max_results: 200 },
    });
    const t0 = performance.now();
    const health = await fetch(`${svc.url}/api/health`);
    expect(health.status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(1000);
    const r = await heavy;
    expect([r.status, r.body.n_matches, r.body.truncated]).toEqual([200, 200, true]);
  }, 120_000);
});
