/**
 * Electronic-structure analysis through the analysis worker (`python -m atomstudio_worker.analysis`,
 * worker/src/atomstudio_worker/analysis): files land in the service's private upload store
 * (http/uploads.ts; a multipart upload streams there, hashed on the way), the worker gets their
 * paths and sha256 and parses them with pymatgen and lobsterpy, keeping parsed objects by sha256
 * so a repeated request does not parse again. The pool is the calculator pool's class (queue,
 * cancellation), with its own processes, a minimal environment and a deadline per request that
 * kills the worker doing the abandoned work.
 */

import { existsSync } from "node:fs";
import { delimiter, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { AtomStudioError } from "atomstudio-core";
import { z } from "zod";
import { redact } from "../chat/secrets.ts";
import type { ServiceConfig } from "../config.ts";
import { provide, type ServiceContext } from "../context.ts";
import { type HeldFile, uploadStore } from "../http/uploads.ts";
import { runAsAnalysisJob } from "../jobs/analysis-jobs.ts";
import { WorkerPool } from "../optimize/pool.ts";
import { WorkerProcess, workerPython } from "../optimize/worker.ts";
import type { JsonText } from "../registry/json-text.ts";

const WORKER_SRC = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../worker/src");
export const INSTALL_HINT = 'scripts/setup-python (or .venv/bin/pip install -e "worker[analysis]")';

/** A file in a JSON body, or what the multipart reader makes of an uploaded file. */
export const AnalysisFile = z.object({
  content: z.string().describe("the file's bytes: text, or base64 when encoding is base64 (gzip and bzip2 are detected)"),
  filename: z.string().max(255).optional().describe("the original name, e.g. vasprun.xml.gz or COOPCAR.lobster"),
  encoding: z
    .enum(["text", "base64", "latin1"])
    .default("text")
    .describe("text (UTF-8), base64, or latin1 (one byte per character: what a multipart upload becomes)"),
});
export type AnalysisFile = z.output<typeof AnalysisFile>;

declare module "../context.ts" {
  interface Services {
    analysisPool: WorkerPool;
  }
}

/**
 * What the analysis worker is started with: no provider keys, no service token; just what Python
 * needs to run, the thread caps, and this checkout's worker package first on the path.
 */
export const analysisEnvironment = (config: ServiceConfig): NodeJS.ProcessEnv => {
  const env = config.environment;
  const keep = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "ATOMSTUDIO_WORKER_LOG_LEVEL", "ATOMSTUDIO_WORKER_HIDE_MODULES"];
  const out: NodeJS.ProcessEnv = {};
  for (const k of keep) if (env[k] !== undefined) out[k] = env[k];
  const threads = env.OMP_NUM_THREADS ?? "1";
  Object.assign(out, { OMP_NUM_THREADS: threads, OPENBLAS_NUM_THREADS: threads, MKL_NUM_THREADS: threads });
  if (existsSync(WORKER_SRC)) out.PYTHONPATH = [WORKER_SRC, env.PYTHONPATH].filter(Boolean).join(delimiter);
  return out;
};

export const analysisPool = (ctx: ServiceContext): WorkerPool => {
  const existing = ctx.services.analysisPool;
  if (existing) return existing;
  const python = workerPython(ctx.config.python);
  // the one folder whose files the worker may read: the service's upload store
  const env = { ...analysisEnvironment(ctx.config), ATOMSTUDIO_ANALYSIS_FILES: uploadStore(ctx).root };
  return provide(
    ctx,
    "analysisPool",
    new WorkerPool(
      ctx.config.analysisWorkers,
      () =>
        new WorkerProcess(
          python,
          env,
          { log: ctx.log, redact: (text: string) => redact(text, [], { ...ctx.config.environment }) },
          "atomstudio_worker.analysis",
        ),
      // A parse cannot be interrupted from inside: a request past its deadline, or whose client
      // left, kills its worker at once, and a fresh one is started right away (pymatgen imported
      // while the 504 goes out), so the next request does not wait behind abandoned work.
      { graceMs: 0, respawn: true },
    ),
  );
};

/** HTTP status of the analysis worker's codes (the calculator codes keep theirs). */
const STATUS: Record<string, number> = {
  INVALID_FILE: 400,
  NO_PROJECTIONS: 400,
  NO_KPATH_LABELS: 400,
  UNKNOWN_BOND_LABEL: 400,
  STRUCTURE_MISMATCH: 400,
  UNKNOWN_ELEMENT: 400,
  UNKNOWN_ORBITAL: 400,
  INVALID_INDEX: 400,
  MISSING_FILE: 400,
  INVALID_CLUSTER_PARAMETERS: 400,
  FILE_TOO_LARGE: 413,
  ANALYSIS_UNAVAILABLE: 503,
};

/** Decode a JSON body's file to its bytes (decompression is the worker's). */
const decode = (name: string, file: AnalysisFile): Buffer => {
  if (file.encoding !== "base64") return Buffer.from(file.content, file.encoding === "latin1" ? "latin1" : "utf8");
  const base64 = /\s/.test(file.content) ? file.content.replace(/\s+/g, "") : file.content;
  const bytes = Buffer.from(base64, "base64");
  // Node's decoder skips characters outside the alphabet: only a canonical encoding reads back
  // the same (a copy and a compare, much cheaper than a regular expression over 80 MB)
  if (base64.length % 4 !== 0 || bytes.toString("base64") !== base64)
    throw new AtomStudioError("INVALID_FILE", `${name} is not valid base64`, { file: name }, 400);
  return bytes;
};

const asServiceError = (e: unknown): unknown => {
  if (!(e instanceof AtomStudioError)) return e;
  if (e.code === "WORKER_DIED")
    // never pass the worker's stderr to the caller
    return new AtomStudioError("WORKER_DIED", "The analysis worker died during the request (it is replaced)", undefined, 502);
  const status = STATUS[e.code];
  if (e.code === "ANALYSIS_UNAVAILABLE")
    return new AtomStudioError(e.code, `${e.message.split(";")[0]}; install it with ${INSTALL_HINT}`, e.details, 503);
  return status ? new AtomStudioError(e.code, e.message, e.details, status) : e;
};

/** Rethrow as the caller sees it (also what an analysis job's failure records). */
const mapped = (e: unknown): never => {
  throw asServiceError(e);
};

/**
 * Run one analysis method on the worker: `files` by name (absent ones skipped), `params` the rest.
 * Queued behind other analyses, cancelled when the client goes away, 504 past the deadline.
 */
export const runAnalysis = <T>(
  ctx: ServiceContext,
  method: string,
  files: Record<string, AnalysisFile | undefined>,
  params: Record<string, unknown>,
): Promise<T> => runWithFiles<T>(ctx, method, files, params, false);

/** `runAnalysis` whose answer is the worker's JSON text, for an HTTP reply (`Operation.httpJson`). */
export const runAnalysisJson = (
  ctx: ServiceContext,
  method: string,
  files: Record<string, AnalysisFile | undefined>,
  params: Record<string, unknown>,
): Promise<JsonText> => runWithFiles<JsonText>(ctx, method, files, params, true);

const runWithFiles = async <T>(
  ctx: ServiceContext,
  method: string,
  files: Record<string, AnalysisFile | undefined>,
  params: Record<string, unknown>,
  text: boolean,
): Promise<T> => {
  const store = uploadStore(ctx);
  const held: Record<string, HeldFile & { filename?: string }> = {};
  try {
    for (const [name, file] of Object.entries(files)) {
      if (!file) continue;
      // a multipart upload is already on disk (streamed there while hashed); a JSON file is written once
      const uploaded = ctx.request?.uploads?.get(name);
      if (!uploaded && file.content.length === 0)
        throw new AtomStudioError("INVALID_FILE", `${name} is empty (0 bytes)`, { file: name }, 400);
      const received = uploaded ?? (await store.write(decode(name, file)));
      if (received.size === 0) {
        await store.discard(received);
        throw new AtomStudioError("INVALID_FILE", `${name} is empty (0 bytes)`, { file: name }, 400);
      }
      const filename = file.filename ?? uploaded?.filename;
      held[name] = { ...(await store.hold(received)), ...(filename ? { filename } : {}) };
    }
    // a BullMQ job when the service has a job queue (jobs/analysis-jobs.ts), else the pool directly
    return await runAsAnalysisJob(ctx, method, held, () => runOnWorker<T>(ctx, method, held, params, text).catch(mapped));
  } catch (e) {
    throw asServiceError(e);
  } finally {
    for (const f of Object.values(held)) f.release();
  }
};

/** One request to the pool, with the request's deadline and cancellation when the client leaves. */
const runOnWorker = <T>(
  ctx: ServiceContext,
  method: string,
  held: Record<string, HeldFile & { filename?: string }>,
  params: Record<string, unknown>,
  text: boolean,
): Promise<T> => {
  const pool = analysisPool(ctx);
  const body = {
    ...params,
    max_file_bytes: ctx.config.analysisMaxFileBytes,
    files: Object.fromEntries(
      Object.entries(held).map(([name, f]) => [
        name,
        { sha256: f.sha256, path: f.path, ...(f.filename ? { filename: f.filename } : {}) },
      ]),
    ),
  };
  const handle = pool.run<T>(method, body, { text });
  const signal = ctx.request?.signal;
  const onAbort = () => handle.cancel();
  signal?.addEventListener("abort", onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      handle.cancel();
      reject(
        new AtomStudioError(
          "DEADLINE_EXCEEDED",
          `The analysis took longer than ${ctx.config.analysisTimeoutMs / 1000} s`,
          undefined,
          504,
        ),
      );
    }, ctx.config.analysisTimeoutMs);
  });
  return Promise.race([handle.result, deadline]).finally(() => {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  });
};
