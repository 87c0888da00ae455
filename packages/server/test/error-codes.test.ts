/**
 * One table of error codes: errors/codes.ts and docs/errors.md agree, every code the sources can
 * send (TypeScript packages and the Python worker) is in it, and the registry's error rows and
 * the service's answers take their statuses from it.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES, errorTableMarkdown, isErrorCode, statusOf } from "../src/errors/codes.ts";
import { errorResponse } from "../src/http/errors.ts";
import { operations } from "../src/operations/index.ts";
import { workerError } from "../src/optimize/worker.ts";
import { viewerError } from "../src/viewer/hub.ts";
import { cuCell, makeApp } from "./helpers.ts";

const ROOT = resolve(import.meta.dirname, "../../..");
const doc = readFileSync(join(ROOT, "docs/errors.md"), "utf8");

const files = (dir: string, ext: RegExp): string[] =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p, ext) : ext.test(name) ? [p] : [];
  });

/** The text of a call's parentheses, from the `(` at `open` to its matching `)`. */
const callText = (src: string, open: number): string => {
  let depth = 0;
  for (let i = open; i < src.length; i++) {
    if (src[i] === "(") depth++;
    else if (src[i] === ")" && --depth === 0) return src.slice(open, i + 1);
  }
  return src.slice(open);
};

const CODE_LITERAL = /["']([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,})["']/g;
/** Calls whose quoted UPPER_SNAKE arguments are error codes, in TypeScript and in the worker's Python. */
const CODE_CALLS = /\b(?:AtomStudioError|fail|serviceError|agentError|WorkerError|self\.error|_error)\s*\(/g;
/** `code: "X"` in objects (stream events, ErrorResponse bodies) and `code = "X"` in Python. */
const CODE_FIELDS = /\bcode["']?\s*[:=]\s*["']([A-Z][A-Z0-9_]+)["']/g;

/** Every error code literal in a source file, with where it is. */
const codesIn = (path: string): Array<[string, string]> => {
  const src = readFileSync(path, "utf8");
  const where = relative(ROOT, path);
  const found: Array<[string, string]> = [];
  for (const m of src.matchAll(CODE_CALLS))
    for (const c of callText(src, (m.index as number) + m[0].length - 1).matchAll(CODE_LITERAL))
      found.push([c[1] as string, where]);
  for (const m of src.matchAll(CODE_FIELDS)) found.push([m[1] as string, where]);
  return found;
};

const sources = [
  ...["core", "server", "studio"].flatMap((pkg) => files(join(ROOT, "packages", pkg, "src"), /\.ts$/)),
  ...files(join(ROOT, "worker/src"), /\.py$/),
];
/** Codes the studio uses for itself and never sends to the service. */
const CLIENT_ONLY = new Set(["HTTP_ERROR" /* the studio's label for an answer without an ErrorResponse body */]);
const sent = sources.flatMap(codesIn).filter(([code]) => !CLIENT_ONLY.has(code));
const sentCodes = new Set(sent.map(([code]) => code));

describe("the error-code table", () => {
  it("docs/errors.md shows exactly the table of errors/codes.ts", () => {
    const rows = (text: string) => text.split("\n").filter((l) => /^\| `[A-Z_]+` \|/.test(l));
    expect(rows(doc)).toEqual(rows(errorTableMarkdown()));
  });

  it("codes are UPPER_SNAKE_CASE with a status and a meaning", () => {
    for (const [code, { status, meaning }] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
      expect(status).toBeGreaterThanOrEqual(200);
      expect(status).toBeLessThan(600);
      expect(meaning.length).toBeGreaterThan(10);
    }
  });

  it("the source scan sees codes from every layer (core, server, agents, worker)", () => {
    for (const code of ["INVALID_STRUCTURE", "MALFORMED_REQUEST", "AGENT_WARNING", "CALCULATION_FAILED", "UNKNOWN_COMMAND"])
      expect(sentCodes).toContain(code);
    expect(sentCodes.size).toBeGreaterThan(40);
  });

  it.each([...sentCodes].sort())("%s, sent by the sources, is in the table", (code) => {
    expect(
      isErrorCode(code),
      `${code} (in ${[...new Set(sent.filter(([c]) => c === code).map(([, w]) => w))].join(", ")}) is missing from errors/codes.ts and docs/errors.md`,
    ).toBe(true);
  });

  it.each(operations.flatMap((op) => (op.errors ?? []).map((row) => [op.id, row.code, row.status] as const)))(
    "%s declares %s with the table's status",
    (_op, code, status) => {
      expect(isErrorCode(code)).toBe(true);
      if (status !== undefined) expect(status).toBe(statusOf(code));
    },
  );
});

describe("statuses come from the table", () => {
  // [what, error, expected status]
  const rows: Array<[string, unknown, number]> = [
    ["a core 400", new AtomStudioError("EMPTY_INDICES", "no indices"), 400],
    ["a worker code", workerError({ code: "CANCELLED", message: "stop" }), 409],
    ["a worker code the table lacks", workerError({ code: "SOMETHING_NEW", message: "?" }), 500],
    ["a studio's code", viewerError({ code: "NO_STRUCTURE_LOADED", message: "empty" }), 404],
    ["a studio's unknown code", viewerError({ code: "STUDIO_HICCUP", message: "?" }), 502],
    ["a studio's known code with a wrong status", viewerError({ code: "INVALID_DIMENSIONS", message: "w", status: 500 }), 400],
    ["an unexpected exception", new TypeError("boom"), 500],
  ];
  it.each(rows)("%s", (_what, err, status) => {
    expect(errorResponse(err, "r1")[0]).toBe(status);
  });
});

describe("the service's answers", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await makeApp();
  });
  afterAll(() => app.close());

  // [request, code]
  const rows: Array<[string, { method: "GET" | "POST"; url: string; payload?: object }, string]> = [
    ["unknown route", { method: "GET", url: "/api/nope" }, "NOT_FOUND"],
    ["wrong shape", { method: "POST", url: "/api/structure-ops/add-atom", payload: { structure: cuCell } }, "MALFORMED_REQUEST"],
    [
      "index out of bounds",
      { method: "POST", url: "/api/structure-ops/delete-atoms", payload: { structure: cuCell, indices: [7] } },
      "INVALID_INDEX",
    ],
    ["no studio", { method: "GET", url: "/api/view/selection" }, "NO_VIEWER"],
  ];
  it.each(rows)("%s: the status is the table's for its code", async (_what, request, code) => {
    const res = await app.inject(request);
    expect(res.json().code).toBe(code);
    expect(res.statusCode).toBe(statusOf(code));
  });
});
