/**
 * `/api/adsorption/place` `neighbor_positions` (multidentate alignment) and `/place-dual` step 3
 * (adsorbate 2 turned to face adsorbate 1) through HTTP and MCP, checked geometrically on the
 * answers: the summed in-plane distance of the binding atoms to their nearest neighbours is no
 * larger than after any 1° turn (brute force here), and the facing turn puts atoms where the rule
 * in the adsorption README says. Then the bad-input rows (caps before any work).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "./mcp-fixtures.ts";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field
type Body = Record<string, any>;
type V = [number, number, number];

const site = (element: string, xyz: V) => ({ species: [{ element, occu: 1 }], xyz });
const A = 2.77; // Pt–Pt, Å
const hex = (i: number, j: number): V => [A * (i + j / 2), (A * j * Math.sqrt(3)) / 2, 5];
/** A 3×3 Pt(111)-like monolayer at z = 5, periodic in-plane. */
const PT111 = {
  lattice: {
    matrix: [
      [3 * A, 0, 0],
      [1.5 * A, 1.5 * A * Math.sqrt(3), 0],
      [0, 0, 20],
    ],
  },
  sites: [0, 1, 2].flatMap((i) => [0, 1, 2].map((j) => site("Pt", hex(i, j)))),
};
/** A square Pt grid (2.5 Å) at z = 5 in a 10 × 10 cell, with optional extra atoms. */
const square = (extra: Array<ReturnType<typeof site>> = []) => ({
  lattice: {
    matrix: [
      [10, 0, 0],
      [0, 10, 0],
      [0, 0, 30],
    ],
  },
  sites: [...[0, 1, 2, 3].flatMap((i) => [0, 1, 2, 3].map((j) => site("Pt", [2.5 * i, 2.5 * j, 5]))), ...extra],
});

// formate through both O, tilted and turned arbitrarily (its C2 axis is not along z)
const FORMATE = {
  sites: [site("O", [-0.95, 0.4, 0.3]), site("O", [1.05, -0.5, -0.2]), site("C", [0.25, 0.1, 0.55]), site("H", [0.55, 0.3, 1.6])],
};
const TRIPOD = {
  sites: [
    ...[0, 1, 2].map((k) => {
      const t = (2 * Math.PI * k) / 3 + 0.3;
      return site("O", [(2.5 / Math.sqrt(3)) * Math.cos(t), (2.5 / Math.sqrt(3)) * Math.sin(t), 0]);
    }),
    site("C", [0, 0, 0.8]),
  ],
};
const O = { sites: [site("O", [0, 0, 0])] };
const CO = { sites: [site("C", [0, 0, 0]), site("O", [0, 0, 1.128])] };
// binding atom N with an H 1.9 Å to its side: a molecule with an in-plane direction
const ARM = { sites: [site("N", [0, 0, 0]), site("H", [0, 1.9, 0.5])] };

const centroid = (ps: V[]): V => [0, 1, 2].map((k) => ps.reduce((s, p) => s + p[k]!, 0) / ps.length) as V;
/** Summed in-plane (normal z) distance from each binding atom, turned by deg about their centroid, to its nearest neighbour. */
const cost = (binding: V[], neighbors: V[], deg: number): number => {
  const [cx, cy] = centroid(binding);
  const t = (deg * Math.PI) / 180;
  return binding.reduce((sum, [x, y]) => {
    const rx = cx + Math.cos(t) * (x - cx) - Math.sin(t) * (y - cy);
    const ry = cy + Math.sin(t) * (x - cx) + Math.cos(t) * (y - cy);
    return sum + Math.min(...neighbors.map((q) => Math.hypot(rx - q[0], ry - q[1])));
  }, 0);
};

describe("adsorption orientation", () => {
  let svc: RunningService;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${svc.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Body };
  };
  beforeAll(async () => {
    svc = await startService();
  }, 60_000);
  afterAll(async () => {
    await svc?.close();
  });
  const slabAtoms = PT111.sites.length;
  const adsorbateXYZ = (body: Body): V[] => (body.structure.sites as Body[]).slice(slabAtoms).map((s) => s.xyz as V);

  describe("place: neighbor_positions turns a multidentate adsorbate onto its neighbours", () => {
    const bridge = [hex(1, 1), hex(2, 1)];
    const hollow = [hex(1, 1), hex(2, 1), hex(1, 2)];
    const rows: Array<[string, Body, number[], V[]]> = [
      ["bidentate formate over a bridge, 2 neighbours", FORMATE, [0, 1], bridge],
      ["tridentate tripod over a hollow, 3 neighbours", TRIPOD, [0, 1, 2], hollow],
    ];
    it.each(rows)("%s: no 1° turn of the answer does better", async (_what, adsorbate, binding, neighbors) => {
      const [x, y] = centroid(neighbors);
      const { status, body } = await post("/api/adsorption/place", {
        slab: PT111,
        adsorbate,
        binding_atom_indices: binding,
        site_position: [x, y, 7],
        neighbor_positions: neighbors,
      });
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      const b = binding.map((i) => adsorbateXYZ(body)[i] as V);
      const na = body.neighbor_alignment;
      expect([na.applied, na.reason]).toEqual([true, null]);
      expect(na.in_plane_distance).toBeCloseTo(cost(b, neighbors, 0), 9);
      for (let deg = 1; deg < 360; deg++) expect(cost(b, neighbors, 0)).toBeLessThanOrEqual(cost(b, neighbors, deg) + 1e-9);
      // every binding atom has its own nearest neighbour, and is within 0.6 Å of it in-plane
      expect(new Set(na.nearest_neighbor).size).toBe(binding.length);
      for (const [k, p] of b.entries()) {
        const q = neighbors[na.nearest_neighbor[k]] as V;
        expect(Math.hypot(p[0] - q[0], p[1] - q[1])).toBeLessThan(0.6);
      }
      expect(body.binding_atom_position).toEqual([x, y, 7].map((v) => expect.closeTo(v, 9)));
      expect(body.message).toMatch(/turned \d+° about the normal/);
    });

    const ignored: Array<[string, Body, string]> = [
      ["one binding atom", { binding_atom_indices: [0], neighbor_positions: bridge }, "one binding atom"],
      ["fewer than two neighbours", { binding_atom_indices: [0, 1], neighbor_positions: [bridge[0]] }, "fewer than two"],
      ["an empty list", { binding_atom_indices: [0, 1], neighbor_positions: [] }, "fewer than two"],
      [
        "auto_rotate false",
        { binding_atom_indices: [0, 1], neighbor_positions: bridge, auto_rotate: false },
        "auto_rotate is false",
      ],
    ];
    it.each(ignored)("ignored with %s: the placement without them, and the reason", async (_what, extra, reason) => {
      const base = { slab: PT111, adsorbate: FORMATE, site_position: [4, 2, 7] };
      const { neighbor_positions: _n, ...without } = extra;
      const [a, b] = await Promise.all([
        post("/api/adsorption/place", { ...base, ...extra }),
        post("/api/adsorption/place", { ...base, ...without }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.body.structure).toEqual(b.body.structure);
      expect(a.body.neighbor_alignment.applied).toBe(false);
      expect(a.body.neighbor_alignment.reason).toContain(reason);
      expect(a.body.message).toContain("neighbor_positions ignored");
      expect(b.body.neighbor_alignment).toBeNull();
    });

    it("MCP svc_adsorption_place with neighbor_positions gives the HTTP answer", async () => {
      const args = {
        slab: PT111,
        adsorbate: FORMATE,
        binding_atom_indices: [0, 1],
        site_position: [...centroid(bridge).slice(0, 2), 7],
        neighbor_positions: bridge,
      };
      const client = new Client({ name: "adsorption-orientation-test", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
      try {
        const viaMcp = await client.callTool({ name: "svc_adsorption_place", arguments: args });
        expect(viaMcp.structuredContent).toEqual((await post("/api/adsorption/place", args)).body);
      } finally {
        await client.close();
      }
    });
  });

  describe("place-dual: adsorbate 2 turned so its first binding atom faces adsorbate 1's", () => {
    const dual = (over: Body) =>
      post("/api/adsorption/place-dual", {
        slab: square(),
        adsorbate1: O,
        adsorbate2: ARM,
        sites: [{ position: [1.25, 1.25, 7] }, { position: [5.25, 1.25, 7] }],
        target_distance: 4,
        distance_tolerance: 0.1,
        auto_rotate: false,
        ...over,
      });
    const n = 16; // square() Pt atoms
    // ARM placed unturned on site 2 has its H at site 2 + (0, 1.9, 0.5); the centroid → N direction is −y
    const rows: Array<[string, Body, string, number, V, number]> = [
      ["kept: the H swings to the far side (−90°)", {}, "applied", -90, [7.15, 1.25, 7.5], n],
      [
        "kept across the cell boundary: adsorbate 1's nearest image is on the −x side (+90° would face the far image)",
        { sites: [{ position: [8.25, 1.25, 7] }, { position: [1.25, 1.25, 7] }], target_distance: 3 },
        "applied",
        -90,
        [3.15, 1.25, 7.5],
        n,
      ],
      [
        "refused: an atom where the H would go (1.0 Å < 1.5), adsorbate 2 left as placed",
        { slab: square([site("Pt", [8.15, 1.25, 7.5])]) },
        "refused_clearance",
        -90,
        [5.25, 3.15, 7.5],
        n + 1,
      ],
      ["off: rotate_adsorbate2 false", { rotate_adsorbate2: false }, "off", 0, [5.25, 3.15, 7.5], n],
      [
        "no direction: CO stands straight over its binding atom",
        { adsorbate2: CO, auto_rotate: true },
        "no_direction",
        0,
        [5.25, 1.25, 8.128],
        n,
      ],
    ];
    it.each(rows)("%s", async (_what, over, state, angle, second, slabN) => {
      const { status, body } = await dual(over);
      expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(body.ads2_rotation.status).toBe(state);
      expect(body.ads2_rotation.angle_deg).toBeCloseTo(angle, 9);
      if (state === "refused_clearance") expect(body.ads2_rotation.min_distance).toBeCloseTo(1.0, 9);
      if (state === "applied") expect(body.ads2_rotation.min_distance).toBeGreaterThanOrEqual(1.5);
      expect(body.ads1_indices).toEqual([slabN]);
      expect(body.ads2_indices).toEqual([slabN + 1, slabN + 2]);
      expect(body.all_adsorbate_indices).toEqual([slabN, slabN + 1, slabN + 2]);
      const sites = body.structure.sites as Body[];
      expect(sites[slabN + 2]?.xyz).toEqual(second.map((v) => expect.closeTo(v, 9)));
      // the binding atoms stay on their sites; their distance is the sites'
      expect(body.binding_distance).toBeCloseTo(body.site_distance, 9);
      expect(body.lift).toEqual([0, 0]);
      expect(body.message).toMatch(state === "applied" ? /adsorbate 2 turned/ : /adsorbate 2 not turned/);
    });
  });

  describe("bad input: coded answers before any work", () => {
    const place = { slab: PT111, adsorbate: FORMATE, binding_atom_indices: [0, 1], site_position: [4, 2, 7] };
    const cluster = { sites: [site("Pt", [0, 0, 0]), site("Pt", [2.77, 0, 0])] };
    const near: V[] = [
      [0, 0, 0],
      [2.77, 0, 0],
    ];
    const rows: Array<[string, number, string, string, Body]> = [
      [
        "65 neighbor_positions (cap 64)",
        400,
        "INVALID_ADSORPTION_PARAMETER",
        "/api/adsorption/place",
        { ...place, neighbor_positions: Array.from({ length: 65 }, () => [4, 2, 5]) },
      ],
      [
        "a neighbour 50 Å from the site (no lattice: no nearer image)",
        400,
        "INVALID_ADSORPTION_PARAMETER",
        "/api/adsorption/place",
        { ...place, slab: cluster, site_position: [1.385, 0, 2], neighbor_positions: [near[0], [1.385, 50, 0]] },
      ],
      [
        "a neighbour at 1e300 (wrapping into the cell would lose every digit)",
        400,
        "INVALID_ADSORPTION_PARAMETER",
        "/api/adsorption/place",
        { ...place, neighbor_positions: [hex(1, 1), [1e300, 0, 0]] },
      ],
      [
        "a neighbour with two numbers",
        422,
        "MALFORMED_REQUEST",
        "/api/adsorption/place",
        { ...place, neighbor_positions: [hex(1, 1), [4, 2]] },
      ],
      [
        "a neighbour that is not a number",
        422,
        "MALFORMED_REQUEST",
        "/api/adsorption/place",
        { ...place, neighbor_positions: [hex(1, 1), [4, 2, "NaN"]] },
      ],
      ["neighbor_positions not a list", 422, "MALFORMED_REQUEST", "/api/adsorption/place", { ...place, neighbor_positions: 3 }],
      [
        "rotate_adsorbate2 not a boolean",
        422,
        "MALFORMED_REQUEST",
        "/api/adsorption/place-dual",
        {
          slab: PT111,
          adsorbate1: O,
          adsorbate2: O,
          sites: [{ position: [0, 0, 7] }, { position: [3, 0, 7] }],
          rotate_adsorbate2: "yes",
        },
      ],
    ];
    it("the same neighbours within 10 Å on that cluster are accepted", async () => {
      const res = await post("/api/adsorption/place", {
        ...place,
        slab: cluster,
        site_position: [1.385, 0, 2],
        neighbor_positions: near,
      });
      expect(res.status).toBe(200);
      expect(res.body.neighbor_alignment.applied).toBe(true);
    });
    it.each(rows)("%s → %i %s", async (_what, status, code, path, body) => {
      const res = await post(path, body);
      expect([res.status, res.body.code], JSON.stringify(res.body).slice(0, 200)).toEqual([status, code]);
    });
  });
});
