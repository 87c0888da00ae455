/**
 * `atomstudio serve` in its own process, as a user starts it: for tests and benchmarks that need
 * the whole service (every plugin, its own event loop) rather than an app in the test's process.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

// Not REPO_ROOT from index.ts: index.ts re-exports this module, so that import would be circular.
export const ATOMSTUDIO_BIN = resolve(dirname(fileURLToPath(import.meta.url)), "../../server/bin/atomstudio.js");

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** SIGTERM, resolved once the process has exited. */
  stop(): Promise<void>;
}

/**
 * Start `atomstudio serve --port 0` with these ATOMSTUDIO_* settings and no others (this
 * machine's stay out; the log level defaults to "error", the studio is not built); resolves with
 * its URL once it listens, rejects with the tail of its stderr when it exits first.
 * `stderr: "inherit"` shows the service's stderr instead (benchmarks).
 */
export const startServeProcess = (
  settings: Record<string, string> = {},
  opts: { stderr?: "pipe" | "inherit" } = {},
): Promise<ServeProcess> =>
  new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("ATOMSTUDIO_")) env[k] = v;
    Object.assign(env, { ATOMSTUDIO_LOG_LEVEL: "error", ATOMSTUDIO_STUDIO_AUTOBUILD: "0" }, settings);
    const child = spawn(process.execPath, [ATOMSTUDIO_BIN, "serve", "--port", "0"], {
      env,
      stdio: ["ignore", "pipe", opts.stderr ?? "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (d) => {
      stderr = (stderr + String(d)).slice(-4000);
    });
    child.once("exit", (code) => reject(new Error(`service exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      const m = /listening on (http:\/\/\S+?:\d+)/.exec(line);
      if (m)
        resolve({
          url: m[1] as string,
          child,
          stop: async () => {
            if (child.exitCode !== null || child.signalCode !== null) return;
            const done = new Promise((r) => child.once("exit", r));
            child.kill("SIGTERM");
            await done;
          },
        });
    });
  });
