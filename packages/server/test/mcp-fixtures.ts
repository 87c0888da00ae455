/**
 * Shared by the MCP tests: a listening service on 127.0.0.1 (port 0), sample inputs for the tools,
 * the interface's error rows, and the direct HTTP call a tool result is compared with.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import { loadConfig, type ServiceConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { operations } from "../src/operations/index.ts";
import type { Operation } from "../src/registry/operation.ts";

export const SERVER_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The `atomstudio` command (runs the TypeScript sources through tsx). */
export const ATOMSTUDIO_BIN = join(SERVER_ROOT, "bin/atomstudio.js");

export interface RunningService {
  app: FastifyInstance;
  url: string;
  close: () => Promise<void>;
}

export const startService = async (over: Partial<ServiceConfig> = {}): Promise<RunningService> => {
  const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent", ...over }, {});
  const { app } = await buildApp({ config });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
};

export const mcpOperations = (): Operation[] => operations.filter((op) => op.mcp);
export const opByTool = (name: string): Operation => {
  const op = operations.find((o) => o.mcp === name);
  if (!op) throw new Error(`no operation for tool ${name}`);
  return op;
};

const species = (element: string) => [{ element, occu: 1 }];

/** Rock salt, conventional cell (8 sites). */
export const nacl = {
  "@module": "pymatgen.core.structure",
  "@class": "Structure",
  charge: 0,
  lattice: {
    matrix: [
      [5.64, 0, 0],
      [0, 5.64, 0],
      [0, 0, 5.64],
    ],
    pbc: [true, true, true],
  },
  properties: {},
  sites: [
    ...[
      [0, 0, 0],
      [0.5, 0.5, 0],
      [0.5, 0, 0.5],
      [0, 0.5, 0.5],
    ].map((abc) => ({ species: species("Na"), abc, label: "Na", properties: {} })),
    ...[
      [0.5, 0, 0],
      [0, 0.5, 0],
      [0, 0, 0.5],
      [0.5, 0.5, 0.5],
    ].map((abc) => ({ species: species("Cl"), abc, label: "Cl", properties: {} })),
  ],
};

export const water = {
  "@module": "pymatgen.core.structure",
  "@class": "Molecule",
  charge: 0,
  spin_multiplicity: 1,
  properties: {},
  sites: [
    { species: species("O"), xyz: [0, 0, 0.1173], label: "O", properties: {} },
    { species: species("H"), xyz: [0, 0.7572, -0.4692], label: "H", properties: {} },
    { species: species("H"), xyz: [0, -0.7572, -0.4692], label: "H", properties: {} },
  ],
};

export const emptyMolecule = { "@module": "pymatgen.core.structure", "@class": "Molecule", charge: 0, sites: [] };

/** A 16-site cell: 10 x 10 x 10 of it would be 16000 atoms. */
const nacl2 = { ...nacl, lattice: { ...nacl.lattice, matrix: [[11.28, 0, 0], nacl.lattice.matrix[1], nacl.lattice.matrix[2]] } };
nacl2.sites = [0, 1].flatMap((shift) =>
  nacl.sites.map((s) => ({ ...s, abc: [((s.abc[0] as number) + shift) / 2, s.abc[1] as number, s.abc[2] as number] })),
);

/**
 * A successful input per tool. A tool not listed here (added to the registry later) is called with
 * `{}`: the comparison with its endpoint still holds, whatever the endpoint answers.
 */
/** Tools that answer 503 QUEUE_UNAVAILABLE on a service without Redis (with Redis: workflow.test.ts). */
export const NEEDS_REDIS = new Set(["svc_workflow_create", "svc_workflow_run", "svc_workflow_status", "svc_workflow_cancel"]);

export const SAMPLES: Record<string, Record<string, unknown>> = {
  svc_workflow_status: { id: "wf_missing" },
  svc_adsorption_sites: { structure: nacl },
  svc_adsorption_place: { slab: nacl, adsorbate: water, site_position: [0, 0, 6], site_normal: [0, 0, 1], clearance: 0 },
  svc_adsorption_place_dual: {
    slab: nacl,
    adsorbate1: water,
    adsorbate2: water,
    sites: [{ position: [0, 0, 6] }, { position: [2, 2, 6] }],
    target_distance: 2.8,
    distance_tolerance: 1,
    clearance: 0,
  },
  svc_add_atom: { structure: nacl, element: "Cu", position: [1, 1, 1] },
  svc_add_atoms: {
    structure: water,
    atoms: [
      { element: "C", xyz: [2, 0, 0] },
      { element: "N", xyz: [0, 2, 0] },
    ],
  },
  svc_delete_atoms: { structure: nacl, indices: [0, 3] },
  svc_replace_atom: { structure: nacl, index: 1, new_element: "K" },
  svc_move_atom: { structure: water, index: 1, new_position: [0.5, 0.5, 0.5] },
  svc_move_atoms: { structure: nacl, indices: [0, 1], displacement: [0.1, 0, -0.2] },
  svc_supercell: { structure: nacl, scaling: [2, 1, 1] },
  svc_slab: { structure: nacl, miller: [1, 0, 0], thickness: 2, vacuum: 10 },
  svc_merge: { base: nacl, incoming: water, position: [2.82, 2.82, 2.82] },
  svc_build_strain: { structure: nacl, axis: "a", n_steps: 3 },
  svc_build_doping: { structure: nacl, host_element: "Na", dopant: "K", concentration: 2, enumerate: true },
  svc_build_substitution: { structure: nacl, groups: [{ target_indices: [0], replacement_elements: ["K", "Li"] }] },
  svc_build_random_substitution: {
    structure: nacl,
    host_element: "Cl",
    dopants: [{ element: "Br", count: 1 }],
    n_samples: 2,
    seed: 1,
  },
  svc_build_defect: { structure: nacl, site_index: -1 },
  svc_build_intercalation: { structure: nacl, species: "Li" },
  svc_build_nanoparticle: { element: "Pt", shape: "icosahedron", shells: 2 },
};

/** The error rows of the interface's tables: a tool, an input, the code it must fail with. */
export interface ErrorRow {
  tool: string;
  args: Record<string, unknown>;
  code: string;
}
const rows: [string, Record<string, unknown>, string][] = [
  ["svc_add_atom", { structure: nacl, element: "Xx", position: [0, 0, 0] }, "INVALID_ELEMENT"],
  ["svc_add_atoms", { structure: nacl, atoms: [{ element: "Qq", xyz: [0, 0, 0] }] }, "INVALID_ELEMENT"],
  ["svc_add_atoms", { structure: nacl, atoms: [] }, "EMPTY_ATOMS"],
  ["svc_delete_atoms", { structure: nacl, indices: [99] }, "INVALID_INDEX"],
  ["svc_delete_atoms", { structure: nacl, indices: [] }, "EMPTY_INDICES"],
  ["svc_replace_atom", { structure: nacl, index: 8, new_element: "K" }, "INVALID_INDEX"],
  ["svc_replace_atom", { structure: nacl, index: 0, new_element: "Kk" }, "INVALID_ELEMENT"],
  ["svc_move_atom", { structure: water, index: -1, new_position: [0, 0, 0] }, "INVALID_INDEX"],
  ["svc_move_atoms", { structure: nacl, indices: [0, 8], displacement: [1, 0, 0] }, "INVALID_INDEX"],
  ["svc_move_atoms", { structure: nacl, indices: [], displacement: [1, 0, 0] }, "EMPTY_INDICES"],
  ["svc_supercell", { structure: nacl, scaling: [0, 1, 1] }, "INVALID_SCALING"],
  ["svc_supercell", { structure: nacl, scaling: [11, 1, 1] }, "INVALID_SCALING"],
  ["svc_build_strain", { structure: nacl, axis: "q" }, "INVALID_AXIS"],
  ["svc_build_defect", { structure: nacl, supercell: "two" }, "INVALID_SCALING"],
  ["svc_build_doping", { structure: nacl, host_element: "Na", dopant: "K", concentration: 99 }, "INVALID_CONCENTRATION"],
  ["svc_supercell", { structure: water, scaling: [2, 2, 2] }, "MISSING_LATTICE"],
  ["svc_supercell", { structure: nacl2, scaling: [10, 10, 10] }, "TOO_MANY_ATOMS"],
  ["svc_merge", { base: emptyMolecule, incoming: emptyMolecule, position: [0, 0, 0] }, "EMPTY_STRUCTURES"],
  ["svc_merge", { base: nacl, incoming: water, position: [0, 0, 0], mode: "sideways" }, "INVALID_MODE"],
  ["svc_add_atom", { structure: nacl, element: "Cu" }, "MALFORMED_REQUEST"],
];
export const ERROR_ROWS: ErrorRow[] = rows.map(([tool, args, code]) => ({ tool, args, code }));

/** The endpoint's own answer to the same input: GET inputs go in the query string. */
export const callEndpoint = async (
  baseUrl: string,
  op: Operation,
  args: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> => {
  // path parameters (`:id`) from the arguments, as the stdio server forwards them
  const rest: Record<string, unknown> = { ...args };
  const path = op.path.replace(/:(\w+)/g, (_m, name: string) => {
    const v = rest[name];
    delete rest[name];
    return encodeURIComponent(String(v ?? ""));
  });
  const url = new URL(baseUrl + path);
  const init: RequestInit = { method: op.method, headers: { ...headers } };
  if (op.method === "GET")
    for (const [k, v] of Object.entries(rest)) url.searchParams.set(k, typeof v === "object" ? JSON.stringify(v) : String(v));
  else {
    init.headers = { ...headers, "content-type": "application/json" };
    init.body = JSON.stringify(args);
  }
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
};

export const callTool = async (client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;

/** A tool result says what the endpoint said: same body, error exactly when the endpoint failed. */
export const expectSameAsEndpoint = (result: CallToolResult, endpoint: { status: number; body: unknown }): void => {
  expect((endpoint.body as { code?: string }).code, JSON.stringify(endpoint.body).slice(0, 300)).not.toBe("INTERNAL_ERROR");
  expect(result.isError ?? false).toBe(endpoint.status >= 400);
  expect(result.structuredContent).toEqual(endpoint.body);
  const text = result.content.find((c) => c.type === "text");
  expect(text).toBeDefined();
  const parsed = JSON.parse((text as { text: string }).text) as Record<string, unknown>;
  const body = endpoint.body as Record<string, unknown>;
  if (typeof body.image === "string" && !result.isError) {
    const image = result.content.find((c) => c.type === "image") as { data: string; mimeType: string } | undefined;
    expect(image?.data).toBe(body.image);
    expect(image?.mimeType).toBe(`image/${body.format}`);
    expect({ ...parsed, image: body.image }).toEqual(body);
  } else expect(parsed).toEqual(body);
};
