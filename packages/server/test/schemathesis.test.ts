/**
 * Fuzzing in CI: schemathesis (PyPI, in the test environment) generates cases from the service's
 * own OpenAPI document and sends them to a real service on a random loopback port, started with
 * no provider keys. Every case must answer without a 5xx and conform to its published response
 * schema. Some routes are left out (FUZZ_EXCLUDE says which and why); their own tests cover them.
 * Generated structures are repaired for the two rules JSON Schema cannot state (tools/fuzz/hooks.py).
 *
 * The deeper run (about 20,000 cases) is the same command with `-n 60`; see docs/errors.md.
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatPlugin } from "../src/chat/index.ts";
import { loadConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { mcpPlugin } from "../src/mcp/http.ts";
import { optimizeWsPlugin } from "../src/optimize/ws.ts";
import { viewerPlugin } from "../src/viewer/plugin.ts";

const ROOT = resolve(import.meta.dirname, "../../..");
const ST = join(ROOT, ".venv/bin/st");
/**
 * Left out: chat streams (outside providers), the viewer (503 without a studio), calculations in
 * the Python worker (minutes per random structure), and slabs: a well-formed slab request of
 * near 10,000 atoms (Cu(111) 2,400 layers) or a high-index surface such as (3, 2, 1) with 200
 * layers runs for more than 30 s on the event loop today; they come back when slab work runs off
 * the event loop under a deadline. The heterostructure routes (pymatgen in the analysis worker) add
 * about 8,000 cases and 2 minutes on their own: run them apart with
 * `st run <url>/api/openapi.json --include-path-regex '^/api/heterostructure/' --max-examples 8`.
 * The workflow routes and GET /api/jobs/{id} need Redis, which this in-process service does not start: here they would all
 * answer their documented 503 QUEUE_UNAVAILABLE; workflow.test.ts checks them, Redis included,
 * against the same published schemas.
 */
export const FUZZ_EXCLUDE =
  "^/api/(chat/stream|view/|optimize/(structure|energy)|structure/optimize|structure-build/slab|structure/slab|heterostructure/|workflow/|jobs/)";
/**
 * One fixed seed: a failure in CI is the same failure on a developer's machine (a random seed made
 * CI find a case nobody could replay). Exploring further is the deeper run in docs/errors.md, with
 * a fresh seed each time; what it finds becomes a regression row of the route's own tests.
 */
const FUZZ_SEED = "20261124";
/** Examples per operation and phase: about 2,500 cases in about 2 minutes on 2 cores. */
const MAX_EXAMPLES = 8;
const MIN_CASES = 2000;

interface Summary {
  cases: number;
  serverErrors: string[];
  checkFailures: string[];
  operations: Set<string>;
}

/** Cases, 5xx answers and failed checks from schemathesis's NDJSON event report. */
export const readReport = (path: string): Summary => {
  const out: Summary = { cases: 0, serverErrors: [], checkFailures: [], operations: new Set() };
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line.includes('"ScenarioFinished"')) continue;
    const recorder = JSON.parse(line).ScenarioFinished.recorder as {
      label: string;
      cases?: Record<string, unknown>;
      checks?: Record<string, Array<{ name: string; status: string; failure_info?: { failure?: { title?: string } } }>>;
      interactions?: Record<string, { response?: { status_code: number } | null }>;
    };
    out.operations.add(recorder.label);
    out.cases += Object.keys(recorder.cases ?? {}).length;
    for (const [id, interaction] of Object.entries(recorder.interactions ?? {}))
      if ((interaction.response?.status_code ?? 0) >= 500)
        out.serverErrors.push(`${recorder.label} case ${id}: HTTP ${interaction.response?.status_code}`);
    for (const checks of Object.values(recorder.checks ?? {}))
      for (const c of checks)
        if (c.status !== "success" && c.status !== "skip")
          out.checkFailures.push(`${recorder.label}: ${c.name}: ${c.failure_info?.failure?.title ?? c.status}`);
  }
  return out;
};

const run = (
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ code: number | null; output: string }> =>
  new Promise((done) => {
    // schemathesis keeps its example database in the working directory: a temporary one.
    const child = spawn(cmd, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (b) => {
      output += b;
    });
    child.stderr.on("data", (b) => {
      output += b;
    });
    child.on("close", (code) => done({ code, output }));
  });

if (!existsSync(ST))
  console.warn(
    `\n*** SKIPPING the schemathesis run: ${ST} is missing. Run scripts/setup-python --test (tools/requirements-oracles.txt). ***\n`,
  );

describe.skipIf(!existsSync(ST))("schemathesis against the OpenAPI document of a running service", () => {
  let app: FastifyInstance;
  let url: string;
  let dir: string;
  beforeAll(async () => {
    // No provider keys and no token: the environment the service sees is empty.
    const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent" }, {});
    ({ app } = await buildApp({ config, plugins: [viewerPlugin(), chatPlugin(), optimizeWsPlugin, mcpPlugin] }));
    await app.listen({ host: "127.0.0.1", port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    dir = mkdtempSync(join(tmpdir(), "atomstudio-fuzz-"));
  });
  afterAll(async () => {
    await app?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`generates at least ${MIN_CASES} cases: no 5xx, every answer conforms to its schema`, async () => {
    const report = join(dir, "run.ndjson");
    const { code, output } = await run(
      ST,
      [
        "run",
        `${url}/api/openapi.json`,
        "--exclude-path-regex",
        FUZZ_EXCLUDE,
        "--max-examples",
        String(MAX_EXAMPLES),
        "--seed",
        FUZZ_SEED,
        "--checks",
        "not_a_server_error,response_schema_conformance",
        "--continue-on-failure",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        report,
        "--no-color",
      ],
      {
        PATH: process.env.PATH,
        HOME: dir,
        SCHEMATHESIS_HOOKS: "hooks",
        PYTHONPATH: join(ROOT, "tools/fuzz"),
      },
      dir,
    );
    const tail = output.split("\n").slice(-40).join("\n");
    expect(existsSync(report), tail).toBe(true);
    const summary = readReport(report);
    console.log(
      `schemathesis: ${summary.cases} cases over ${summary.operations.size} operations, ${summary.serverErrors.length} 5xx, ${summary.checkFailures.length} failed checks`,
    );
    if (summary.serverErrors.length || summary.checkFailures.length) {
      // keep the report (every failing case with its request and answer) where CI keeps artefacts
      mkdirSync(join(ROOT, ".test-output"), { recursive: true });
      copyFileSync(report, join(ROOT, ".test-output/schemathesis-run.ndjson"));
    }
    expect(summary.serverErrors.join("\n"), tail).toBe("");
    expect(summary.checkFailures.join("\n"), tail).toBe("");
    expect(summary.cases).toBeGreaterThanOrEqual(MIN_CASES);
    expect(summary.operations.size).toBeGreaterThanOrEqual(16);
    expect(code, tail).toBe(0);
  }, 300_000);
});
