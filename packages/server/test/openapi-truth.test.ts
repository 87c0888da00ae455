/**
 * The OpenAPI document tells the truth: structures are described in full wherever one is
 * accepted or returned, integer fields are integers with the bounds the code enforces, and a
 * well-formed body out of range is a 400 with its code (422 only for the wrong shape).
 */

import { MAX_NORMAL_SEARCH } from "atomstudio-core";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatPlugin } from "../src/chat/index.ts";
import { cuCell, makeApp, water } from "./helpers.ts";

let app: FastifyInstance;
let doc: { paths: Record<string, Record<string, Record<string, unknown>>> };
beforeAll(async () => {
  app = await makeApp({}, [chatPlugin()]);
  doc = (await app.inject({ method: "GET", url: "/api/openapi.json" })).json();
});
afterAll(() => app.close());

type Schema = Record<string, unknown>;
const bodyOf = (path: string): Schema => {
  const body = doc.paths[path]?.post?.requestBody as { content: Record<string, { schema: Schema }> } | undefined;
  return body?.content["application/json"]?.schema ?? {};
};
const prop = (schema: Schema, ...names: string[]): Schema =>
  names.reduce(
    (s, n) =>
      ((s.properties as Record<string, Schema>)[n] ?? ((s.items as Schema)?.properties as Record<string, Schema>)?.[n]) as Schema,
    schema,
  );

/** Every place in a schema whose description or name says it is a structure. */
const structureFields = (schema: unknown, where: string, out: Array<[string, Schema]> = []): Array<[string, Schema]> => {
  if (!schema || typeof schema !== "object") return out;
  const s = schema as Schema;
  for (const [name, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
    const path = `${where}.${name}`;
    // A structure *file* (COHP's CONTCAR: {content, encoding}) and frame *indices* are not structures.
    const isFile = Boolean((sub.properties as Record<string, unknown> | undefined)?.content);
    if (["structure", "base", "incoming"].includes(name) && !isFile) out.push([path, sub]);
    const items = (sub.items ?? {}) as Schema;
    if ((name === "structures" || name === "frames") && items.type !== "integer") out.push([`${path}[]`, items]);
    structureFields(sub, path, out);
  }
  return out;
};

const isFullStructure = (s: Schema): boolean => {
  const props = s.properties as Record<string, Schema> | undefined;
  const site = (props?.sites?.items as Schema | undefined)?.properties as Record<string, Schema> | undefined;
  return (
    s.type === "object" &&
    Array.isArray(s.required) &&
    (s.required as string[]).includes("sites") &&
    Array.isArray(props?.lattice?.anyOf) &&
    Array.isArray((site?.species?.items as Schema | undefined)?.required) &&
    Array.isArray((((site?.species?.items as Schema | undefined)?.properties ?? {}) as Record<string, Schema>).element?.enum)
  );
};

describe("StructureJSON in full wherever a structure is accepted or returned", () => {
  const everywhere = () =>
    Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, op]) => {
        const body = (op.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content?.[
          "application/json"
        ]?.schema;
        const ok = (op.responses as Record<string, { content?: Record<string, { schema?: Schema }> }>)[200]?.content?.[
          "application/json"
        ]?.schema;
        const where = `${method.toUpperCase()} ${path}`;
        return [...structureFields(body, `${where} body`), ...structureFields(ok, `${where} 200`)];
      }),
    );

  it("finds the structures of the registry (slab structure and merge base included)", () => {
    const names = everywhere().map(([w]) => w);
    expect(names).toContain("POST /api/structure-build/slab body.structure");
    expect(names).toContain("POST /api/structure-build/merge body.base");
    expect(names).toContain("POST /api/structure-build/merge body.incoming");
    expect(names.length).toBeGreaterThan(30);
  });

  it("every one of them is the full schema, not a bare object", () => {
    const bare = everywhere()
      .filter(([w]) => !w.includes("/api/chat/")) // the agents' structure_json context is free-form
      // the kept /api/build/nanoparticle interface names the Wulff lattice (fcc, bcc, ...) `structure`: a string
      .filter(([w]) => w !== "POST /api/build/nanoparticle body.structure")
      .filter(([, s]) => !isFullStructure((s.anyOf as Schema[] | undefined)?.find((x) => x.type === "object") ?? s))
      .map(([w]) => w);
    expect(bare, bare.join("\n")).toEqual([]);
  });

  it("a copy keeps its own description in front", () => {
    expect(String(prop(bodyOf("/api/structure-build/merge"), "base").description)).toMatch(
      /^base structure; its lattice is preserved\. pymatgen/,
    );
  });

  it("operations that need a lattice publish the periodic form only", () => {
    for (const path of ["/api/structure-build/supercell", "/api/structure-build/slab", "/api/structure/conventional-cell"])
      expect(prop(bodyOf(path), "structure").anyOf).toHaveLength(1);
    expect(prop(bodyOf("/api/structure-ops/add-atom"), "structure").anyOf).toHaveLength(2);
  });
});

describe("integers are integers with the bounds the code enforces", () => {
  // [path, field path, minimum, maximum]
  const rows: Array<[string, string[], number, number | undefined]> = [
    ["/api/structure-build/supercell", ["scaling", "items"], 1, 10],
    ["/api/view/screenshot", ["width"], 1, 8192],
    ["/api/view/screenshot", ["height"], 1, 8192],
    ["/api/structure-ops/replace-atom", ["index"], 0, undefined],
    ["/api/structure-ops/delete-atoms", ["indices", "items"], 0, undefined],
    ["/api/structure-build/slab", ["max_normal_search"], 0, MAX_NORMAL_SEARCH],
    ["/api/structure-build/slab", ["termination_index"], 0, undefined],
  ];
  it.each(rows)("%s %j: integer from %i to %s", (path, fields, min, max) => {
    let s = bodyOf(path);
    for (const f of fields) s = (f === "items" ? s.items : (s.properties as Record<string, Schema>)[f]) as Schema;
    expect(s.type).toBe("integer");
    expect(s.minimum).toBe(min);
    if (max !== undefined) expect(s.maximum).toBe(max);
  });
});

describe("range checks on well-formed bodies are 400 with a code", () => {
  // [condition, path, body, code]
  const rows: Array<[string, string, unknown, string]> = [
    ["screenshot width 0", "/api/view/screenshot", { width: 0 }, "INVALID_DIMENSIONS"],
    ["screenshot height 9000", "/api/view/screenshot", { height: 9000 }, "INVALID_DIMENSIONS"],
    ["screenshot width 2.5", "/api/view/screenshot", { width: 2.5 }, "INVALID_DIMENSIONS"],
    ["screenshot quality 2", "/api/view/screenshot", { quality: 2 }, "INVALID_QUALITY"],
    ["camera zoom 0", "/api/view/screenshot", { camera: { zoom: 0 } }, "INVALID_CAMERA"],
    ["empty messages (hosted)", "/api/chat/stream", { messages: [] }, "EMPTY_MESSAGES"],
    ["empty messages (compatible)", "/api/chat/stream-openai-compat", { messages: [] }, "EMPTY_MESSAGES"],
    ["max_tokens 0", "/api/chat/stream", { messages: [{ role: "user", content: "hi" }], max_tokens: 0 }, "INVALID_MAX_TOKENS"],
    ["scaling 11", "/api/structure-build/supercell", { structure: cuCell, scaling: [11, 1, 1] }, "INVALID_SCALING"],
    ["negative index", "/api/structure-ops/replace-atom", { structure: cuCell, index: -1, new_element: "Ag" }, "INVALID_INDEX"],
    [
      "max_normal_search 21",
      "/api/structure-build/slab",
      { structure: cuCell, miller: [1, 1, 1], thickness: 3, max_normal_search: 21 },
      "INVALID_MAX_NORMAL_SEARCH",
    ],
    [
      "a (100000, 1, 1) surface, refused at once (Miller indices are capped before any work)",
      "/api/structure-build/slab",
      { structure: cuCell, miller: [100000, 1, 1], thickness: 3 },
      "INVALID_MILLER",
    ],
    [
      "no symmetry at 1e16 Angstrom (was a 500)",
      "/api/structure/conventional-cell",
      {
        structure: {
          ...cuCell,
          sites: [
            { species: [{ element: "Cu", occu: 1 }], xyz: [0, 3.6e13, -1.7e308] },
            { species: [{ element: "Pm", occu: 1 }], abc: [0, -2.4e16, 4e182] },
          ],
        },
      },
      "INVALID_STRUCTURE",
    ],
    [
      "a lattice vector of 1e-207 Angstrom (was answered with null coordinates)",
      "/api/structure-ops/add-atom",
      {
        structure: {
          ...cuCell,
          lattice: {
            matrix: [
              [3e-207, 0, 0],
              [0, 3.6, 0],
              [0, 0, 3.6],
            ],
          },
        },
        element: "O",
        position: [0, 0, 0],
      },
      "INVALID_STRUCTURE",
    ],
    [
      "abc of 1e308 (was answered with null coordinates)",
      "/api/structure/info",
      { structure: { ...cuCell, sites: [{ species: [{ element: "B", occu: 1 }], abc: [1e308, 0, 0] }] } },
      "INVALID_STRUCTURE",
    ],
    [
      "a cell of 5e16 by 5 Angstrom (moyo ran for minutes)",
      "/api/structure/primitive-cell",
      {
        structure: {
          lattice: {
            matrix: [
              [0, -5.07e16, 0],
              [5, 0, 0],
              [3.3e15, 0, 1.46e16],
            ],
          },
          sites: [{ abc: [0, 0, 0], species: [{ element: "B" }] }],
        },
      },
      "INVALID_STRUCTURE",
    ],
    [
      "an atom added at 1.7e308 Angstrom in a 0.5 Angstrom cell (infinite abc: was answered with null coordinates)",
      "/api/structure-ops/add-atoms",
      {
        structure: {
          ...cuCell,
          lattice: {
            matrix: [
              [0.5, 0, 0],
              [0, 3.6, 0],
              [0, 0, 3.6],
            ],
          },
        },
        atoms: [{ element: "O", xyz: [1.7e308, 0, 0] }],
      },
      "INVALID_STRUCTURE",
    ],
    [
      "a molecule moved past the floating-point range",
      "/api/structure-ops/move-atoms",
      {
        structure: { "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 1 }], xyz: [1e308, 0, 0] }] },
        indices: [0],
        displacement: [1.7e308, 0, 0],
      },
      "INVALID_STRUCTURE",
    ],
    [
      "merge mode",
      "/api/structure-build/merge",
      { base: cuCell, incoming: water, position: [0, 0, 0], mode: "glue" },
      "INVALID_MODE",
    ],
  ];
  it.each(rows)("%s → 400 %s", async (_what, url, payload, code) => {
    const res = await app.inject({ method: "POST", url, payload: payload as object });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe(code);
  });

  it("the wrong shape is still 422 (width as a string)", async () => {
    const res = await app.inject({ method: "POST", url: "/api/view/screenshot", payload: { width: "wide" } });
    expect(res.statusCode).toBe(422);
  });
});
