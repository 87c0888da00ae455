/**
 * Running a command-line agent (decisions §7): a working directory inside the agent root, a
 * minimal environment, its own process group (killed whole on timeout, client disconnect or
 * exit), at most N at once, and its JSON lines mapped to AgentStreamEvent.
 *
 * The stream opens with the first event. Before that, failures are plain responses
 * (504 AGENT_TIMEOUT, 500 AGENT_CRASHED); after it, they are error events then `data: [DONE]`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir, realpath, rm, stat } from "node:fs/promises";
import { delimiter, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { createInterface } from "node:readline";
import { AtomStudioError } from "atomstudio-core";
import { z } from "zod";
import { redact, redactDeep } from "../secrets.ts";
import type { SseStream } from "../sse.ts";
import { type AgentStreamEvent, agentError, agentEvent } from "../types.ts";
import { ensureAgentRoot, privateDir, writeNoFollow } from "./files.ts";
import type { McpAccess } from "./mcp-gateway.ts";
import { AGENTS, agentById } from "./registry.ts";
import type { AgentInvocation, AgentSpec } from "./spec.ts";

export const DEFAULT_AGENT_ROOT = "/tmp/catgo-work";
/** Environment variable through which an agent gets its per-run MCP credential (never the service token). */
export const MCP_TOKEN_VAR = "ATOMSTUDIO_MCP_TOKEN";
/** Longest run a request may ask for, seconds (timers beyond 2^31 ms would fire at once). */
export const MAX_AGENT_TIMEOUT_S = 3600;
export const MAX_AGENT_TURNS = 200;
/** Folder of the agent root that holds each run's own HOME. */
const RUN_HOMES = ".homes";
/** MCP tool names an allowlist may hold: this service's tools only, so no agent-native tool (Bash, shell) can be named. */
const TOOL_NAME = /^svc_\w+$/;

export const AgentRequest = z.object({
  agent: z.string(),
  prompt: z.string().min(1),
  model: z.string().nullish(),
  context: z
    .object({
      structure_json: z.record(z.string(), z.unknown()).nullish(),
      working_directory: z.string().nullish(),
      available_tools: z.array(z.string()).nullish(),
    })
    .nullish(),
  timeout: z.number().int().positive().default(300),
  max_turns: z.number().int().positive().default(20),
});
export type AgentRequest = z.output<typeof AgentRequest>;

export const agentRoot = (env: NodeJS.ProcessEnv): string => resolve(env.ATOMSTUDIO_AGENT_ROOT || DEFAULT_AGENT_ROOT);

export const maxAgents = (env: NodeJS.ProcessEnv): number => {
  const n = Number(env.ATOMSTUDIO_MAX_AGENTS ?? 2);
  return Number.isInteger(n) && n > 0 ? n : 2;
};

/** The program's absolute path on PATH, or null. */
export const findOnPath = async (program: string, path: string | undefined): Promise<string | null> => {
  for (const dir of (path ?? "").split(delimiter).filter(Boolean)) {
    const candidate = join(dir, program);
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
};

const inside = (root: string, p: string): boolean => {
  const rel = relative(root, p);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
};

const badDir = (requested: string, root: string) =>
  new AtomStudioError(
    "INVALID_WORKING_DIRECTORY",
    `Working directory ${JSON.stringify(requested)} is outside the agent root ${root}`,
    { working_directory: requested, agent_root: root },
    400,
  );

const badOption = (option: string, message: string, extra: Record<string, unknown> = {}) =>
  new AtomStudioError("INVALID_AGENT_OPTION", message, { option, ...extra }, 400);

/**
 * Refuse values that could turn into options or tools of the agent (decisions §9): a model that
 * starts with `-` (`-y`, `--approval-mode=yolo`), tool names other than `svc_*`, and limits beyond
 * the caps.
 */
export const checkAgentOptions = (req: AgentRequest): void => {
  if (req.model?.startsWith("-")) throw badOption("model", `model ${JSON.stringify(req.model)} may not start with "-"`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (req.model && /[\u0000-\u001f\u007f]/.test(req.model)) throw badOption("model", "model may not contain control characters");
  for (const tool of req.context?.available_tools ?? [])
    if (!TOOL_NAME.test(tool))
      throw badOption(
        "available_tools",
        `available_tools may name only this service's tools (svc_…), not ${JSON.stringify(tool)}`,
      );
  if (req.timeout > MAX_AGENT_TIMEOUT_S)
    throw badOption("timeout", `timeout is at most ${MAX_AGENT_TIMEOUT_S} s`, { max: MAX_AGENT_TIMEOUT_S });
  if (req.max_turns > MAX_AGENT_TURNS)
    throw badOption("max_turns", `max_turns is at most ${MAX_AGENT_TURNS}`, { max: MAX_AGENT_TURNS });
};

/** Resolve (and create) the working directory; it must lie inside the agent root, symlinks included. */
export const resolveWorkdir = async (requested: string | null | undefined, root: string): Promise<string> => {
  const want = resolve(root, requested || root);
  if (!inside(root, want)) throw badDir(requested ?? "", root);
  // The runs' own HOMEs are the service's, not a place to work in.
  if (relative(root, want).split(/[\\/]/)[0] === RUN_HOMES) throw badDir(requested ?? "", root);
  await ensureAgentRoot(root);
  const realRoot = await realpath(root);
  // The deepest existing ancestor must already resolve inside the root (no escape through a symlink).
  let probe = want;
  for (;;) {
    try {
      if (!inside(realRoot, await realpath(probe))) throw badDir(requested ?? "", root);
      break;
    } catch (err) {
      if (err instanceof AtomStudioError) throw err;
      probe = dirname(probe);
    }
  }
  await mkdir(want, { recursive: true });
  const real = await realpath(want);
  if (!inside(realRoot, real)) throw badDir(requested ?? "", root);
  return real;
};

/**
 * PATH, HOME, the agent's own credentials and its per-run MCP credential; nothing else from the
 * service's environment (no other provider's key, never ATOMSTUDIO_TOKEN).
 */
export const agentEnv = (
  spec: AgentSpec,
  env: NodeJS.ProcessEnv,
  mcpToken: string | null,
  home: string,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv => {
  const out: NodeJS.ProcessEnv = {};
  for (const k of ["PATH", ...spec.keyVars]) if (env[k] !== undefined) out[k] = env[k];
  out.HOME = home;
  Object.assign(out, extra);
  if (mcpToken) out[MCP_TOKEN_VAR] = mcpToken;
  return out;
};

/** The run's own HOME under the agent root (`.homes/<agent>-<uuid>`, mode 0700). */
const makeRunHome = async (root: string, agent: string): Promise<string> =>
  privateDir(await privateDir(root, RUN_HOMES), `${agent}-${randomUUID()}`);

/** The agent's model endpoint: `ATOMSTUDIO_<AGENT>_BASE_URL` (gateways, and the tests' scripted endpoint). */
export const agentBaseUrl = (spec: AgentSpec, env: NodeJS.ProcessEnv): string | null =>
  env[`ATOMSTUDIO_${spec.id.toUpperCase()}_BASE_URL`] || null;

const authError = (spec: AgentSpec, said: string | null) =>
  new AtomStudioError(
    "AGENT_AUTH",
    `${spec.name} is not signed in or its key was refused${said ? ` (it said: ${said})` : ""}. ${spec.signIn}`,
    { agent: spec.id, variables: spec.keyVars },
    401,
  );

/** Counts running agents (refusing past the limit) and knows their processes. */
export class AgentLimiter {
  private active = 0;
  readonly processes = new Set<ChildProcess>();

  /** Kill every running agent's process group (service shutdown). */
  killAll(): void {
    for (const p of this.processes) killGroup(p, 500);
  }

  tryAcquire(max: number): (() => void) | null {
    if (this.active >= max) return null;
    this.active++;
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.active--;
      }
    };
  }
  get running(): number {
    return this.active;
  }
}

/** Kill the whole process group: SIGTERM, then SIGKILL after a grace period. */
export const killGroup = (child: ChildProcess, graceMs = 1500): void => {
  const pid = child.pid;
  if (!pid) return;
  const send = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      // already gone
    }
  };
  send("SIGTERM");
  setTimeout(() => send("SIGKILL"), graceMs).unref();
};

type RunItem =
  | { kind: "event"; event: AgentStreamEvent }
  | { kind: "exit"; code: number | null; signal: NodeJS.Signals | null; stderr: string }
  | { kind: "timeout" }
  | { kind: "spawn_error"; error: Error };

/** A minimal single-consumer async queue. */
class Queue<T> {
  private items: T[] = [];
  private waiter: ((v: T) => void) | null = null;
  push(item: T): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(item);
    } else this.items.push(item);
  }
  next(): Promise<T> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((r) => {
      this.waiter = r;
    });
  }
}

const STDERR_TAIL = 2000;
const LINE_PREVIEW = 200;

export interface AgentRunOptions {
  env: NodeJS.ProcessEnv;
  limiter: AgentLimiter;
  /** How this run reaches the service's MCP tools (a per-run credential when the service has a token). */
  mcp(tools: readonly string[] | null): Promise<McpAccess>;
  /** Secrets that no event or error may carry besides the agent's keys (the service token). */
  secrets?: readonly (string | undefined)[];
  /** Called with the child's pid once it runs (tests and diagnostics). */
  onSpawn?: (pid: number) => void;
}

const buildPrompt = (req: AgentRequest, hasStructure: boolean): string => {
  const notes: string[] = [];
  if (hasStructure) notes.push("The current structure (pymatgen dictionary) is in structure.json in the working directory.");
  notes.push("AtomStudio's tools are available through the MCP server named atomstudio.");
  if (req.context?.available_tools?.length) notes.push(`Available tools: ${req.context.available_tools.join(", ")}.`);
  return `${req.prompt}\n\n${notes.join(" ")}`;
};

/** Validate, start the agent and stream its events into `sse`. Throws an AtomStudioError for failures before the stream starts. */
export const streamAgent = async (req: AgentRequest, sse: SseStream, opts: AgentRunOptions): Promise<void> => {
  const { env } = opts;
  const spec = agentById(req.agent);
  if (!spec)
    throw new AtomStudioError(
      "UNKNOWN_AGENT",
      `Unknown agent ${JSON.stringify(req.agent)}; known: ${AGENTS.map((a) => a.id).join(", ")}`,
      { agent: req.agent, known: AGENTS.map((a) => a.id) },
      400,
    );
  const program = await findOnPath(spec.program, env.PATH);
  if (!program)
    throw new AtomStudioError(
      "AGENT_NOT_FOUND",
      `Agent program ${spec.program} not found on PATH`,
      { agent: spec.id, program: spec.program },
      404,
    );
  checkAgentOptions(req);
  const root = agentRoot(env);
  const workdir = await resolveWorkdir(req.context?.working_directory, root);
  // Agents run with a fresh HOME, so only key variables can sign them in: say so before starting one.
  if (!spec.signedIn(env)) throw authError(spec, null);
  const release = opts.limiter.tryAcquire(maxAgents(env));
  if (!release)
    throw new AtomStudioError(
      "AGENT_BUSY",
      `At most ${maxAgents(env)} agents run at once (ATOMSTUDIO_MAX_AGENTS); try again when one has finished`,
      { max_agents: maxAgents(env) },
      429,
    );
  let child: ChildProcess | null = null;
  let mcp: McpAccess | null = null;
  let home: string | null = null;
  try {
    mcp = await opts.mcp(req.context?.available_tools ?? null);
    home = await makeRunHome(root, spec.id);
    const secrets = [...spec.keyVars.map((k) => env[k]), ...(opts.secrets ?? []), mcp.token];
    const clean = (s: string) => redact(s, secrets, env);
    const structure = req.context?.structure_json;
    if (structure) await writeNoFollow(workdir, "structure.json", `${JSON.stringify(structure, null, 2)}\n`);
    const inv: AgentInvocation = {
      prompt: buildPrompt(req, Boolean(structure)),
      model: req.model || env[`ATOMSTUDIO_${spec.id.toUpperCase()}_MODEL`] || spec.defaultModel,
      maxTurns: req.max_turns,
      workdir,
      home,
      baseUrl: agentBaseUrl(spec, env),
      mcpUrl: mcp.url,
      mcpTokenVar: mcp.token ? MCP_TOKEN_VAR : null,
      availableTools: req.context?.available_tools ?? null,
    };
    await spec.prepare(inv);

    const queue = new Queue<RunItem>();
    const parser = spec.parser();
    const proc = spawn(program, spec.args(inv), {
      cwd: workdir,
      env: agentEnv(spec, env, mcp.token, home, spec.env?.(inv)),
      detached: true, // own process group, so the whole tree can be killed
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    opts.limiter.processes.add(proc);
    proc.once("exit", () => opts.limiter.processes.delete(proc));
    let stderr = "";
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (d: string) => {
      stderr = (stderr + d).slice(-STDERR_TAIL);
    });
    proc.on("error", (error) => queue.push({ kind: "spawn_error", error }));
    if (proc.pid) opts.onSpawn?.(proc.pid);

    const lines = createInterface({ input: proc.stdout!, crlfDelay: Number.POSITIVE_INFINITY });
    const linesDone = new Promise<void>((r) => lines.once("close", r));
    lines.on("line", (raw) => {
      const line = raw.trim();
      if (!line) return;
      let obj: unknown;
      try {
        obj = JSON.parse(line);
      } catch {
        obj = undefined;
      }
      if (!obj || typeof obj !== "object" || Array.isArray(obj)) {
        const preview = line.length > LINE_PREVIEW ? `${line.slice(0, LINE_PREVIEW)}…` : line;
        queue.push({
          kind: "event",
          event: agentError(clean(`${spec.name} printed a line that is not a JSON event: ${preview}`), "AGENT_BAD_OUTPUT"),
        });
        return;
      }
      let events: AgentStreamEvent[];
      try {
        events = parser.line(obj as Record<string, unknown>);
      } catch (err) {
        events = [agentError(clean(`Could not read a ${spec.name} event: ${(err as Error).message}`), "AGENT_BAD_OUTPUT")];
      }
      // Whatever the agent prints (tool output of `env`, say) passes through redaction.
      for (const event of events) queue.push({ kind: "event", event: redactDeep(event, clean) });
    });
    proc.on("exit", (code, signal) => {
      // Leftover grandchildren die with the agent.
      killGroup(proc, 0);
      void linesDone.then(() => queue.push({ kind: "exit", code, signal, stderr: clean(stderr.trim()) }));
    });
    const timer = setTimeout(() => {
      queue.push({ kind: "timeout" });
      killGroup(proc);
    }, req.timeout * 1000);
    const onAbort = () => killGroup(proc);
    sse.signal.addEventListener("abort", onAbort, { once: true });

    // An agent with no turn limit of its own (codex) is stopped past max_turns tool calls.
    let stoppedAtLimit = false;
    const heldWarnings: AgentStreamEvent[] = [];
    try {
      for (;;) {
        const item = await queue.next();
        if (sse.signal.aborted) return;
        if (item.kind === "event") {
          const ev = item.event;
          if (ev.type === "error" && spec.authFailure(ev.text ?? "")) {
            // Not signed in, or the key was refused: one clear answer instead of errors and a crash.
            killGroup(proc);
            const e = authError(spec, ev.text);
            if (!sse.started) throw e;
            sse.send(agentError(e.message, e.code));
            return sse.done();
          }
          if (stoppedAtLimit) continue;
          // Notices before anything else (an unknown model, a retry) do not open the stream: a
          // refused key that follows is still a plain 401.
          if (!sse.started && ev.type === "error" && ev.code === "AGENT_WARNING") {
            heldWarnings.push(ev);
            continue;
          }
          for (const w of heldWarnings.splice(0)) sse.send(w);
          sse.send(ev);
          if (!spec.ownTurnLimit && (parser.toolCalls?.() ?? 0) > req.max_turns) {
            stoppedAtLimit = true;
            sse.send(agentError(`${spec.name} reached max_turns (${req.max_turns} tool calls) and was stopped`, "AGENT_ERROR"));
            killGroup(proc);
          }
          continue;
        }
        if (item.kind === "spawn_error") {
          const e = new AtomStudioError(
            "AGENT_CRASHED",
            clean(`Could not start ${spec.name}: ${item.error.message}`),
            { agent: spec.id },
            500,
          );
          if (!sse.started) throw e;
          sse.send(agentError(e.message, e.code));
          return sse.done();
        }
        if (item.kind === "timeout") {
          const e = new AtomStudioError(
            "AGENT_TIMEOUT",
            `${spec.name} did not finish within ${req.timeout} s and was stopped`,
            { agent: spec.id, timeout: req.timeout },
            504,
          );
          if (!sse.started) throw e;
          sse.send(agentError(e.message, e.code));
          return sse.done();
        }
        // exit
        for (const w of heldWarnings.splice(0)) if (item.code === 0) sse.send(w);
        if (item.code === 0 || stoppedAtLimit) {
          sse.send(agentEvent("done", { usage: parser.usage() ?? { input_tokens: 0, output_tokens: 0 } }));
          return sse.done();
        }
        if (spec.authFailure(item.stderr)) {
          const e = authError(spec, item.stderr.split("\n").find((l) => spec.authFailure(l)) ?? null);
          if (!sse.started) throw e;
          sse.send(agentError(e.message, e.code));
          return sse.done();
        }
        const how = item.code !== null ? `exit code ${item.code}` : `signal ${item.signal}`;
        const e = new AtomStudioError(
          "AGENT_CRASHED",
          `${spec.name} exited with ${how}${item.stderr ? `: ${item.stderr.split("\n").slice(-5).join("\n")}` : ""}`,
          { agent: spec.id, exit_code: item.code, signal: item.signal },
          500,
        );
        if (!sse.started) throw e;
        sse.send(agentError(e.message, e.code));
        return sse.done();
      }
    } finally {
      clearTimeout(timer);
      sse.signal.removeEventListener("abort", onAbort);
      lines.close();
    }
  } finally {
    // The credential dies with the run; the slot is free once the agent has exited (a process
    // that never started frees it at once).
    mcp?.revoke();
    const runHome = home;
    const done = () => {
      release();
      if (runHome) void rm(runHome, { recursive: true, force: true });
    };
    if (child?.pid && child.exitCode === null && child.signalCode === null) {
      killGroup(child);
      child.once("exit", done);
    } else done();
  }
};
