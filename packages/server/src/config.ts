/**
 * The service's one configuration: every `ATOMSTUDIO_*` variable is read here, parsed with zod,
 * and handed down typed (`ServiceConfig`). Nothing else in the service reads `process.env`.
 * The README's configuration table is checked against `SETTINGS` by a test, so the two cannot
 * drift apart.
 */
import { availableParallelism, homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";

/** Environment variables as the process sees them (a snapshot; tests pass their own). */
export type Environment = Readonly<Record<string, string | undefined>>;

const flag = z
  .enum(["0", "1", "true", "false", ""])
  .transform((v) => v === "1" || v === "true")
  .optional();
const positiveInt = z.coerce.number().int().positive();
const list = z
  .string()
  .transform((s) =>
    s
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .optional();
const nonEmpty = z
  .string()
  .transform((s) => s || undefined)
  .optional();

/**
 * Every `ATOMSTUDIO_*` variable the service reads, with its meaning (the README's table).
 * Variables of the chat providers (`ATOMSTUDIO_<PROVIDER>_MODEL`, `_BASE_URL`), the agents and
 * the Python worker's own variables are listed in `PATTERN_SETTINGS`.
 */
export const SETTINGS = {
  ATOMSTUDIO_HOST: { schema: z.string().min(1).optional(), doc: "address to listen on (default 127.0.0.1)" },
  ATOMSTUDIO_PORT: { schema: z.coerce.number().int().min(0).max(65535).optional(), doc: "port (default 8000)" },
  ATOMSTUDIO_TOKEN: {
    schema: nonEmpty,
    doc: "bearer token required on /api and /mcp; needed to listen on a non-loopback address",
  },
  ATOMSTUDIO_ALLOW_UNAUTHENTICATED: { schema: flag, doc: "`1`: allow a non-loopback address without a token" },
  ATOMSTUDIO_CORS_ORIGINS: { schema: list, doc: "extra allowed origins, comma separated (default: same origin only)" },
  ATOMSTUDIO_ALLOWED_HOSTS: {
    schema: list,
    doc: "host names the service is reached by besides loopback names and IP addresses, comma separated (see SECURITY.md)",
  },
  ATOMSTUDIO_MAX_BODY_MB: { schema: z.coerce.number().positive().optional(), doc: "request body cap in MiB (default 64)" },
  ATOMSTUDIO_REDIS_URL: {
    schema: nonEmpty,
    doc: "Redis shared by services and workers: the job queue of workflows and the cross-process viewer relay (default: an embedded redis-server)",
  },
  ATOMSTUDIO_LOG_LEVEL: {
    schema: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
    doc: "log level (default info)",
  },
  ATOMSTUDIO_VIEWER_TIMEOUT_MS: {
    schema: positiveInt.optional(),
    doc: "how long a viewer command waits for the studio (default 10000)",
  },
  ATOMSTUDIO_SYMMETRY_MAX_ATOMS: {
    schema: positiveInt.optional(),
    doc: "largest structure whose symmetry structure-info analyses (default 10000)",
  },
  ATOMSTUDIO_WORKERS: { schema: positiveInt.optional(), doc: "calculator worker processes (default 1)" },
  ATOMSTUDIO_MAX_ATOMS: {
    schema: positiveInt.optional(),
    doc: "atoms in any input structure, and atoms a CIF's symmetry expansion may produce (default 10000)",
  },
  ATOMSTUDIO_MAX_FRAMES: { schema: positiveInt.optional(), doc: "frames read from one multi-frame file (default 1000)" },
  ATOMSTUDIO_MAX_STRUCTURES: {
    schema: positiveInt.optional(),
    doc: "structures in one request or returned by one build (default 100)",
  },
  ATOMSTUDIO_MAX_TOTAL_ATOMS: {
    schema: positiveInt.optional(),
    doc: "atoms across all structures of one request or response (default 200000)",
  },
  ATOMSTUDIO_COMPUTE_THREADS: {
    schema: positiveInt.optional(),
    doc: "worker threads for CPU-heavy core work (default: CPU cores - 1, 1 to 4)",
  },
  ATOMSTUDIO_COMPUTE_DEADLINE_MS: {
    schema: positiveInt.optional(),
    doc: "deadline of one compute task, queue wait included; past it 504 DEADLINE_EXCEEDED (default 30000)",
  },
  ATOMSTUDIO_COMPUTE_QUEUE: {
    schema: positiveInt.optional(),
    doc: "compute tasks waiting for a thread; past it 429 QUEUE_FULL (default 64)",
  },
  ATOMSTUDIO_COMPUTE_MEMORY_MB: { schema: positiveInt.optional(), doc: "heap limit of one compute thread, MiB (default 1024)" },
  ATOMSTUDIO_PYTHON: { schema: nonEmpty, doc: "Python of the calculator worker (default: the repository's .venv, else python3)" },
  ATOMSTUDIO_ANALYSIS_WORKERS: { schema: positiveInt.optional(), doc: "analysis worker processes (bands, DOS, COHP; default 1)" },
  ATOMSTUDIO_ANALYSIS_MAX_FILE_MB: {
    schema: z.coerce.number().positive().optional(),
    doc: "largest analysis file once decompressed, in MiB (default 1024)",
  },
  ATOMSTUDIO_ANALYSIS_TIMEOUT_S: {
    schema: z.coerce.number().positive().optional(),
    doc: "deadline of one analysis request in seconds (default 300)",
  },
  ATOMSTUDIO_STUDIO_DIST: { schema: nonEmpty, doc: "folder of the built studio (default packages/studio/dist)" },
  ATOMSTUDIO_STUDIO_AUTOBUILD: { schema: flag, doc: "`0`: do not build a missing studio at start" },
  ATOMSTUDIO_MCP_URL: { schema: nonEmpty, doc: "this service's /mcp as command-line agents reach it (default: derived)" },
  ATOMSTUDIO_URL: {
    schema: nonEmpty,
    doc: "`atomstudio mcp` (stdio): the service to forward to (default http://127.0.0.1:8000)",
  },
  ATOMSTUDIO_VIEWER_CLIENT: { schema: nonEmpty, doc: "`atomstudio mcp` (stdio): the studio its viewer tools address" },
  ATOMSTUDIO_MODELS_DIR: {
    schema: nonEmpty,
    doc: "server-side folder of ML models (`mace/`, `chgnet/`, `m3gnet/`); requests pick one by id",
  },
  ATOMSTUDIO_MACE_MODEL: { schema: nonEmpty, doc: "MACE model file on the server, the default `mace` model" },
  ATOMSTUDIO_CHGNET_MODEL: { schema: nonEmpty, doc: "CHGNet checkpoint on the server, the default `chgnet` model" },
  ATOMSTUDIO_M3GNET_MODEL: { schema: nonEmpty, doc: "saved matgl model directory on the server, the default `m3gnet` model" },
  ATOMSTUDIO_DEVICE: { schema: nonEmpty, doc: "device of the ML models in the worker, `cpu` or `cuda`" },
  ATOMSTUDIO_XTB: { schema: nonEmpty, doc: "name or path of the `xtb` program the worker may run" },
  ATOMSTUDIO_XTB_TIMEOUT_S: { schema: z.coerce.number().positive().optional(), doc: "time limit of one `xtb` run, seconds" },
  ATOMSTUDIO_WORKER_LOG_LEVEL: { schema: nonEmpty, doc: "log level of the calculator worker (stderr, logged by the service)" },
  ATOMSTUDIO_MAX_STEPS: { schema: positiveInt.optional(), doc: "largest `max_steps` an optimization may ask for" },
  ATOMSTUDIO_JOB_DEADLINE_S: {
    schema: z.coerce.number().positive().optional(),
    doc: "time limit of one calculator job, seconds (then cancelled, the worker killed if it does not stop)",
  },
  ATOMSTUDIO_QUEUE_MAX: {
    schema: z.coerce.number().int().min(0).optional(),
    doc: "calculator jobs that may wait for a worker; more get 429 QUEUE_FULL",
  },
  ATOMSTUDIO_DATA_DIR: {
    schema: nonEmpty,
    doc: "folder of the service's own data, e.g. the embedded Redis's append-only file (default ~/.local/share/atomstudio)",
  },
  ATOMSTUDIO_EMBEDDED_REDIS: {
    schema: flag,
    doc: "`0`: without ATOMSTUDIO_REDIS_URL start no redis-server (workflow routes then answer 503 QUEUE_UNAVAILABLE)",
  },
  ATOMSTUDIO_QUEUE_CALCULATORS: {
    schema: flag,
    doc: "`0`: this service takes no calculator jobs from the queue (left to `atomstudio-worker --queue` workers)",
  },
  ATOMSTUDIO_QUEUE_LOCK_S: {
    schema: z.coerce.number().positive().optional(),
    doc: "lock of a queued job on its worker, seconds: a worker silent this long counts as dead and its job moves on (default 30)",
  },
} as const;

/** Families of variables read by name from provider and agent tables (documented in the README too). */
export const PATTERN_SETTINGS = {
  "ATOMSTUDIO_<PROVIDER>_MODEL": "default model of a chat provider (e.g. ATOMSTUDIO_DEEPSEEK_MODEL)",
  "ATOMSTUDIO_<PROVIDER>_BASE_URL": "base URL of a chat provider, for self-hosted gateways",
  ATOMSTUDIO_AGENT_ROOT: "working-directory root of command-line agents",
  ATOMSTUDIO_MAX_AGENTS: "command-line agents running at once (default 2)",
} as const;

type SettingKey = keyof typeof SETTINGS;
export type Settings = { [K in SettingKey]: z.output<(typeof SETTINGS)[K]["schema"]> };

/** Parse every `ATOMSTUDIO_*` setting; a malformed value is an error naming the variable. */
export const readSettings = (env: Environment): Settings => {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, { schema }] of Object.entries(SETTINGS)) {
    const raw = env[key];
    const parsed = (schema as z.ZodType).safeParse(raw === undefined ? undefined : raw.trim());
    if (parsed.success) out[key] = parsed.data;
    else problems.push(`${key}=${JSON.stringify(raw)}: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  }
  if (problems.length) throw new Error(`Invalid configuration: ${problems.join("; ")}`);
  return out as Settings;
};

/** Service configuration from flags and environment, with safe defaults (README "Security defaults"). */
export interface ServiceConfig {
  host: string;
  port: number;
  /** Bearer token required on /api and /mcp when set. */
  token: string | undefined;
  allowUnauthenticated: boolean;
  /** Extra origins allowed by CORS; empty: same origin only. */
  corsOrigins: string[];
  /** Host names accepted in Host besides loopback names, IP addresses, the listen address and the CORS origins' hosts. */
  allowedHosts: string[];
  /** Request body cap in bytes. */
  bodyLimit: number;
  redisUrl: string | undefined;
  /** Folder of the service's own data (the embedded Redis). */
  dataDir: string;
  /** Start a private redis-server when no Redis URL is set (`atomstudio serve` only). */
  embeddedRedis: boolean;
  /** Redis of the job queue: ATOMSTUDIO_REDIS_URL, or the embedded one the command line started; undefined: none. */
  queueUrl: string | undefined;
  /** Take calculator jobs from the queue with this service's own worker pool. */
  queueCalculators: boolean;
  /** Lock of a job on its worker, ms (stalled-job detection). */
  queueLockMs: number;
  logLevel: string;
  /** How long a viewer command waits for the studio, ms. */
  viewerTimeoutMs: number;
  /** Largest structure whose symmetry structure-info analyses. */
  symmetryMaxAtoms: number;
  /** Calculator worker processes. */
  workers: number;
  /** Atoms in any input structure and in a CIF's symmetry expansion. */
  maxAtoms: number;
  /** Frames read from one multi-frame file. */
  maxFrames: number;
  /** Structures in one request or returned by one build. */
  maxStructures: number;
  /** Atoms across all structures of one request or response. */
  maxTotalAtoms: number;
  /** Worker threads of the compute pool (symmetry, slabs, standard cells, file parsing). */
  computeThreads: number;
  /** Deadline of one compute task in ms, queue wait included. */
  computeDeadlineMs: number;
  /** Compute tasks that may wait for a thread. */
  computeQueue: number;
  /** Heap limit of one compute thread, MiB. */
  computeMemoryMb: number;
  /** Python of the calculator worker; undefined: the repository's .venv, else python3. */
  python: string | undefined;
  /** Analysis worker processes (bands, DOS, COHP). */
  analysisWorkers: number;
  /** Largest analysis file once decompressed, bytes. */
  analysisMaxFileBytes: number;
  /** Deadline of one analysis request, ms. */
  analysisTimeoutMs: number;
  /** Folder of the built studio; undefined: the studio package's dist. */
  studioDist: string | undefined;
  /** Build a missing studio in the background at start. */
  studioAutoBuild: boolean;
  /** This service's /mcp as agents on this machine reach it; undefined: derived from the address. */
  mcpUrl: string | undefined;
  /** Server-side folder of ML models by calculator (`mace/`, `chgnet/`, `m3gnet/`): the allowlist. */
  modelsDir: string | undefined;
  /** The operator's default model of each ML calculator (a path on the server), given to the worker. */
  maceModel: string | undefined;
  chgnetModel: string | undefined;
  m3gnetModel: string | undefined;
  /** Device of the ML models in the worker (`cpu` unless set). */
  workerDevice: string | undefined;
  /** The `xtb` program the worker may run, and its time limit per run in seconds. */
  xtbProgram: string | undefined;
  xtbTimeoutS: number;
  /** Log level of the calculator worker. */
  workerLogLevel: string | undefined;
  /** Largest `max_steps` an optimization may ask for. */
  maxSteps: number;
  /** Time limit of one calculator job, ms: past it the job is cancelled (504 DEADLINE_EXCEEDED). */
  jobDeadlineMs: number;
  /** How long a cancelled job's worker may take to stop before it is killed, ms. */
  cancelGraceMs: number;
  /** Calculator jobs that may wait for a worker; more are refused with 429 QUEUE_FULL. */
  queueMax: number;
  /**
   * The process environment, for what is read by variable name from tables: provider keys
   * (`ANTHROPIC_API_KEY` …), `ATOMSTUDIO_<PROVIDER>_MODEL` overrides, and the PATH/HOME that
   * command-line agents and workers are started with. Only the chat and worker modules use it.
   */
  environment: Environment;
}

export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);

/** The process's environment: the one place the service reads it. */
export const processEnvironment = (): Environment => ({ ...process.env });

export const loadConfig = (flags: Partial<ServiceConfig> = {}, env: Environment = processEnvironment()): ServiceConfig => {
  const s = readSettings(env);
  const config: ServiceConfig = {
    host: flags.host ?? s.ATOMSTUDIO_HOST ?? "127.0.0.1",
    port: flags.port ?? s.ATOMSTUDIO_PORT ?? 8000,
    token: flags.token ?? s.ATOMSTUDIO_TOKEN,
    allowUnauthenticated: flags.allowUnauthenticated ?? s.ATOMSTUDIO_ALLOW_UNAUTHENTICATED ?? false,
    corsOrigins: flags.corsOrigins ?? s.ATOMSTUDIO_CORS_ORIGINS ?? [],
    allowedHosts: flags.allowedHosts ?? s.ATOMSTUDIO_ALLOWED_HOSTS ?? [],
    bodyLimit: flags.bodyLimit ?? Math.round((s.ATOMSTUDIO_MAX_BODY_MB ?? 64) * 1024 * 1024),
    redisUrl: flags.redisUrl ?? s.ATOMSTUDIO_REDIS_URL,
    dataDir:
      flags.dataDir ??
      s.ATOMSTUDIO_DATA_DIR ??
      join(env.XDG_DATA_HOME || join(env.HOME || homedir(), ".local", "share"), "atomstudio"),
    embeddedRedis: flags.embeddedRedis ?? s.ATOMSTUDIO_EMBEDDED_REDIS ?? true,
    queueUrl: flags.queueUrl ?? flags.redisUrl ?? s.ATOMSTUDIO_REDIS_URL,
    queueCalculators: flags.queueCalculators ?? s.ATOMSTUDIO_QUEUE_CALCULATORS ?? true,
    queueLockMs: flags.queueLockMs ?? Math.round((s.ATOMSTUDIO_QUEUE_LOCK_S ?? 30) * 1000),
    logLevel: flags.logLevel ?? s.ATOMSTUDIO_LOG_LEVEL ?? "info",
    viewerTimeoutMs: flags.viewerTimeoutMs ?? s.ATOMSTUDIO_VIEWER_TIMEOUT_MS ?? 10_000,
    symmetryMaxAtoms: flags.symmetryMaxAtoms ?? s.ATOMSTUDIO_SYMMETRY_MAX_ATOMS ?? 10_000,
    workers: flags.workers ?? s.ATOMSTUDIO_WORKERS ?? 1,
    maxAtoms: flags.maxAtoms ?? s.ATOMSTUDIO_MAX_ATOMS ?? 10_000,
    maxFrames: flags.maxFrames ?? s.ATOMSTUDIO_MAX_FRAMES ?? 1000,
    maxStructures: flags.maxStructures ?? s.ATOMSTUDIO_MAX_STRUCTURES ?? 100,
    maxTotalAtoms: flags.maxTotalAtoms ?? s.ATOMSTUDIO_MAX_TOTAL_ATOMS ?? 200_000,
    // One core stays with the event loop (health, light routes); more than 4 threads rarely pays.
    computeThreads: flags.computeThreads ?? s.ATOMSTUDIO_COMPUTE_THREADS ?? Math.min(4, Math.max(1, availableParallelism() - 1)),
    computeDeadlineMs: flags.computeDeadlineMs ?? s.ATOMSTUDIO_COMPUTE_DEADLINE_MS ?? 30_000,
    computeQueue: flags.computeQueue ?? s.ATOMSTUDIO_COMPUTE_QUEUE ?? 64,
    computeMemoryMb: flags.computeMemoryMb ?? s.ATOMSTUDIO_COMPUTE_MEMORY_MB ?? 1024,
    python: flags.python ?? s.ATOMSTUDIO_PYTHON,
    analysisWorkers: flags.analysisWorkers ?? s.ATOMSTUDIO_ANALYSIS_WORKERS ?? 1,
    analysisMaxFileBytes: flags.analysisMaxFileBytes ?? Math.round((s.ATOMSTUDIO_ANALYSIS_MAX_FILE_MB ?? 1024) * 1024 * 1024),
    analysisTimeoutMs: flags.analysisTimeoutMs ?? Math.round((s.ATOMSTUDIO_ANALYSIS_TIMEOUT_S ?? 300) * 1000),
    studioDist: flags.studioDist ?? s.ATOMSTUDIO_STUDIO_DIST,
    // Under the test runner a missing studio is the test's business, not a background build.
    studioAutoBuild: flags.studioAutoBuild ?? s.ATOMSTUDIO_STUDIO_AUTOBUILD ?? !env.VITEST,
    mcpUrl: flags.mcpUrl ?? s.ATOMSTUDIO_MCP_URL,
    modelsDir: flags.modelsDir ?? s.ATOMSTUDIO_MODELS_DIR,
    maceModel: flags.maceModel ?? s.ATOMSTUDIO_MACE_MODEL,
    chgnetModel: flags.chgnetModel ?? s.ATOMSTUDIO_CHGNET_MODEL,
    m3gnetModel: flags.m3gnetModel ?? s.ATOMSTUDIO_M3GNET_MODEL,
    workerDevice: flags.workerDevice ?? s.ATOMSTUDIO_DEVICE,
    xtbProgram: flags.xtbProgram ?? s.ATOMSTUDIO_XTB,
    xtbTimeoutS: flags.xtbTimeoutS ?? s.ATOMSTUDIO_XTB_TIMEOUT_S ?? 600,
    workerLogLevel: flags.workerLogLevel ?? s.ATOMSTUDIO_WORKER_LOG_LEVEL,
    maxSteps: flags.maxSteps ?? s.ATOMSTUDIO_MAX_STEPS ?? 10_000,
    jobDeadlineMs: flags.jobDeadlineMs ?? Math.round((s.ATOMSTUDIO_JOB_DEADLINE_S ?? 3600) * 1000),
    cancelGraceMs: flags.cancelGraceMs ?? 5000,
    queueMax: flags.queueMax ?? s.ATOMSTUDIO_QUEUE_MAX ?? 32,
    // Tests pass `{}` as `env` to keep this machine's ATOMSTUDIO_* settings out; child processes
    // still need the real PATH and HOME, so the table-read environment is the process's own.
    environment: flags.environment ?? processEnvironment(),
  };
  if (!Number.isInteger(config.port) || config.port < 0 || config.port > 65535) throw new Error(`Invalid port ${config.port}`);
  if (!isLoopback(config.host) && !config.token && !config.allowUnauthenticated)
    throw new Error(
      `Refusing to listen on ${config.host} without authentication: set ATOMSTUDIO_TOKEN, or pass --allow-unauthenticated if you really mean it.`,
    );
  return config;
};
