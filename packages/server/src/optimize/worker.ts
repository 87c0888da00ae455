/**
 * One Python calculator worker process (worker/PROTOCOL.md): JSON lines over stdin/stdout,
 * requests `{id, method, params}`, replies `{id, ok, result|error}`, progress `{id, event, data}`.
 * A worker that dies fails every request it holds at once with 502 WORKER_DIED (never a hang).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { AtomStudioError } from "atomstudio-core";
import { serviceError, statusOf } from "../errors/codes.ts";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** The worker's Python: the configured one, else the repository's `.venv`, else python3 on PATH. */
export const workerPython = (configured?: string): string => {
  if (configured) return configured;
  const venv = join(REPO_ROOT, ".venv/bin/python");
  return existsSync(venv) ? venv : "python3";
};

export const workerError = (e: { code?: string; message?: string; details?: Record<string, unknown> }): AtomStudioError => {
  const code = e.code ?? "INTERNAL_ERROR";
  // The status comes from the error-code table (errors/codes.ts), like every other error's.
  return new AtomStudioError(code, e.message ?? code, e.details, statusOf(code, 500));
};

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onEvent: ((event: string, data: unknown) => void) | undefined;
}

export class WorkerProcess {
  readonly child: ChildProcess;
  #pending = new Map<string, Pending>();
  #next = 0;
  #dead: AtomStudioError | undefined;
  #stderrTail: string[] = [];
  readonly exited: Promise<void>;

  constructor(python: string, env: NodeJS.ProcessEnv) {
    this.child = spawn(python, ["-m", "atomstudio_worker"], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...env, PYTHONUNBUFFERED: "1" },
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
        if (!this.#dead) this.#dead = serviceError("WORKER_DIED", why, { stderr: this.#stderrTail.join("").slice(-2000) });
        for (const p of this.#pending.values()) p.reject(this.#dead);
        this.#pending.clear();
        res();
      };
      this.child.on("error", (e) => die(`Calculator worker could not start (${e.message}); run scripts/setup-python`));
      this.child.on("exit", (code, signal) => die(`Calculator worker exited (${signal ?? `code ${code}`}) during the request`));
    });
  }

  get alive(): boolean {
    return !this.#dead && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  #onLine(line: string): void {
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

  /** Send a request; `onEvent` receives progress events (optimization steps). */
  request<T = unknown>(
    method: string,
    params: unknown = {},
    onEvent?: (event: string, data: unknown) => void,
  ): { id: string; result: Promise<T> } {
    const id = `r${++this.#next}`;
    const result = new Promise<T>((resolvePromise, reject) => {
      if (this.#dead) return reject(this.#dead);
      this.#pending.set(id, { resolve: resolvePromise as (v: unknown) => void, reject, onEvent });
      this.child.stdin?.write(`${JSON.stringify({ id, method, params })}\n`);
    });
    return { id, result };
  }

  cancel(id: string): void {
    if (this.alive) this.child.stdin?.write(`${JSON.stringify({ id: `c${id}`, method: "cancel", params: { id } })}\n`);
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }

  async shutdown(): Promise<void> {
    if (!this.alive) return;
    this.child.stdin?.write(`${JSON.stringify({ id: "shutdown", method: "shutdown" })}\n`);
    const timer = setTimeout(() => this.kill(), 3000);
    await this.exited;
    clearTimeout(timer);
  }
}
