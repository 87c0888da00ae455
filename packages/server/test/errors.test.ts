/**
 * One case per row of the interface's error tables (structure-ops, structure-build), plus the
 * general rules: 422 for malformed bodies, ErrorResponse everywhere, no 500.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cuCell, emptyMolecule, makeApp, water } from "./helpers.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await makeApp();
});
afterAll(() => app.close());

const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, payload: payload as object });
const ops = "/api/structure-ops";
const build = "/api/structure-build";
const big = { ...cuCell, sites: Array.from({ length: 20 }, () => cuCell.sites[0]) };

// [endpoint, condition, body, status, code]
const rows: Array<[string, string, unknown, number, string]> = [
  [
    `${ops}/add-atom`,
    "invalid element symbol",
    { structure: cuCell, element: "Xx", position: [0, 0, 0] },
    400,
    "INVALID_ELEMENT",
  ],
  [
    `${ops}/add-atom`,
    "structure JSON cannot be parsed",
    { structure: { sites: "no" }, element: "O", position: [0, 0, 0] },
    400,
    "INVALID_STRUCTURE",
  ],
  [`${ops}/add-atoms`, "empty atoms list", { structure: cuCell, atoms: [] }, 400, "EMPTY_ATOMS"],
  [
    `${ops}/add-atoms`,
    "any invalid element symbol",
    {
      structure: cuCell,
      atoms: [
        { element: "O", xyz: [0, 0, 0] },
        { element: "Qq", xyz: [1, 1, 1] },
      ],
    },
    400,
    "INVALID_ELEMENT",
  ],
  [`${ops}/delete-atoms`, "any index out of bounds", { structure: cuCell, indices: [0, 4] }, 400, "INVALID_INDEX"],
  [`${ops}/delete-atoms`, "empty indices list", { structure: cuCell, indices: [] }, 400, "EMPTY_INDICES"],
  [`${ops}/replace-atom`, "index out of bounds", { structure: cuCell, index: 9, new_element: "Ag" }, 400, "INVALID_INDEX"],
  [
    `${ops}/replace-atom`,
    "invalid new_element symbol",
    { structure: cuCell, index: 0, new_element: "Cuu" },
    400,
    "INVALID_ELEMENT",
  ],
  [`${ops}/move-atom`, "index out of bounds", { structure: cuCell, index: -1, new_position: [0, 0, 0] }, 400, "INVALID_INDEX"],
  [
    `${ops}/move-atoms`,
    "any index out of bounds",
    { structure: cuCell, indices: [1, 99], displacement: [1, 0, 0] },
    400,
    "INVALID_INDEX",
  ],
  [`${ops}/move-atoms`, "empty indices list", { structure: cuCell, indices: [], displacement: [1, 0, 0] }, 400, "EMPTY_INDICES"],
  [`${build}/supercell`, "scaling factor below 1", { structure: cuCell, scaling: [0, 1, 1] }, 400, "INVALID_SCALING"],
  [`${build}/supercell`, "scaling factor above 10", { structure: cuCell, scaling: [1, 11, 1] }, 400, "INVALID_SCALING"],
  [`${build}/supercell`, "structure has no lattice", { structure: water, scaling: [2, 2, 2] }, 400, "MISSING_LATTICE"],
  [`${build}/supercell`, "result would exceed 10000 atoms", { structure: big, scaling: [10, 10, 6] }, 400, "TOO_MANY_ATOMS"],
  [
    `${build}/merge`,
    "both base and incoming empty",
    { base: emptyMolecule, incoming: emptyMolecule, position: [0, 0, 0] },
    400,
    "EMPTY_STRUCTURES",
  ],
  [
    `${build}/merge`,
    "mode is invalid",
    { base: cuCell, incoming: water, position: [0, 0, 0], mode: "glue" },
    400,
    "INVALID_MODE",
  ],
  ["/api/build/supercell", "malformed scaling string", { structure: cuCell, scaling: "2by2" }, 400, "INVALID_SCALING"],
  ["/api/build/supercell", "scaling out of range", { structure: cuCell, scaling: "2x2x0" }, 400, "INVALID_SCALING"],
  ["/api/build/supercell", "molecule", { structure: water, scaling: "2x2x2" }, 400, "MISSING_LATTICE"],
];

describe("interface error tables", () => {
  it.each(rows)("%s: %s → %i %s", async (url, _condition, body, status, code) => {
    const res = await post(url, body);
    expect(res.statusCode).toBe(status);
    const json = res.json();
    expect(json.code).toBe(code);
    expect(typeof json.error).toBe("string");
    expect(json.error.length).toBeGreaterThan(0);
  });
});

// [condition, body or raw payload, content type, status, code]
const general: Array<[string, string, string, number, string]> = [
  ["body is not JSON", "{not json", "application/json", 422, "MALFORMED_REQUEST"],
  ["empty JSON body", "", "application/json", 422, "MALFORMED_REQUEST"],
  ["missing required field", JSON.stringify({ structure: cuCell, element: "O" }), "application/json", 422, "MALFORMED_REQUEST"],
  [
    "wrong JSON type",
    JSON.stringify({ structure: cuCell, element: 8, position: [0, 0, 0] }),
    "application/json",
    422,
    "MALFORMED_REQUEST",
  ],
  [
    "vector of length 2",
    JSON.stringify({ structure: cuCell, element: "O", position: [0, 0] }),
    "application/json",
    422,
    "MALFORMED_REQUEST",
  ],
  ["body is an array", "[]", "application/json", 422, "MALFORMED_REQUEST"],
  [
    "structure is a string",
    JSON.stringify({ structure: "Cu", element: "O", position: [0, 0, 0] }),
    "application/json",
    422,
    "MALFORMED_REQUEST",
  ],
  ["unsupported media type", "element=O", "application/x-www-form-urlencoded", 415, "UNSUPPORTED_MEDIA_TYPE"],
];

describe("general error rules", () => {
  it.each(general)("%s → %i %s", async (_condition, payload, contentType, status, code) => {
    const res = await app.inject({ method: "POST", url: `${ops}/add-atom`, payload, headers: { "content-type": contentType } });
    expect(res.statusCode).toBe(status);
    expect(res.json().code).toBe(code);
  });

  it("422 lists the offending fields", async () => {
    const res = await post(`${ops}/add-atom`, { structure: cuCell, element: 8 });
    expect(
      res
        .json()
        .details.fields.map((f: { path: string }) => f.path)
        .sort(),
    ).toEqual(["element", "position"]);
  });

  it("unknown routes answer an ErrorResponse 404", async () => {
    const res = await app.inject({ method: "GET", url: "/api/nope" });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe("NOT_FOUND");
  });
});

// [malformation, structure, code]
const malformed: Array<[string, unknown, string]> = [
  ["missing sites", { lattice: cuCell.lattice }, "INVALID_STRUCTURE"],
  ["site without coordinates", { "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 1 }] }] }, "INVALID_STRUCTURE"],
  [
    "xyz of length 2",
    { "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 1 }], xyz: [0, 0] }] },
    "INVALID_STRUCTURE",
  ],
  [
    "non-numeric coordinate",
    { "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 1 }], xyz: [0, "a", 0] }] },
    "INVALID_STRUCTURE",
  ],
  [
    "singular lattice",
    {
      ...cuCell,
      lattice: {
        matrix: [
          [1, 0, 0],
          [2, 0, 0],
          [0, 0, 1],
        ],
      },
    },
    "INVALID_STRUCTURE",
  ],
  [
    "lattice matrix 2x3",
    {
      ...cuCell,
      lattice: {
        matrix: [
          [1, 0, 0],
          [0, 1, 0],
        ],
      },
    },
    "INVALID_STRUCTURE",
  ],
  [
    "unknown element",
    { "@class": "Molecule", sites: [{ species: [{ element: "Zz", occu: 1 }], xyz: [0, 0, 0] }] },
    "INVALID_ELEMENT",
  ],
  [
    "occupancy above 1",
    { "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 1.5 }], xyz: [0, 0, 0] }] },
    "INVALID_STRUCTURE",
  ],
  [
    "occupancy zero",
    { "@class": "Molecule", sites: [{ species: [{ element: "O", occu: 0 }], xyz: [0, 0, 0] }] },
    "INVALID_STRUCTURE",
  ],
  [
    "occupancies summing above 1",
    {
      ...cuCell,
      sites: [
        {
          species: [
            { element: "Fe", occu: 0.6 },
            { element: "Ni", occu: 0.6 },
          ],
          abc: [0, 0, 0],
        },
      ],
    },
    "INVALID_STRUCTURE",
  ],
  ["empty species list", { "@class": "Molecule", sites: [{ species: [], xyz: [0, 0, 0] }] }, "INVALID_STRUCTURE"],
  ["unknown @class", { "@class": "Slab2", sites: [] }, "INVALID_STRUCTURE"],
];

describe("malformed structures", () => {
  it.each(malformed)("%s → 400 %s", async (_what, structure, code) => {
    const res = await post(`${ops}/add-atom`, { structure, element: "O", position: [0, 0, 0] });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe(code);
  });
});
