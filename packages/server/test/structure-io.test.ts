/** `/api/structure/parse` and `/api/structure/export` over HTTP, on the shared real files. */
import { readTestdata } from "atomstudio-testkit";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cuCell, makeApp, water } from "./helpers.ts";

let app: FastifyInstance;
let base: string;
beforeAll(async () => {
  app = await makeApp();
  base = await app.listen({ host: "127.0.0.1", port: 0 });
});
afterAll(() => app.close());

// [file, filename sent, format, atoms, frames (undefined: single)]
const files: Array<[string, string, string, number, number | undefined]> = [
  ["structures/Cod_2100513.cif", "Cod_2100513.cif", "cif", 20, undefined],
  ["structures/POSCAR_LiFePO4", "POSCAR", "poscar", 28, undefined],
  ["structures/benzene.xyz", "benzene.xyz", "xyz", 12, undefined],
  ["structures/MOF-5.pdb", "MOF-5.pdb", "pdb", 65, undefined],
  ["md/XDATCAR.MD", "XDATCAR", "xdatcar", 80, 5],
  ["md/water.extxyz.gz", "water.extxyz", "extxyz", 297, 100],
  ["lobster/NaCl/CONTCAR.gz", "CONTCAR", "poscar", 2, undefined],
];

describe("parse", () => {
  it("every frame keeps its own site properties and info (forces, energy), not only the first", async () => {
    const frame = (e: number, f: number) =>
      `2\nLattice="5 0 0 0 5 0 0 0 5" Properties=species:S:1:pos:R:3:forces:R:3 energy=${e} pbc="T T T"\nH 0 0 0 ${f} 0 0\nH 0.7 0 0 ${-f} 0 0\n`;
    const res = await app.inject({
      method: "POST",
      url: "/api/structure/parse",
      payload: { content: frame(-1, 0.5) + frame(-2, 1.5) + frame(-3, 2.5), filename: "run.extxyz" },
    });
    expect(res.statusCode).toBe(200);
    const frames = res.json().frames as { sites: { properties: { forces: number[] } }[]; properties: { energy: number } }[];
    expect(frames.map((f) => f.properties.energy)).toEqual([-1, -2, -3]);
    expect(frames.map((f) => f.sites.map((s) => s.properties.forces[0]))).toEqual([
      [0.5, -0.5],
      [1.5, -1.5],
      [2.5, -2.5],
    ]);
  });

  it.each(files)("%s (JSON body)", async (file, filename, format, atoms, frames) => {
    const res = await app.inject({
      method: "POST",
      url: "/api/structure/parse",
      payload: { content: readTestdata(file), filename },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect([body.format, body.n_atoms, body.structure.sites.length]).toEqual([format, atoms, atoms]);
    expect(body.frames?.length).toBe(frames);
  });

  it("detects the format from content alone", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/api/structure/parse",
      payload: { content: readTestdata("structures/Cod_2100513.cif") },
    });
    expect(res.json().format).toBe("cif");
  });

  it("takes a multipart file upload", async () => {
    const form = new FormData();
    form.append("file", new Blob([readTestdata("structures/POSCAR_LiFePO4")]), "POSCAR_LiFePO4");
    const res = await fetch(`${base}/api/structure/parse`, { method: "POST", body: form });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { format: string; formula: string };
    expect([body.format, body.formula]).toEqual(["poscar", "Li4 Fe4 P4 O16"]);
  });

  // [condition, body, status, code]
  const bad: Array<[string, unknown, number, string]> = [
    ["garbage", { content: "this is not a structure file\n at all" }, 400, "INVALID_FORMAT"],
    ["empty content", { content: "" }, 400, "INVALID_FORMAT"],
    ["unknown named format", { content: "x", format: "docx" }, 400, "INVALID_FORMAT"],
    ["CIF named but POSCAR given", { content: readTestdata("structures/POSCAR_LiFePO4"), format: "cif" }, 400, "INVALID_FORMAT"],
    ["content missing", { filename: "POSCAR" }, 422, "MALFORMED_REQUEST"],
  ];
  it.each(bad)("%s → %i %s", async (_c, payload, status, code) => {
    const res = await app.inject({ method: "POST", url: "/api/structure/parse", payload: payload as object });
    expect(res.statusCode).toBe(status);
    expect(res.json().code).toBe(code);
  });

  it("says which formats were tried", async () => {
    const res = await app.inject({ method: "POST", url: "/api/structure/parse", payload: { content: "hello" } });
    expect(res.json().error).toMatch(/tried|no format/i);
  });
});

describe("export", () => {
  // [format, structure, expected filename pattern]
  const rows: Array<[string, unknown, RegExp]> = [
    ["cif", cuCell, /\.cif$/],
    ["poscar", cuCell, /^POSCAR$/],
    ["xyz", water, /\.xyz$/],
    ["extxyz", cuCell, /\.extxyz$/],
    ["pdb", water, /\.pdb$/],
    ["json", cuCell, /\.json$/],
  ];
  it.each(rows)("%s round-trips through parse", async (format, structure, name) => {
    const res = await app.inject({ method: "POST", url: "/api/structure/export", payload: { structure, format } as object });
    expect(res.statusCode).toBe(200);
    const out = res.json();
    expect(out.filename).toMatch(name);
    const back = await app.inject({ method: "POST", url: "/api/structure/parse", payload: { content: out.content, format } });
    expect(back.statusCode).toBe(200);
    expect(back.json().n_atoms).toBe((structure as { sites: unknown[] }).sites.length);
  });

  it("unknown format → 400 INVALID_FORMAT", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/api/structure/export",
      payload: { structure: cuCell, format: "docx" },
    });
    expect([res.statusCode, res.json().code]).toEqual([400, "INVALID_FORMAT"]);
  });
});

describe("parse, space group named only", () => {
  it("expands a CIF that gives a space group but no symmetry operations", async () => {
    const cif = `data_NaCl
_cell_length_a 5.64
_cell_length_b 5.64
_cell_length_c 5.64
_cell_angle_alpha 90
_cell_angle_beta 90
_cell_angle_gamma 90
_symmetry_space_group_name_H-M 'F m -3 m'
loop_
_atom_site_label
_atom_site_type_symbol
_atom_site_fract_x
_atom_site_fract_y
_atom_site_fract_z
Na1 Na 0 0 0
Cl1 Cl 0.5 0.5 0.5
`;
    const res = await app.inject({ method: "POST", url: "/api/structure/parse", payload: { content: cif } });
    expect(res.statusCode).toBe(200);
    expect(res.json().formula).toBe("Na4 Cl4");
  });
});
