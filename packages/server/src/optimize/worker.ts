/**
 * One Python calculator worker process (worker/PROTOCOL.md): JSON lines over stdin/stdout,
 * requests `{id, method, params}`, replies `{id, ok, result|error}`, progress `{id, event, data}`.
 * A worker that dies fails every request it holds at once with 502 WORKER_DIED (never a hang).
 * Its stderr (tracebacks, library output) goes to the service log, redacted, never into an error
 * body. It leads its own process group, so killing it also ends the programs it started (`xtb`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { AtomStudioError } from "atomstudio-core";
import { redact } from "../chat/secrets.ts";
import { serviceError, statusOf } from "../errors/codes.ts";
import { JsonText } from "../registry/json-text.ts";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** The worker's Python: the configured one, else the repository's `.venv`, else python3 on PATH. */
export const workerPython = (configured?: string): string => {
  if (configured) return configured;
  const venv = join(REPO_ROOT, ".venv/bin/python");
  return existsSync(venv) ? venv : "python3";
};

/** Longest worker message passed on: engine errors can quote whole program output. */
const MAX_MESSAGE = 500;

export const workerError = (e: { code?: string; message?: string; details?: Record<string, unknown> }): AtomStudioError => {
  const code = e.code ?? "INTERNAL_ERROR";
  const text = redact(e.message ?? code, [], {});
  const message = text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
  // The status comes from the error-code table (errors/codes.ts), like every other error's.
  return new AtomStudioError(code, message, e.details, statusOf(code, 500));
};

/** Where a dead worker's stderr goes: the service log (pino's `warn` shape), after `redact`. */
export interface WorkerLogging {
  log?: { warn: (obj: object, msg: string) => void };
  /** Removes secrets from text before it is logged (the service passes its key-aware redaction). */
  redact?: (text: string) => string;
}

/** Sent instead of the worker's own words: what happened and what the service does about it. */
export const WORKER_DIED_MESSAGE = "The calculator worker stopped during the request; a new one serves the next request";

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onEvent: ((event: string, data: unknown) => void) | undefined;
  /** Resolve with the result's JSON text (a `JsonText`) instead of the parsed value. */
  text: boolean;
}

/** `{"id":"` — every reply to a request this class sent starts so (its ids are strings). */
const ID_PREFIX = '{"id":"';

export class WorkerProcess {
  readonly child: ChildProcess;
  #pending = new Map<string, Pending>();
  #next = 0;
  #dead: AtomStudioError | undefined;
  #stderrTail: string[] = [];
  readonly exited: Promise<void>;

  /**
   * `env` is the worker's whole environment (see `workerEnvironment`): nothing else is inherited.
   * `module`: the Python module to run (`atomstudio_worker.analysis` for the analysis worker).
   */
  constructor(
    python: string,
    env: NodeJS.ProcessEnv,
    { log, redact = (t) => t }: WorkerLogging = {},
    module = "atomstudio_worker",
  ) {
    this.child = spawn(python, ["-m", module], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...env, PYTHONUNBUFFERED: "1" },
      // its own process group: a kill reaches the programs it started too
      detached: true,
    });
    const lines = createInterface({ input: this.child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => this.#onLine(line));
    (this.child.stderr as NodeJS.ReadableStream).on("data", (b: Buffer) => {
      this.#stderrTail.push(b.toString());
      if (this.#stderrTail.length > 50) this.#stderrTail.shift();
    });
    this.child.stdin?.on("error", () => {});
    this.exited = new Promise((res) => {
      const die = (why: string) => {
        if (!this.#dead) {
          // the details stay here: a traceback names files, versions and inputs of the machine
          log?.warn({ pid: this.child.pid, stderr: redact(this.#stderrTail.join("").slice(-4000)) }, `calculator worker: ${why}`);
          this.#dead = serviceError("WORKER_DIED", WORKER_DIED_MESSAGE);
        }
        for (const p of this.#pending.values()) p.reject(this.#dead);
        this.#pending.clear();
        res();
      };
      this.child.on("error", (e) => die(`could not start (${e.message}); run scripts/setup-python`));
      this.child.on("exit", (code, signal) => die(`exited (${signal ?? `code ${code}`})`));
    });
  }

  get alive(): boolean {
    return !this.#dead && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  #onLine(line: string): void {
    // A successful reply to a request that asked for text: the worker writes compact JSON with the
    // keys in the order id, ok, result (worker/PROTOCOL.md), so the result is the text between
    // that prefix and the closing brace. Anything else (errors, events) is parsed as usual.
    if (line.startsWith(ID_PREFIX)) {
      const id = line.slice(ID_PREFIX.length, line.indexOf('"', ID_PREFIX.length));
      const p = this.#pending.get(id);
      const head = `${ID_PREFIX}${id}","ok":true,"result":`;
      if (p?.text && line.startsWith(head) && line.endsWith("}")) {
        this.#pending.delete(id);
        p.resolve(new JsonText(line.slice(head.length, -1)));
        return;
      }
    }
    let msg: { id?: unknown; ok?: boolean; result?: unknown; error?: Record<string, unknown>; event?: string; data?: unknown };
    try {
      msg = JSON.parse(line);
    } catch {
      return; // the worker never prints non-protocol lines on stdout; ignore defensively
    }
    const p = this.#pending.get(String(msg.id));
    if (!p) return;
    if (msg.event) {
      p.onEvent?.(msg.event, msg.data);
      return;
    }
    this.#pending.delete(String(msg.id));
    if (msg.ok) p.resolve(msg.result);
    else p.reject(workerError((msg.error ?? {}) as never));
  }

  /**
   * Send a request; `onEvent` receives progress events (optimization steps). With `text`, a
   * successful result arrives as a `JsonText` (the caller's `T` says so), not parsed.
   */
  request<T = unknown>(
    method: string,
    params: unknown = {},
    onEvent?: (event: string, data: unknown) => void,
    text = false,
  ): { id: string; result: Promise<T> } {
    const id = `r${++this.#next}`;
    const result = new Promise<T>((resolvePromise, reject) => {
      if (this.#dead) return reject(this.#dead);
      this.#pending.set(id, { resolve: resolvePromise as (v: unknown) => void, reject, onEvent, text });
      this.child.stdin?.write(`${JSON.stringify({ id, method, params })}\n`);
    });
    return { id, result };
  }

  cancel(id: string): void {
    if (this.alive) this.child.stdin?.write(`${JSON.stringify({ id: `c${id}`, method: "cancel", params: { id } })}\n`);
  }

  /** SIGKILL to the worker's process group: the worker and whatever it started. */
  kill(): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      this.child.kill("SIGKILL"); // the group is gone already, or this platform has none
    }
  }

  async shutdown(): Promise<void> {
    if (!this.alive) return;
    this.child.stdin?.write(`${JSON.stringify({ id: "shutdown", method: "shutdown" })}\n`);
    const timer = setTimeout(() => this.kill(), 3000);
    await this.exited;
    clearTimeout(timer);
  }
}
