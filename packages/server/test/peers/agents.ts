/**
 * Stand-in agent programs for the tests: small sh scripts put first on PATH under the agent's
 * program name. Each records how it was invoked (argv, cwd, environment) to `invocation.json`
 * in its working directory, then does what the test asked: print a recorded stream, hang,
 * crash, print garbage.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { FIXTURES } from "./serve.ts";

// Also copies the files of the run's own HOME (its configuration), which is removed after the run.
const RECORD = `node -e '
const fs = require("fs"), path = require("path");
const home = {};
const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { const p = path.join(d, e.name);
  if (e.isDirectory()) walk(p); else if (e.isFile()) home[path.relative(process.env.HOME, p)] = fs.readFileSync(p, "utf8"); } };
try { walk(process.env.HOME); } catch {}
fs.writeFileSync("invocation.json", JSON.stringify({ argv: process.argv.slice(1), cwd: process.cwd(), env: process.env, home }));
' -- "$@"`;

export interface Invocation {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** The files of the run's HOME, by path relative to it. */
  home: Record<string, string>;
}

export interface AgentBench {
  bin: string;
  root: string;
  /** PATH with the stand-ins first, then node and the system tools. */
  path: string;
  install(program: string, body: string): Promise<void>;
  uninstall(program: string): Promise<void>;
  invocation(workdir?: string): Promise<Invocation>;
  cleanup(): Promise<void>;
}

export const agentFixture = (rel: string): string => join(FIXTURES, "agents", rel);

export const makeAgentBench = async (): Promise<AgentBench> => {
  const base = await mkdtemp(join(tmpdir(), "atomstudio-agents-"));
  const bin = join(base, "bin");
  const root = join(base, "root");
  await mkdir(bin, { recursive: true });
  // The agent root must be private (mode 0700), as the runner insists.
  await mkdir(root, { recursive: true, mode: 0o700 });
  return {
    bin,
    root,
    path: [bin, dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
    async install(program, body) {
      const file = join(bin, program);
      await writeFile(file, `#!/bin/sh\n${RECORD}\n${body}\n`);
      await chmod(file, 0o755);
    },
    async uninstall(program) {
      await rm(join(bin, program), { force: true });
    },
    async invocation(workdir = root) {
      return JSON.parse(await readFile(join(workdir, "invocation.json"), "utf8")) as Invocation;
    },
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
};

/** Print a recorded stream line by line. */
export const printFixture = (rel: string, exit = 0): string => `cat '${agentFixture(rel)}'\nexit ${exit}`;

/** Whether a process is gone (a zombie waiting for a reaper counts as gone). */
export const processGone = async (pid: number): Promise<boolean> => {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
};

export const waitGone = async (pids: number[], ms = 5000): Promise<boolean> => {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if ((await Promise.all(pids.map(processGone))).every(Boolean)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
};

/** Hang after writing the pids of itself and a child (sleep) to pids.txt; optionally print first. */
export const hang = (firstLines = ""): string =>
  `${firstLines ? `cat '${agentFixture(firstLines)}'\n` : ""}sleep 60 &\necho "$$ $!" > pids.txt\nwait`;

export const readPids = async (workdir: string): Promise<number[]> => {
  for (let i = 0; i < 100; i++) {
    try {
      const txt = (await readFile(join(workdir, "pids.txt"), "utf8")).trim();
      if (txt.split(/\s+/).length === 2) return txt.split(/\s+/).map(Number);
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 30));
  }
  throw new Error("stand-in never wrote its pids");
};
