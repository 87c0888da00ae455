/**
 * The four MD routes over HTTP and as MCP tools on the shared trajectories (text, gzip and bzip2,
 * base64), then bad input and abuse: every row a coded 4xx, never a 500. The numbers themselves
 * are proven against MDAnalysis, mdtraj, scipy and scikit-learn in the core's oracle tests; here
 * the routes must give those same numbers.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { rdf, readTrajectory, selectAtoms } from "atomstudio-core";
import { generateTrajectory, readTestdata, testdataPath, toExtxyz } from "atomstudio-testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callEndpoint, callTool, expectSameAsEndpoint, opByTool, type RunningService, startService } from "./mcp-fixtures.ts";

let svc: RunningService;
let client: Client;
beforeAll(async () => {
  svc = await startService();
  client = new Client({ name: "atomstudio-test", version: "0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
});
afterAll(async () => {
  await client?.close();
  await svc?.close();
});

const post = async (path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
  const res = await fetch(svc.url + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

const gz = (rel: string) => ({
  content: readFileSync(testdataPath(rel)).toString("base64"),
  filename: rel.split("/").pop(),
  encoding: "base64",
});
const waterPdb = gz("md/water.pdb.gz");
const waterText = { content: readTestdata("md/water.extxyz.gz"), filename: "water.extxyz" };
const waterBz2 = {
  content: execFileSync("bzip2", ["-c"], { input: readTestdata("md/water.pdb.gz") }).toString("base64"),
  filename: "water.pdb",
  encoding: "base64",
};
const xdatcar = { content: readTestdata("md/XDATCAR.MD"), filename: "XDATCAR" };
const argyrodite = gz("md/example_XDATCAR.gz");

describe("the four routes on the shared files", () => {
  it.each([
    ["water.pdb.gz (base64 gzip)", waterPdb, "md/water.pdb.gz"],
    ["water.pdb bzip2 (base64)", waterBz2, "md/water.pdb.gz"],
    ["water.extxyz (text)", waterText, "md/water.extxyz.gz"],
  ])("RDF O–O of %s: first peak 2.75 ± 0.05 Å, equal to the core's", async (_n, trajectory, file) => {
    const r = await post("/api/md/rdf", { trajectory, selection_a: { elements: ["O"] }, r_max_ang: 7.5, n_bins: 150 });
    expect(r.status).toBe(200);
    const peak = r.body.first_peak as { r: number; g: number };
    expect(Math.abs(peak.r - 2.75)).toBeLessThanOrEqual(0.05);
    expect(r.body.n_frames_total).toBe(100);
    const t = readTrajectory(readTestdata(file), { filename: trajectory.filename }).trajectory;
    const O = selectAtoms(t, { elements: ["O"] });
    const core = rdf(t, { a: O, b: O, rMax: 7.5, nBins: 150 });
    (r.body.g as number[]).forEach((g, k) => {
      expect(g).toBeCloseTo(core.g[k] as number, 6);
    });
  });

  it("RDF default r_max is min(10, half the cell) and a frame stride is honoured", async () => {
    const r = await post("/api/md/rdf", {
      trajectory: waterPdb,
      selection_a: { elements: ["O"] },
      frames_range: { start: 10, step: 10 },
      timestep_ps: 0.5,
    });
    expect(r.status).toBe(200);
    expect(r.body.r_max_ang).toBe(7.5);
    expect(r.body.frames).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(r.body.time_ps).toEqual([5, 10, 15, 20, 25, 30, 35, 40, 45]);
  });

  it("RMSD of the argyrodite's Li, unwrapped, no fit in a cell", async () => {
    const r = await post("/api/md/rmsd", { trajectory: argyrodite, selection: { elements: ["Li"] }, timestep_ps: 0.1 });
    expect(r.status).toBe(200);
    expect(r.body.fit).toBe(false);
    expect(r.body.unwrapped).toBe(true);
    const rmsd = r.body.rmsd_ang as number[];
    expect(rmsd).toHaveLength(140);
    expect(rmsd[0]).toBe(0);
    expect(rmsd[139]).toBeGreaterThan(rmsd[10] as number);
  });

  it("H-bonds of water per frame, with the bonds listed", async () => {
    const r = await post("/api/md/hbonds", { trajectory: waterPdb, frames_range: { stop: 5 } });
    expect(r.status).toBe(200);
    const counts = r.body.counts as number[];
    expect(counts).toHaveLength(5);
    // Liquid water: 99 molecules hold roughly 1.5–1.9 H-bonds each by this criterion.
    for (const c of counts) expect(c).toBeGreaterThan(100);
    const first = (r.body.bonds as { angle_deg: number; distance_ang: number }[])[0];
    expect(first?.angle_deg).toBeGreaterThanOrEqual(150);
    expect(first?.distance_ang).toBeLessThanOrEqual(3);
  });

  it("clustering XDATCAR.MD frames: labels, medoids and a 2D embedding", async () => {
    const r = await post("/api/md/clustering", { trajectory: xdatcar, n_clusters: 2 });
    expect(r.status).toBe(200);
    expect(r.body.labels).toHaveLength(5);
    expect(r.body.n_clusters).toBe(2);
    expect((r.body.embedding as number[][]).every((p) => p.length === 2)).toBe(true);
    const clusters = r.body.clusters as { medoid_frame: number; size: number }[];
    expect(clusters.reduce((a, c) => a + c.size, 0)).toBe(5);
  });

  it.each([
    ["svc_rdf", { trajectory: waterPdb, selection_a: { elements: ["O"] } }],
    ["svc_rmsd", { trajectory: xdatcar }],
    ["svc_hbonds", { trajectory: waterText, frames_range: { stop: 3 } }],
    ["svc_clustering", { trajectory: xdatcar, method: "dbscan", eps_ang: 0.5, min_samples: 2 }],
  ])("MCP %s answers what its endpoint answers", async (tool, args) => {
    const [result, endpoint] = await Promise.all([callTool(client, tool, args), callEndpoint(svc.url, opByTool(tool), args)]);
    expect(endpoint.status).toBe(200);
    expectSameAsEndpoint(result, endpoint);
  });
});

const tric = generateTrajectory({ nAtoms: 9, nFrames: 3, cell: [8, 0, 0, 1, 8, 0, 0, 1, 8], seed: 2 });
const molecule = { content: "2\n\nO 0 0 0\nO 0 0 1.2\n2\n\nO 0 0 0\nO 0 0 1.3\n", filename: "o2.xyz" };

describe("bad input and abuse: coded errors, never a 500", () => {
  it.each([
    ["rdf", { trajectory: molecule }, 400, "MISSING_LATTICE"],
    ["rdf", { trajectory: waterPdb, r_max_ang: 7.6 }, 400, "R_MAX_TOO_LARGE"],
    ["rdf", { trajectory: waterPdb, n_bins: 1_000_000 }, 400, "TOO_MANY_BINS"],
    ["rdf", { trajectory: waterPdb, selection_a: { elements: ["Xe"] } }, 400, "EMPTY_SELECTION"],
    ["rdf", { trajectory: waterPdb, selection_a: { indices: [] } }, 400, "EMPTY_SELECTION"],
    ["rdf", { trajectory: waterPdb, selection_a: { indices: [297] } }, 400, "INVALID_INDEX"],
    ["rdf", { trajectory: waterPdb, frames_range: { start: 200 } }, 400, "INVALID_FRAME_RANGE"],
    ["rmsd", {}, 400, "MISSING_TRAJECTORY"],
    ["rmsd", { trajectory: xdatcar, frames: [] }, 400, "AMBIGUOUS_INPUT"],
    ["rmsd", { trajectory: xdatcar, reference_frame: 9 }, 400, "INVALID_REFERENCE"],
    [
      "rmsd",
      { trajectory: { content: "2\n\nO 0 0 0\nO 0 0 1\n3\n\nO 0 0 0\nO 0 0 1\nO 1 1 1\n", filename: "a.xyz" } },
      400,
      "INCONSISTENT_FRAMES",
    ],
    ["rmsd", { trajectory: { content: "not a trajectory at all", filename: "x.txt" } }, 400, "INVALID_FORMAT"],
    ["rmsd", { trajectory: { content: "%%%not base64%%%", encoding: "base64" } }, 400, "INVALID_ENCODING"],
    // found by the fuzzer: the base64 alphabet but a length no decoder accepts (was a 500)
    ["hbonds", { format: "poscar", trajectory: { content: "0\n\n", encoding: "base64" } }, 400, "INVALID_ENCODING"],
    [
      "rmsd",
      { trajectory: { content: Buffer.from([0x1f, 0x8b, 8, 0, 1, 2, 3]).toString("base64"), encoding: "base64" } },
      400,
      "INVALID_ENCODING",
    ],
    ["rmsd", { trajectory: { content: "x" }, frames_range: { step: 0 } }, 422, "MALFORMED_REQUEST"],
    ["hbonds", { trajectory: waterPdb, donors: { indices: [0], elements: ["O"] } }, 400, "INVALID_SELECTION"],
    ["hbonds", { trajectory: xdatcar }, 400, "EMPTY_SELECTION"],
    ["clustering", { trajectory: xdatcar, n_clusters: 9 }, 400, "INVALID_N_CLUSTERS"],
    [
      "clustering",
      {
        trajectory: {
          content: toExtxyz(generateTrajectory({ nAtoms: 1, nFrames: 1001, cell: [5, 0, 0, 0, 5, 0, 0, 0, 5] })),
          filename: "long.extxyz",
        },
      },
      400,
      "TOO_MANY_FRAMES",
    ],
    [
      "clustering",
      { frames: Array(2001).fill({ "@class": "Molecule", sites: [{ species: "O", xyz: [0, 0, 0] }] }) },
      400,
      "TOO_MANY_FRAMES",
    ],
    ["rdf", { trajectory: { content: toExtxyz(tric), filename: "t.extxyz" }, frames: [] }, 400, "AMBIGUOUS_INPUT"],
  ] as const)("%s → %i %s (row %#)", async (route, body, status, code) => {
    const r = await post(`/api/md/${route}`, body);
    expect(r.body.code, JSON.stringify(r.body).slice(0, 300)).toBe(code);
    expect(r.status).toBe(status);
  });

  it("a gzip bomb stops at the decoded-size cap (413) without inflating it all", async () => {
    const { gzipSync } = await import("node:zlib");
    const bomb = gzipSync(Buffer.alloc(1100 * 1024 * 1024, 32), { level: 9 });
    expect(bomb.length).toBeLessThan(2 * 1024 * 1024);
    const t0 = performance.now();
    const r = await post("/api/md/rmsd", { trajectory: { content: bomb.toString("base64"), encoding: "base64" } });
    expect(r.status).toBe(413);
    expect(r.body.code).toBe("PAYLOAD_TOO_LARGE");
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it("/api/structure/parse refuses more frames than the cap, before building them (the MD routes read such files whole)", async () => {
    const long = generateTrajectory({ nAtoms: 3, nFrames: 1500, cell: [6, 0, 0, 0, 6, 0, 0, 0, 6], seed: 4 });
    const r = await post("/api/structure/parse", { content: toExtxyz(long), filename: "long.extxyz" });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("TOO_MANY_FRAMES");
    const rdf = await post("/api/md/rmsd", { trajectory: { content: toExtxyz(long), filename: "long.extxyz" } });
    expect(rdf.status).toBe(200);
    expect(rdf.body.n_frames_total).toBe(1500);
  });

  it("frames as structure dictionaries work too (the optimizer's history)", async () => {
    const frames = [0, 0.1, 0.25].map((dz) => ({
      "@class": "Molecule",
      sites: [
        { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 0] },
        { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 1.2 + dz] },
      ],
    }));
    const r = await post("/api/md/rmsd", { frames });
    expect(r.status).toBe(200);
    expect(r.body.fit).toBe(true);
    expect((r.body.rmsd_ang as number[])[2]).toBeCloseTo(0.125, 9);
  });
});
