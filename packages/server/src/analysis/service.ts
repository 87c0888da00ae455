/**
 * Electronic-structure analysis through the analysis worker (`python -m atomstudio_worker.analysis`,
 * worker/src/atomstudio_worker/analysis): files decoded and hashed here, parsed and analysed by
 * pymatgen and lobsterpy there. The worker keeps files and parsed objects by sha256, so a file it
 * already holds travels as its hash only; when it has let one go it answers NEED_FILES and the
 * file is sent again. The pool is the calculator pool's class (queue, cancellation), with its own
 * processes, a minimal environment and a deadline per request.
 */

import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { AtomStudioError } from "atomstudio-core";
import { z } from "zod";
import { redact } from "../chat/secrets.ts";
import type { ServiceConfig } from "../config.ts";
import { provide, type ServiceContext } from "../context.ts";
import { WorkerPool } from "../optimize/pool.ts";
import { WorkerProcess, workerPython } from "../optimize/worker.ts";

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
  const env = analysisEnvironment(ctx.config);
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

interface Prepared {
  sha256: string;
  filename?: string;
  /** The bytes, base64-encoded when the worker needs them (not for a file it already holds). */
  data: () => string;
}

const SYNC_HASH_BYTES = 4 * 1024 * 1024;

/** Decode one file (its bytes as sent; decompression is the worker's) and hash it off the event loop. */
const prepare = async (name: string, file: AnalysisFile): Promise<Prepared> => {
  let bytes: Buffer;
  let base64: string | undefined;
  if (file.encoding === "base64") {
    base64 = /\s/.test(file.content) ? file.content.replace(/\s+/g, "") : file.content;
    bytes = Buffer.from(base64, "base64");
    // Node's decoder skips characters outside the alphabet: only a canonical encoding reads back
    // the same (a copy and a compare, much cheaper than a regular expression over 80 MB)
    if (base64.length % 4 !== 0 || bytes.toString("base64") !== base64)
      throw new AtomStudioError("INVALID_FILE", `${name} is not valid base64`, { file: name }, 400);
  } else bytes = Buffer.from(file.content, file.encoding === "latin1" ? "latin1" : "utf8");
  if (bytes.length === 0) throw new AtomStudioError("INVALID_FILE", `${name} is empty (0 bytes)`, { file: name }, 400);
  // Large files are hashed by WebCrypto on the thread pool, so a 50 MB file does not hold the event
  // loop; small ones in place (about 1 ms per MB), which saves the hop to a thread.
  const sha256 =
    bytes.length > SYNC_HASH_BYTES
      ? Buffer.from(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)).toString("hex")
      : createHash("sha256").update(bytes).digest("hex");
  return {
    sha256,
    ...(file.filename ? { filename: file.filename } : {}),
    data: () => base64 ?? bytes.toString("base64"),
  };
};

/** Files the worker has been sent, so a repeated request sends only their hashes. */
const sentToWorker = new WeakMap<WorkerPool, Set<string>>();

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

/**
 * Run one analysis method on the worker: `files` by name (absent ones skipped), `params` the rest.
 * Queued behind other analyses, cancelled when the client goes away, 504 past the deadline.
 */
export const runAnalysis = async <T>(
  ctx: ServiceContext,
  method: string,
  files: Record<string, AnalysisFile | undefined>,
  params: Record<string, unknown>,
): Promise<T> => {
  const prepared: Record<string, Prepared> = {};
  for (const [name, file] of Object.entries(files)) if (file) prepared[name] = await prepare(name, file);
  const pool = analysisPool(ctx);
  const sent = sentToWorker.get(pool) ?? new Set<string>();
  sentToWorker.set(pool, sent);
  const body = (withData: Set<string>) => ({
    ...params,
    max_file_bytes: ctx.config.analysisMaxFileBytes,
    files: Object.fromEntries(
      Object.entries(prepared).map(([name, f]) => [
        name,
        { sha256: f.sha256, ...(f.filename ? { filename: f.filename } : {}), ...(withData.has(name) ? { data: f.data() } : {}) },
      ]),
    ),
  });
  const once = (withData: Set<string>): Promise<T> => {
    const handle = pool.run<T>(method, body(withData));
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
  const unsent = new Set(Object.keys(prepared).filter((n) => !sent.has((prepared[n] as Prepared).sha256)));
  try {
    try {
      return await once(unsent);
    } catch (e) {
      if (!(e instanceof AtomStudioError && e.code === "NEED_FILES")) throw e;
      // the worker let these go (or is a new process): send them again, with their bytes
      const missing = new Set(((e.details?.files as string[] | undefined) ?? Object.keys(prepared)).map(String));
      return await once(missing);
    }
  } catch (e) {
    throw asServiceError(e);
  } finally {
    for (const f of Object.values(prepared)) sent.add(f.sha256);
  }
};
