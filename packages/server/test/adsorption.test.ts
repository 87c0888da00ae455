/**
 * `/api/adsorption/*` through HTTP and MCP with the real analysis worker, against pymatgen's
 * AdsorbateSiteFinder run directly on the same slabs (test/oracle/adsorption_oracle.py): Pt(111),
 * Cu(100), rutile TiO2(110) and stepped Pt(211). Then one row per fixed defect of the earlier
 * implementation, and the bad-input and abuse rows (caps answered before any work).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { runPython } from "atomstudio-testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./mcp-fixtures.ts";

const ORACLE = new URL("./oracle/adsorption_oracle.py", import.meta.url).pathname;
const KINDS = ["ontop", "bridge", "hollow"] as const;
type Kind = (typeof KINDS)[number];
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field against the oracle
type Body = Record<string, any>;
interface OracleSlab {
  slab: Body;
  top: Record<Kind, number[][]>;
  bottom: Record<Kind, number[][]>;
  placed_co: Body[];
}

const CO = {
  sites: [
    { species: [{ element: "C", occu: 1 }], xyz: [0, 0, 0] },
    { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 1.128] },
  ],
};
const atom = (element: string) => ({ sites: [{ species: [{ element, occu: 1 }], xyz: [0, 0, 0] }] });
const dist = (a: number[], b: number[]) => Math.hypot(...a.map((x, i) => x - (b[i] as number)));

describe("adsorption", () => {
  let svc: RunningService;
  let oracle: Record<string, OracleSlab>;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${svc.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Body };
  };
  const pt = () => oracle["Pt(111)"]?.slab as Body;

  beforeAll(async () => {
    [svc, oracle] = await Promise.all([startService(), runPython<Record<string, OracleSlab>>(ORACLE, { slabs: true })]);
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
  });

  describe("sites equal pymatgen's AdsorbateSiteFinder (same count per kind, positions within 1e-6 Å)", () => {
    const rows: Array<[string, "top" | "bottom" | "both"]> = [
      ["Pt(111)", "top"],
      ["Pt(111)", "both"],
      ["Cu(100)", "top"],
      ["TiO2(110)", "top"],
      ["TiO2(110)", "bottom"],
      ["Pt(211) stepped", "top"],
      ["Pt(211) stepped", "both"],
    ];
    it.each(rows)("%s, %s surface", async (name, surface) => {
      const o = oracle[name] as OracleSlab;
      const { status, body } = await post("/api/adsorption/sites", { structure: o.slab, params: { surface } });
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      const sides = surface === "both" ? (["top", "bottom"] as const) : ([surface] as const);
      for (const side of sides)
        for (const kind of KINDS) {
          const ours = body.sites.filter((s: Body) => s.surface === side && s.pymatgen_kind === kind);
          const theirs = o[side][kind];
          expect(ours.length, `${side} ${kind}`).toBe(theirs.length);
          // matched one to one: every pymatgen site has ours within 1e-6 Å, in pymatgen's order
          for (const [i, p] of theirs.entries()) expect(dist(ours[i].position, p)).toBeLessThan(1e-6);
        }
      expect(body.sites.length).toBe(body.n_top + body.n_bridge + body.n_hollow3 + body.n_hollow4);
      expect(body.sites.map((s: Body) => s.id)).toEqual(body.sites.map((_: unknown, i: number) => i));
    });

    it("site types name the surface atoms around each site (Pt(111): fcc and hcp hollows are hollow3; Cu(100)'s square centre is hollow4)", async () => {
      const a = (await post("/api/adsorption/sites", { structure: pt() })).body;
      expect(a.sites.map((s: Body) => s.site_type)).toEqual(["top", "bridge", "hollow3", "hollow3"]);
      expect(a.sites[2].neighbor_elements).toEqual(["Pt", "Pt", "Pt"]);
      expect(a.sites[0].env_signature).toBe("Pt");
      const c = (await post("/api/adsorption/sites", { structure: oracle["Cu(100)"]?.slab })).body;
      expect(c.sites.map((s: Body) => s.site_type).sort()).toEqual(["bridge", "hollow4", "top"]);
    });
  });

  it("placement equals pymatgen's add_adsorbate (CO at every Pt(111), Cu(100), TiO2(110), Pt(211) site; coordinates and StructureMatcher)", async () => {
    const pairs: Array<[Body, Body]> = [];
    for (const [name, o] of Object.entries(oracle)) {
      const sites = (await post("/api/adsorption/sites", { structure: o.slab })).body.sites as Body[];
      const ordered = KINDS.flatMap((k) => sites.filter((s) => s.pymatgen_kind === k));
      expect(ordered.length, name).toBe(o.placed_co.length);
      for (const [i, site] of ordered.entries()) {
        const { status, body } = await post("/api/adsorption/place", {
          slab: o.slab,
          adsorbate: CO,
          site_position: site.position,
          site_normal: site.normal,
          on_overlap: "error",
          clearance: 0,
        });
        expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
        const ref = o.placed_co[i] as Body;
        expect(body.structure.sites.length).toBe(ref.sites.length);
        for (const [j, s] of (ref.sites as Body[]).entries()) expect(dist(body.structure.sites[j].xyz, s.xyz)).toBeLessThan(1e-6);
        expect(body.adsorbate_indices).toEqual([ref.sites.length - 2, ref.sites.length - 1]);
        pairs.push([body.structure, ref]);
      }
    }
    const fits = await runPython<boolean[]>(ORACLE, { match: pairs });
    expect(fits.every(Boolean)).toBe(true);
    expect(fits.length).toBeGreaterThan(20);
  }, 120_000);

  describe("the earlier implementation's defects, fixed", () => {
    it("sites answer 200 with sites, not 503", async () => {
      const { status, body } = await post("/api/adsorption/sites", { structure: pt(), params: {} });
      expect(status).toBe(200);
      expect(body.sites.length).toBeGreaterThan(0);
    });

    it("place-dual answers 200: two adsorbates on sites target ± tolerance apart (sites found when not given)", async () => {
      const { status, body } = await post("/api/adsorption/place-dual", {
        structure: pt(),
        adsorbate1: CO,
        adsorbate2: atom("O"),
        target_distance: 1.6,
        distance_tolerance: 0.1,
      });
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      const n = pt().sites.length;
      expect(body.ads1_indices).toEqual([n, n + 1]);
      expect(body.ads2_indices).toEqual([n + 2]);
      expect(body.all_adsorbate_indices).toEqual([n, n + 1, n + 2]);
      expect(Math.abs(body.site_distance - 1.6)).toBeLessThanOrEqual(0.1);
      expect(body.structure.sites.map((s: Body) => s.species[0].element).slice(n)).toEqual(["C", "O", "O"]);
    });

    it("place-dual with no pair in tolerance is 400 NO_SITE_PAIR, not the closest pair anyway", async () => {
      const { status, body } = await post("/api/adsorption/place-dual", {
        slab: pt(),
        adsorbate1: CO,
        adsorbate2: CO,
        sites: [{ position: [0, 0, 30] }, { position: [0.5, 0, 30] }],
        target_distance: 5,
        distance_tolerance: 0.5,
      });
      expect([status, body.code]).toEqual([400, "NO_SITE_PAIR"]);
    });

    it("the clearance counts periodic images: an atom overlapping only an image of a slab atom is caught", async () => {
      const slab = pt();
      const a = slab.lattice.matrix[0] as number[];
      const top = (slab.sites as Body[]).reduce((m, s) => (s.xyz[2] > m.xyz[2] ? s : m));
      // the top atom shifted by one lattice vector a: no slab atom is there in the home cell
      const image = top.xyz.map((x: number, i: number) => x + (a[i] as number) + (i === 2 ? 0.5 : 0));
      const { status, body } = await post("/api/adsorption/place", {
        slab,
        adsorbate: atom("H"),
        site_position: image,
        site_normal: [0, 0, 1],
        on_overlap: "error",
      });
      expect([status, body.code]).toEqual([400, "ADSORBATE_OVERLAP"]);
      const lifted = await post("/api/adsorption/place", {
        slab,
        adsorbate: atom("H"),
        site_position: image,
        site_normal: [0, 0, 1],
      });
      expect(lifted.status).toBe(200);
      expect(lifted.body.lift).toBeCloseTo(1.0, 1);
      expect(lifted.body.min_distance).toBeGreaterThanOrEqual(1.5);
    });

    it("lifting that cannot clear within max_lift is 400 ADSORBATE_OVERLAP, not a silent 10 Å", async () => {
      const top = (pt().sites as Body[]).reduce((m, s) => (s.xyz[2] > m.xyz[2] ? s : m));
      const { status, body } = await post("/api/adsorption/place", {
        slab: pt(),
        adsorbate: atom("H"),
        site_position: top.xyz,
        site_normal: [0, 0, 1],
        max_lift: 0.5,
      });
      expect([status, body.code]).toEqual([400, "ADSORBATE_OVERLAP"]);
    });

    it.each([
      ["an index past the adsorbate", { binding_atom_indices: [2] }],
      ["a negative index", { binding_atom_index: -1 }],
      ["an empty list (was NaN coordinates)", { binding_atom_indices: [] }],
    ])("binding atoms: %s is 400 INVALID_BINDING_INDEX, not 500", async (_what, extra) => {
      const { status, body } = await post("/api/adsorption/place", {
        slab: pt(),
        adsorbate: CO,
        site_position: [0, 0, 30],
        ...extra,
      });
      expect([status, body.code]).toEqual([400, "INVALID_BINDING_INDEX"]);
    });

    it("neighbor_positions, once refused (422), aligns formate over a Pt(111) bridge found by /sites: each O over its own Pt", async () => {
      const slab = pt();
      const bridge = (await post("/api/adsorption/sites", { structure: slab })).body.sites.find(
        (s: Body) => s.site_type === "bridge",
      ) as Body;
      // the home-cell positions of the bridge's two atoms as /sites names them: in this 1×1 cell, one atom and its image
      const neighbors = (bridge.neighbor_indices as number[]).map((i) => slab.sites[i].xyz as number[]);
      expect(neighbors.length).toBe(2);
      const formate = {
        sites: [
          { species: [{ element: "O", occu: 1 }], xyz: [-0.95, 0.4, 0.3] },
          { species: [{ element: "O", occu: 1 }], xyz: [1.05, -0.5, -0.2] },
          { species: [{ element: "C", occu: 1 }], xyz: [0.25, 0.1, 0.55] },
          { species: [{ element: "H", occu: 1 }], xyz: [0.55, 0.3, 1.6] },
        ],
      };
      const { status, body } = await post("/api/adsorption/place", {
        slab,
        adsorbate: formate,
        binding_atom_indices: [0, 1],
        site_position: bridge.position,
        site_normal: bridge.normal,
        neighbor_positions: neighbors,
      });
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(body.neighbor_alignment.applied).toBe(true);
      // in-plane distance from each O to its Pt, over the slab's in-plane images: (2.775 − 2.2)/2 at the optimum
      const n = bridge.normal as number[];
      const [a, b] = slab.lattice.matrix as number[][];
      const n0 = slab.sites.length;
      for (const [k, j] of (body.neighbor_alignment.nearest_neighbor as number[]).entries()) {
        const o = body.structure.sites[n0 + k].xyz as number[];
        let best = Number.POSITIVE_INFINITY;
        for (let i = -1; i <= 1; i++)
          for (let m = -1; m <= 1; m++) {
            const d = o.map((x, c) => x - (neighbors[j]![c]! + i * a![c]! + m * b![c]!));
            const along = d.reduce((t, x, c) => t + x * n[c]!, 0);
            best = Math.min(best, Math.hypot(...d.map((x, c) => x - along * n[c]!)));
          }
        expect(best).toBeCloseTo((2.7747 - Math.hypot(2, 0.9, 0.5)) / 2, 1);
      }
    });

    it("auto_rotate puts the mass-weighted centre straight above the binding atom (not the unweighted centroid)", async () => {
      // formyl-like H–C=O bound through C, given in an arbitrary orientation
      const hco = {
        sites: [
          { species: [{ element: "C", occu: 1 }], xyz: [0.3, -0.2, 0.1] },
          { species: [{ element: "O", occu: 1 }], xyz: [1.2, 0.5, -0.4] },
          { species: [{ element: "H", occu: 1 }], xyz: [-0.6, 0.4, 0.9] },
        ],
      };
      const { status, body } = await post("/api/adsorption/place", {
        slab: pt(),
        adsorbate: hco,
        site_position: [1, 1, 40],
        site_normal: [0, 0, 1],
      });
      expect(status).toBe(200);
      const n = pt().sites.length;
      const [c, o, h] = [n, n + 1, n + 2].map((i) => body.structure.sites[i].xyz as number[]);
      const masses = [12.011, 15.999, 1.008];
      const com = [0, 1, 2].map(
        (k) => ((c as number[])[k]! * masses[0]! + (o as number[])[k]! * masses[1]! + (h as number[])[k]! * masses[2]!) / 29.018,
      );
      expect(Math.hypot(com[0]! - c![0]!, com[1]! - c![1]!)).toBeLessThan(1e-3);
      const centroid = [0, 1].map((k) => ((c as number[])[k]! + o![k]! + h![k]!) / 3);
      expect(Math.hypot(centroid[0]! - c![0]!, centroid[1]! - c![1]!)).toBeGreaterThan(0.05);
      expect(body.binding_atom_position).toEqual([1, 1, 40].map((x) => expect.closeTo(x, 9)));
    });

    it("a non-periodic result is a molecule with Cartesian xyz, never Cartesian numbers in abc", async () => {
      const cluster = {
        sites: [
          { species: [{ element: "Pt", occu: 1 }], xyz: [0, 0, 0] },
          { species: [{ element: "Pt", occu: 1 }], xyz: [2.77, 0, 0] },
        ],
      };
      const { status, body } = await post("/api/adsorption/place", {
        slab: cluster,
        adsorbate: CO,
        site_position: [1.385, 0, 1.8],
      });
      expect(status).toBe(200);
      expect(body.structure["@class"]).toBe("Molecule");
      expect(body.structure.sites[2]).not.toHaveProperty("abc");
      expect(body.structure.sites[2].xyz).toEqual([1.385, 0, 1.8].map((x) => expect.closeTo(x, 9)));
    });

    it("unknown fields are refused (422), not ignored", async () => {
      const a = await post("/api/adsorption/sites", { structure: pt(), params: { hieght: 2 } });
      expect([a.status, a.body.code]).toEqual([422, "MALFORMED_REQUEST"]);
      const b = await post("/api/adsorption/place", {
        structure: pt(),
        site: [0, 0, 1],
        height: 2,
        adsorbate: CO,
        site_position: [0, 0, 1],
      });
      expect([b.status, b.body.code]).toEqual([422, "MALFORMED_REQUEST"]);
    });
  });

  describe("bad input and abuse: coded answers, caps before any work", () => {
    const big = (n: number) => ({
      lattice: {
        matrix: [
          [100, 0, 0],
          [0, 100, 0],
          [0, 0, 100],
        ],
      },
      sites: Array.from({ length: n }, (_, i) => ({
        species: [{ element: "Pt", occu: 1 }],
        xyz: [i % 50, Math.floor(i / 50) * 2, 1],
      })),
    });
    const rows: Array<[string, string, () => Body, number, string]> = [
      ["sites: a molecule", "/api/adsorption/sites", () => ({ structure: CO }), 400, "MISSING_LATTICE"],
      [
        "sites: height past 5 Å",
        "/api/adsorption/sites",
        () => ({ structure: pt(), params: { height: 50 } }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      [
        "sites: negative merge",
        "/api/adsorption/sites",
        () => ({ structure: pt(), params: { merge: -1 } }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      [
        "sites: an alpha-shape alpha",
        "/api/adsorption/sites",
        () => ({ structure: pt(), params: { alpha: 3 } }),
        400,
        "UNSUPPORTED_PARAMETER",
      ],
      [
        "sites: pbc false",
        "/api/adsorption/sites",
        () => ({ structure: pt(), params: { pbc: false } }),
        400,
        "UNSUPPORTED_PARAMETER",
      ],
      [
        "sites: surface top with keep_bottom",
        "/api/adsorption/sites",
        () => ({ structure: pt(), params: { surface: "top", keep_bottom: true } }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      [
        "sites: an unknown kind",
        "/api/adsorption/sites",
        () => ({ structure: pt(), params: { positions: ["subsurface"] } }),
        422,
        "MALFORMED_REQUEST",
      ],
      ["sites: no structure", "/api/adsorption/sites", () => ({}), 422, "MALFORMED_REQUEST"],
      [
        "sites: an unknown element",
        "/api/adsorption/sites",
        () => ({ structure: { ...pt(), sites: [{ species: [{ element: "Xx", occu: 1 }], xyz: [0, 0, 0] }] } }),
        400,
        "INVALID_ELEMENT",
      ],
      ["sites: an empty slab", "/api/adsorption/sites", () => ({ structure: { ...pt(), sites: [] } }), 400, "INVALID_STRUCTURE"],
      ["sites: 2001 atoms", "/api/adsorption/sites", () => ({ structure: big(2001) }), 400, "TOO_MANY_ATOMS"],
      [
        "place: an adsorbate of 201 atoms",
        "/api/adsorption/place",
        () => ({ slab: pt(), adsorbate: { sites: big(201).sites }, site_position: [0, 0, 40] }),
        400,
        "TOO_MANY_ATOMS",
      ],
      [
        "place: a zero normal",
        "/api/adsorption/place",
        () => ({ slab: pt(), adsorbate: CO, site_position: [0, 0, 40], site_normal: [0, 0, 0] }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      [
        "place: a non-finite position",
        "/api/adsorption/place",
        () => ({ slab: pt(), adsorbate: CO, site_position: [0, 0, "x"] }),
        422,
        "MALFORMED_REQUEST",
      ],
      [
        "place: slab and structure both",
        "/api/adsorption/place",
        () => ({ slab: pt(), structure: pt(), adsorbate: CO, site_position: [0, 0, 40] }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      ["place: no slab", "/api/adsorption/place", () => ({ adsorbate: CO, site_position: [0, 0, 40] }), 400, "INVALID_STRUCTURE"],
      [
        "place: clearance of 50 Å",
        "/api/adsorption/place",
        () => ({ slab: pt(), adsorbate: CO, site_position: [0, 0, 40], clearance: 50 }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      [
        "place: 65 neighbor_positions (cap 64; the alignment's rows: adsorption-orientation.test.ts)",
        "/api/adsorption/place",
        () => ({
          slab: pt(),
          adsorbate: CO,
          binding_atom_indices: [0, 1],
          site_position: [0, 0, 40],
          neighbor_positions: Array.from({ length: 65 }, () => [0, 0, 38]),
        }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
      [
        "place-dual: 1001 sites",
        "/api/adsorption/place-dual",
        () => ({
          slab: pt(),
          adsorbate1: CO,
          adsorbate2: CO,
          sites: Array.from({ length: 1001 }, () => ({ position: [0, 0, 0] })),
        }),
        422,
        "MALFORMED_REQUEST",
      ],
      [
        "place-dual: one site",
        "/api/adsorption/place-dual",
        () => ({ slab: pt(), adsorbate1: CO, adsorbate2: CO, sites: [{ position: [0, 0, 40] }] }),
        400,
        "NO_SITE_PAIR",
      ],
      [
        "place-dual: binding index past adsorbate 2",
        "/api/adsorption/place-dual",
        () => ({ slab: pt(), adsorbate1: CO, adsorbate2: CO, ads2_binding_indices: [5] }),
        400,
        "INVALID_BINDING_INDEX",
      ],
      [
        "place-dual: a molecule and no sites",
        "/api/adsorption/place-dual",
        () => ({ slab: CO, adsorbate1: CO, adsorbate2: CO }),
        400,
        "MISSING_LATTICE",
      ],
      [
        "place-dual: negative tolerance",
        "/api/adsorption/place-dual",
        () => ({ slab: pt(), adsorbate1: CO, adsorbate2: CO, distance_tolerance: -1 }),
        400,
        "INVALID_ADSORPTION_PARAMETER",
      ],
    ];
    it.each(rows)("%s → %i %s", async (_what, path, body, status, code) => {
      const t = performance.now();
      const res = await post(path, body());
      expect([res.status, res.body.code], JSON.stringify(res.body).slice(0, 200)).toEqual([status, code]);
      if (code === "TOO_MANY_ATOMS") expect(performance.now() - t).toBeLessThan(2000);
    });
  });

  it("health answers, and MCP svc_adsorption_sites gives the HTTP answer", async () => {
    const h = await fetch(`${svc.url}/api/adsorption/health`);
    expect(await h.json()).toEqual({ status: "healthy", service: "adsorption" });
    const client = new Client({ name: "adsorption-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(
        expect.arrayContaining(["svc_adsorption_sites", "svc_adsorption_place", "svc_adsorption_place_dual"]),
      );
      const viaMcp = await client.callTool({ name: "svc_adsorption_sites", arguments: { structure: pt() } });
      const viaHttp = await post("/api/adsorption/sites", { structure: pt() });
      expect(viaMcp.structuredContent).toEqual(viaHttp.body);
    } finally {
      await client.close();
    }
  });
});
