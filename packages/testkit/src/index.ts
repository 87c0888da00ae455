/**
 * Test helpers shared by every package: run the field's reference libraries (pymatgen, ASE) as
 * oracles, and find the shared test data. The Python environment is `.venv` at the repository
 * root, installed by `scripts/setup-python`; tests fail loudly when it is missing.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const PYTHON = process.env.ATOMSTUDIO_PYTHON ?? join(REPO_ROOT, ".venv/bin/python");
/** `../shared/testdata` beside the checkout (ATOMSTUDIO_TESTDATA overrides). */
export const TESTDATA = process.env.ATOMSTUDIO_TESTDATA ?? resolve(REPO_ROOT, "../shared/testdata");

export const requirePython = (): string => {
  if (!existsSync(PYTHON))
    throw new Error(`Python oracle environment missing at ${PYTHON}: run scripts/setup-python (the test command does this)`);
  return PYTHON;
};

/**
 * Run a Python script (path, or inline code with `-c`) with `input` as JSON on stdin and parse
 * its stdout as JSON. One process per call: batch many cases into one call, pymatgen's import
 * costs about a second.
 */
export const runPython = async <T = unknown>(script: string, input: unknown, opts: { timeoutMs?: number } = {}): Promise<T> => {
  const py = requirePython();
  const args = existsSync(script) ? [script] : ["-c", script];
  return new Promise<T>((resolvePromise, reject) => {
    const child = spawn(py, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, PYTHONWARNINGS: "ignore" } });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 300_000);
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`python exited ${code}: ${Buffer.concat(err).toString().slice(-4000)}`));
      try {
        resolvePromise(JSON.parse(Buffer.concat(out).toString()) as T);
      } catch (e) {
        reject(new Error(`python printed no JSON: ${(e as Error).message}\n${Buffer.concat(out).toString().slice(0, 2000)}`));
      }
    });
    child.stdin.end(JSON.stringify(input));
  });
};

/** A shared test-data file as text, gunzipped when it ends in .gz. */
export const readTestdata = (relPath: string): string => {
  const buf = readFileSync(join(TESTDATA, relPath));
  return (relPath.endsWith(".gz") ? gunzipSync(buf) : buf).toString("utf8");
};

export const testdataPath = (relPath: string): string => join(TESTDATA, relPath);
export * from "./serve.ts";
export * from "./structures.ts";
export * from "./trajectories.ts";
