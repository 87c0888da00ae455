/** No input makes the service answer 500: random and mutated bodies on every POST operation of the registry. */
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations } from "../src/operations/index.ts";
import { cuCell, makeApp, water } from "./helpers.ts";

// Operations that talk to other processes (calculator workers, studios, providers) are left to their own tests.
const OFFLINE_TAGS = new Set(["structure-ops", "structure-build", "build", "structure"]);
const posts = operations.filter((op) => op.method === "POST" && OFFLINE_TAGS.has(op.tag) && !op.path.includes("optimize"));

let app: FastifyInstance;
beforeAll(async () => {
  app = await makeApp();
});
afterAll(() => app.close());

const junk = fc.oneof(
  fc.constant(null),
  fc.integer({ min: -5, max: 20 }),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.boolean(),
  fc.array(fc.integer({ min: -3, max: 30 }), { maxLength: 4 }),
  fc.array(fc.double(), { maxLength: 4 }),
  fc.constantFrom(
    cuCell,
    water,
    { sites: [] },
    {
      lattice: {
        matrix: [
          [0, 0, 0],
          [0, 0, 0],
          [0, 0, 0],
        ],
      },
      sites: [],
    },
  ),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);
const FIELDS = [
  "structure",
  "base",
  "incoming",
  "element",
  "position",
  "atoms",
  "indices",
  "index",
  "new_element",
  "new_position",
  "displacement",
  "scaling",
  "mode",
  "miller",
  "thickness",
  "vacuum",
  "termination_index",
  "content",
  "format",
  "filename",
  "frames",
];
const body = fc.dictionary(fc.constantFrom(...FIELDS), junk, { maxKeys: 6 });

describe("no 500 for any input", () => {
  it(`covers ${posts.length} POST operations`, () => {
    expect(posts.length).toBeGreaterThanOrEqual(15);
  });

  it("random bodies answer 2xx or an ErrorResponse with a 4xx status", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...posts), body, async (op, payload) => {
        const res = await app.inject({ method: "POST", url: op.path, payload });
        if (res.statusCode >= 500)
          throw new Error(
            `${op.path} answered ${res.statusCode}: ${res.body.slice(0, 300)} for ${JSON.stringify(payload).slice(0, 300)}`,
          );
        if (res.statusCode >= 400) expect(typeof res.json().code).toBe("string");
      }),
      { numRuns: 600 },
    );
  });
});
