/**
 * The embedded Redis (README "Workflows"): without `ATOMSTUDIO_REDIS_URL`, `atomstudio serve`
 * starts a private `redis-server` child listening only on a unix socket (mode 700) in the data
 * directory, with an append-only file there and no eviction (a queue must never drop a job), and
 * stops it on exit. Its data survives restarts of the service, so a workflow started before a
 * restart finishes after it. A server left behind by a service that was killed (its socket still
 * answers) is adopted and stopped with this one.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";

export interface EmbeddedRedis {
  /** `unix:///…/redis.sock`, a form `redisConnection` and the Python worker understand. */
  url: string;
  stop(): Promise<void>;
}

/** Unix socket paths are limited to 107 bytes; a longer data directory falls back to loopback TCP. */
const SOCKET_MAX = 100;

const ping = async (url: string): Promise<boolean> => {
  const client = new Redis({ ...redisConnection(url), lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const readText = (path: string): string => {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return "";
  }
};

const freePort = async (): Promise<number> => {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
};

/** ioredis options for a `redis://`, `rediss://` or `unix://` URL (ioredis itself reads only the first two). */
export const redisConnection = (url: string): { path: string } | { host: string; port: number; [k: string]: unknown } => {
  if (url.startsWith("unix://")) return { path: decodeURIComponent(url.slice("unix://".length)) } as { path: string };
  const u = new URL(url);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: Number(u.port || 6379),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.pathname.length > 1 ? { db: Number(u.pathname.slice(1)) } : {}),
    ...(u.protocol === "rediss:" ? { tls: {} } : {}),
  };
};

export const startEmbeddedRedis = async (
  dataDir: string,
  opts: { program?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<EmbeddedRedis> => {
  const dir = join(dataDir, "redis");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const socket = join(dir, "redis.sock");
  const pidFile = join(dir, "redis.pid");
  const useSocket = Buffer.byteLength(socket) <= SOCKET_MAX;

  const ownerFile = join(dir, "owner.pid");
  if (useSocket && (await ping(`unix://${socket}`))) {
    // Another service on this data directory runs it: share it, and leave it to that service.
    // Its owner is gone (killed without stopping it): adopt it and stop it on exit.
    const owner = Number(readText(ownerFile));
    if (owner !== process.pid && alive(owner)) return { url: `unix://${socket}`, stop: async () => {} };
    writeFileSync(ownerFile, String(process.pid));
    const pid = Number(readText(pidFile));
    return { url: `unix://${socket}`, stop: () => stopPid(pid) };
  }
  const port = useSocket ? 0 : await freePort();
  const args = [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    ...(useSocket ? ["--unixsocket", socket, "--unixsocketperm", "700"] : []),
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
    "--save",
    "",
    "--maxmemory-policy",
    "noeviction",
    "--pidfile",
    pidFile,
    "--protected-mode",
    "yes",
  ];
  const url = useSocket ? `unix://${socket}` : `redis://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(opts.program ?? "redis-server", args, {
    stdio: ["ignore", "pipe", "pipe"],
    // only what finding the program needs
    env: { PATH: opts.env?.PATH ?? "/usr/local/bin:/usr/bin:/bin", LANG: "C" },
  });
  let output = "";
  const collect = (d: Buffer) => {
    output = (output + String(d)).slice(-4000);
  };
  proc.stdout?.on("data", collect);
  proc.stderr?.on("data", collect);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output.trim()}`)), opts.timeoutMs ?? 20_000);
    const onData = (d: Buffer) => {
      if (/Ready to accept connections/i.test(String(d))) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout?.on("data", onData);
    proc.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`redis-server could not be started: ${e.message}`));
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited with ${code}: ${output.trim()}`));
    });
  });
  writeFileSync(ownerFile, String(process.pid));
  return {
    url,
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const done = new Promise((r) => proc.once("exit", r));
      // SIGTERM: redis flushes the append-only file and removes its socket and pid file
      proc.kill("SIGTERM");
      await done;
    },
  };
};

const stopPid = async (pid: number): Promise<void> => {
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
};

/** For tests: remove the data a stopped embedded Redis left. */
export const removeEmbeddedData = (dataDir: string): void => rmSync(join(dataDir, "redis"), { recursive: true, force: true });
