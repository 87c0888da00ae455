/** POST /api/chat/stream-cli-agent with stand-in programs on PATH that print the vendors' recorded streams. */
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AgentBench, agentFixture, hang, makeAgentBench, printFixture, readPids, waitGone } from "./peers/agents.ts";
import { post, readSse, readSseUntil, type Service, startService } from "./peers/harness.ts";

let bench: AgentBench;
let svc: Service;
const run = (body: Record<string, unknown>, signal?: AbortSignal) =>
  post(`${svc.url}/api/chat/stream-cli-agent`, { prompt: "Make a 2x2x2 supercell", ...body }, signal);

const ev = (type: string, fields: Record<string, unknown> = {}) => ({
  type,
  text: null,
  name: null,
  input: null,
  output: null,
  usage: null,
  ...fields,
});

beforeAll(async () => {
  bench = await makeAgentBench();
  svc = await startService({});
});
beforeEach(() => {
  for (const k of Object.keys(svc.env)) delete svc.env[k];
  Object.assign(svc.env, {
    PATH: bench.path,
    HOME: bench.root,
    ATOMSTUDIO_AGENT_ROOT: bench.root,
    ANTHROPIC_API_KEY: "sk-ant-agent-key-0123456789",
    OPENAI_API_KEY: "sk-openai-agent-key-0123456789",
    GEMINI_API_KEY: "AIza-gemini-agent-key-0123456789",
    DEEPSEEK_API_KEY: "sk-deepseek-not-for-agents-0123456789",
  });
});
afterAll(async () => {
  await svc.close();
  await bench.cleanup();
});

describe("recorded streams map to AgentStreamEvent", () => {
  it("claude: text only", async () => {
    await bench.install("claude", printFixture("claude/text-only.jsonl"));
    const res = await run({ agent: "claude" });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events).toEqual([
      ev("text", { text: "Silicon crystallizes in the diamond cubic structure (space group Fd-3m, No. 227)." }),
      ev("done", { usage: { input_tokens: 4, output_tokens: 27 } }),
      "[DONE]",
    ]);
  });

  it("claude: thinking, MCP tool use and its result", async () => {
    await bench.install("claude", printFixture("claude/mcp-tool-use.jsonl"));
    const { events } = await readSse(await run({ agent: "claude" }));
    expect(events.map((e) => (e as { type?: string }).type ?? e)).toEqual([
      "thinking",
      "tool_use",
      "tool_result",
      "text",
      "done",
      "[DONE]",
    ]);
    // the MCP prefix is dropped: tool names as the other agents report them
    expect(events[1]).toMatchObject({ name: "svc_supercell", input: { scaling: [2, 2, 2] } });
    expect(events[2]).toMatchObject({ name: "svc_supercell", output: expect.stringContaining('"n_atoms":16') });
    expect(events[4]).toMatchObject({ usage: { input_tokens: 6, output_tokens: 212 } });
  });

  it("claude: an MCP server that failed to connect is reported", async () => {
    const line = JSON.stringify({
      type: "system",
      subtype: "init",
      session_id: "s",
      tools: [],
      mcp_servers: [{ name: "atomstudio", status: "failed" }],
    });
    await bench.install("claude", `echo '${line}'\ncat '${agentFixture("claude/text-only.jsonl")}' | tail -n 2`);
    const { events } = await readSse(await run({ agent: "claude" }));
    expect(events[0]).toMatchObject({ type: "error", code: "AGENT_WARNING", text: expect.stringContaining("failed") });
    expect(events.slice(-2)).toEqual([expect.objectContaining({ type: "done" }), "[DONE]"]);
  });

  const init = (status: string) =>
    JSON.stringify({
      type: "system",
      subtype: "init",
      session_id: "s",
      tools: [],
      mcp_servers: [{ name: "atomstudio", status }],
    });
  const mcpStatusRows: Array<[string, string[], number]> = [
    // Claude Code connects in the background: `pending` first (what the real program prints), then connected.
    ["pending, then connected", ["pending", "connected"], 0],
    ["pending only", ["pending"], 0],
    ["failed", ["failed"], 1],
    ["needs-auth, said twice", ["needs-auth", "needs-auth"], 1],
    ["pending, then failed twice", ["pending", "failed", "failed"], 1],
  ];
  it.each(mcpStatusRows)("claude: MCP status %s → %i warning(s)", async (_name, statuses, warnings) => {
    const lines = statuses.map((s) => `echo '${init(s)}'`).join("\n");
    await bench.install("claude", `${lines}\ncat '${agentFixture("claude/text-only.jsonl")}' | tail -n 2`);
    const { events } = await readSse(await run({ agent: "claude" }));
    const warned = events.filter((e) => (e as { code?: string }).code === "AGENT_WARNING");
    expect(warned).toHaveLength(warnings);
    expect(events.filter((e) => (e as { code?: string }).code === "AGENT_ERROR")).toEqual([]);
    expect(events.slice(-2)).toEqual([expect.objectContaining({ type: "done" }), "[DONE]"]);
  });

  it("claude: the real program's 'Not logged in' (exit 1) is 401 AGENT_AUTH naming the variable, not AGENT_CRASHED", async () => {
    await bench.install("claude", printFixture("claude/not-logged-in.jsonl", 1));
    const res = await run({ agent: "claude" });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { code: string; error: string };
    expect(body.code).toBe("AGENT_AUTH");
    expect(body.error).toContain("Not logged in");
    expect(body.error).toContain("ANTHROPIC_API_KEY");
  });

  it("no key variable at all: 401 AGENT_AUTH before anything starts", async () => {
    for (const [agent, key] of [
      ["claude", "ANTHROPIC_API_KEY"],
      ["codex", "OPENAI_API_KEY"],
      ["gemini", "GEMINI_API_KEY"],
    ] as const) {
      await bench.install(agent, printFixture("claude/text-only.jsonl"));
      delete svc.env[key];
      const res = await run({ agent });
      expect(res.status, agent).toBe(401);
      expect(await res.json()).toMatchObject({ code: "AGENT_AUTH", error: expect.stringContaining(key) });
    }
  });

  it("claude: a max-turns result is an error event, then done", async () => {
    await bench.install("claude", printFixture("claude/max-turns.jsonl"));
    const { events } = await readSse(await run({ agent: "claude" }));
    expect(events.map((e) => (e as { type?: string }).type ?? e)).toEqual(["tool_use", "tool_result", "error", "done", "[DONE]"]);
    expect(events[1]).toMatchObject({ name: "Read" });
    expect(events[2]).toMatchObject({ code: "AGENT_ERROR", text: expect.stringContaining("error_max_turns") });
  });

  it("codex: the sample stream of the exec documentation", async () => {
    await bench.install("codex", printFixture("codex/exec-doc-sample.jsonl"));
    const { events } = await readSse(await run({ agent: "codex" }));
    expect(events).toEqual([
      ev("thinking", { text: "**Searching for README files**" }),
      ev("tool_use", { name: "shell", input: { command: "bash -lc ls" } }),
      ev("tool_result", {
        name: "shell",
        output: expect.objectContaining({ exit_code: 0, output: expect.stringContaining("AGENTS.md") }),
      }),
      ev("thinking", { text: "**Checking repository root for README**" }),
      ev("text", { text: "Yep — there’s a `README.md` in the repository root." }),
      ev("done", { usage: { input_tokens: 24763, output_tokens: 122 } }),
      "[DONE]",
    ]);
  });

  it("codex: an MCP tool call", async () => {
    await bench.install("codex", printFixture("codex/mcp-tool-call.jsonl"));
    const { events } = await readSse(await run({ agent: "codex" }));
    expect(events.slice(1, 3)).toEqual([
      ev("tool_use", { name: "svc_supercell", input: { scaling: [2, 2, 2] } }),
      ev("tool_result", { name: "svc_supercell", output: { n_atoms: 16, formula: "Si16" } }),
    ]);
    expect(events.at(-2)).toEqual(ev("done", { usage: { input_tokens: 5120, output_tokens: 64 } }));
  });

  it("codex: a failed turn (non-zero exit) gives error events and AGENT_CRASHED", async () => {
    await bench.install("codex", printFixture("codex/turn-failed.jsonl", 1));
    const res = await run({ agent: "codex" });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events.map((e) => (e as { code?: string }).code ?? e)).toEqual([
      "AGENT_ERROR",
      "AGENT_ERROR",
      "AGENT_CRASHED",
      "[DONE]",
    ]);
  });

  it("gemini: assistant deltas and the result's stats", async () => {
    await bench.install("gemini", printFixture("gemini/text-deltas.jsonl"));
    const { events } = await readSse(await run({ agent: "gemini" }));
    expect(events).toEqual([
      ev("text", { text: "Rocksalt NaCl has" }),
      ev("text", { text: " space group Fm-3m (No. 225)." }),
      ev("done", { usage: { input_tokens: 50, output_tokens: 50 } }),
      "[DONE]",
    ]);
  });

  it("gemini: tool use, a successful and a failed tool result", async () => {
    await bench.install("gemini", printFixture("gemini/tool-use.jsonl"));
    const { events } = await readSse(await run({ agent: "gemini" }));
    expect(events.slice(0, 4)).toEqual([
      ev("tool_use", { name: "read_file", input: { file_path: "structure.json" } }),
      ev("tool_result", { name: "read_file", output: '{"@module": "pymatgen.core.structure"}' }),
      ev("tool_use", { name: "svc_supercell", input: { scaling: [2, 2, 2] } }),
      ev("tool_result", { name: "svc_supercell", output: { error: "scaling factor out of range", type: "MCP_TOOL_ERROR" } }),
    ]);
    expect(events.at(-2)).toEqual(ev("done", { usage: { input_tokens: 150, output_tokens: 100 } }));
  });

  it("gemini: warning and turn-limit result become error events", async () => {
    await bench.install("gemini", printFixture("gemini/turn-limit.jsonl"));
    const { events } = await readSse(await run({ agent: "gemini" }));
    expect(events.map((e) => (e as { code?: string; type?: string }).code ?? (e as { type?: string }).type ?? e)).toEqual([
      "AGENT_WARNING",
      "AGENT_ERROR",
      "done",
      "[DONE]",
    ]);
  });
});

describe("invocation", () => {
  it("claude: print mode, stream-json, turns, model, MCP config file, structure.json, minimal environment", async () => {
    await bench.install("claude", printFixture("claude/text-only.jsonl"));
    const structure = { "@module": "pymatgen.core.structure", "@class": "Structure", sites: [] };
    const { events } = await readSse(
      await run({
        agent: "claude",
        model: "opus",
        max_turns: 7,
        context: { structure_json: structure, available_tools: ["svc_supercell"] },
      }),
    );
    expect(events.at(-1)).toBe("[DONE]");
    const inv = await bench.invocation();
    const a = inv.argv;
    expect(a.slice(0, 3)).toEqual(["-p", "--output-format=stream-json", "--verbose"]);
    expect(a).toContain("--max-turns=7");
    expect(a).toContain("--model=opus");
    expect(a).toContain("--allowedTools=mcp__atomstudio__svc_supercell");
    expect(a.at(-1)).toContain("Make a 2x2x2 supercell");
    const mcpFile = (a.find((w) => w.startsWith("--mcp-config=")) as string).slice("--mcp-config=".length);
    // The configuration lives in the run's own HOME under the agent root, not in the working directory.
    expect(inv.env.HOME).toMatch(new RegExp(`^${bench.root}/\\.homes/claude-[0-9a-f-]{36}$`));
    expect(mcpFile).toBe(join(inv.env.HOME as string, "atomstudio-mcp.json"));
    const mcp = JSON.parse(inv.home["atomstudio-mcp.json"] as string);
    expect(mcp.mcpServers.atomstudio).toEqual({ type: "http", url: `${svc.url}/mcp` });
    expect(JSON.parse(await readFile(join(inv.cwd, "structure.json"), "utf8"))).toEqual(structure);
    expect(inv.env.ANTHROPIC_API_KEY).toBe("sk-ant-agent-key-0123456789");
    expect(inv.env.DEEPSEEK_API_KEY).toBeUndefined();
    expect(inv.env.ATOMSTUDIO_AGENT_ROOT).toBeUndefined();
  });

  it("codex: exec --json with the MCP server given by -c, vendor default model", async () => {
    await bench.install("codex", printFixture("codex/exec-doc-sample.jsonl"));
    await readSse(await run({ agent: "codex" }));
    const { argv, env, home } = await bench.invocation();
    expect(argv.slice(0, 2)).toEqual(["exec", "--json"]);
    expect(argv).toContain("--skip-git-repo-check");
    expect(argv).toContain("--model=gpt-5-codex");
    expect(env.CODEX_HOME).toBe(join(env.HOME as string, ".codex"));
    expect(home[join(".codex", "config.toml")]).toBe(
      [
        "# Written by AtomStudio for one run of `codex exec`; removed when the run ends.",
        "",
        "[mcp_servers.atomstudio]",
        `url = "${svc.url}/mcp"`,
        'default_tools_approval_mode = "approve"',
        "",
      ].join("\n"),
    );
    expect(env.ANTHROPIC_API_KEY).toBeUndefined();
  });

  it("gemini: stream-json, .gemini/settings.json with the MCP server and the turn limit", async () => {
    await bench.install("gemini", printFixture("gemini/text-deltas.jsonl"));
    await mkdir(join(bench.root, "project"), { recursive: true });
    await readSse(
      await run({ agent: "gemini", max_turns: 5, context: { working_directory: "project", available_tools: ["svc_slab"] } }),
    );
    const inv = await bench.invocation(join(bench.root, "project"));
    expect(inv.argv.slice(0, 2)).toEqual(["--skip-trust", "--output-format=stream-json"]);
    expect(inv.argv).toContain("--model=gemini-2.5-pro");
    expect(inv.argv.at(-1)).toMatch(/^--prompt=Make a 2x2x2 supercell/);
    const settings = JSON.parse(inv.home[join(".gemini", "settings.json")] as string);
    expect(settings).toEqual({
      mcpServers: { atomstudio: { httpUrl: `${svc.url}/mcp`, trust: true, includeTools: ["svc_slab"] } },
      model: { maxSessionTurns: 5 },
      security: { auth: { selectedType: "gemini-api-key" } },
    });
  });
});

describe("failures", () => {
  it("an agent that hangs without output: 504 AGENT_TIMEOUT and its whole process group is gone", async () => {
    await bench.install("claude", hang());
    const t0 = Date.now();
    const res = await run({ agent: "claude", timeout: 1 });
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ code: "AGENT_TIMEOUT" });
    expect(Date.now() - t0).toBeLessThan(6000);
    const pids = await readPids(bench.root);
    expect(await waitGone(pids)).toBe(true);
  });

  it("an agent that hangs after output: error event AGENT_TIMEOUT, [DONE], process group gone", async () => {
    await bench.install("gemini", hang("gemini/text-deltas.jsonl"));
    const res = await run({ agent: "gemini", timeout: 1 });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events.slice(-2)).toEqual([
      expect.objectContaining({ type: "error", code: "AGENT_TIMEOUT", error: expect.any(String) }),
      "[DONE]",
    ]);
    expect(await waitGone(await readPids(bench.root))).toBe(true);
  });

  it("a crash before any output: 500 AGENT_CRASHED with the exit code", async () => {
    await bench.install("codex", "echo 'fatal: could not load config' >&2\nexit 3");
    const res = await run({ agent: "codex" });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { code: string; error: string; details: { exit_code: number } };
    expect(body.code).toBe("AGENT_CRASHED");
    expect(body.details.exit_code).toBe(3);
    expect(body.error).toContain("could not load config");
  });

  it("a program that cannot start: 500 AGENT_CRASHED, and its slot is freed", async () => {
    svc.env.ATOMSTUDIO_MAX_AGENTS = "1";
    await writeFile(join(bench.bin, "gemini"), "#!/nonexistent/interpreter\n");
    await chmod(join(bench.bin, "gemini"), 0o755);
    for (let i = 0; i < 2; i++) {
      const res = await run({ agent: "gemini" });
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({ code: "AGENT_CRASHED", error: expect.stringContaining("Could not start") });
    }
  });

  it("garbage output: error events, no crash, then done", async () => {
    await bench.install(
      "claude",
      `echo 'Welcome to the agent!'\necho '{"type": "assistant", "mess'\necho '[1,2,3]'\ncat '${agentFixture("claude/text-only.jsonl")}'`,
    );
    const res = await run({ agent: "claude" });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events.slice(0, 3)).toEqual([
      expect.objectContaining({
        type: "error",
        code: "AGENT_BAD_OUTPUT",
        text: expect.stringContaining("Welcome to the agent!"),
      }),
      expect.objectContaining({ type: "error", code: "AGENT_BAD_OUTPUT" }),
      expect.objectContaining({ type: "error", code: "AGENT_BAD_OUTPUT" }),
    ]);
    expect(events.slice(-2)).toEqual([expect.objectContaining({ type: "done" }), "[DONE]"]);
  });

  it("program not on PATH: 404 AGENT_NOT_FOUND; unknown agent: 400 UNKNOWN_AGENT", async () => {
    await bench.uninstall("gemini");
    const res = await run({ agent: "gemini" });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "AGENT_NOT_FOUND" });
    const unknown = await run({ agent: "aider" });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ code: "UNKNOWN_AGENT" });
  });

  it("a working directory outside the agent root is refused (absolute, .., symlink)", async () => {
    await bench.install("claude", printFixture("claude/text-only.jsonl"));
    await symlink("/etc", join(bench.root, "escape")).catch(() => undefined);
    for (const working_directory of ["/etc", "../outside", "sub/../../outside", "escape", "escape/sub", ".homes", ".homes/x"]) {
      const res = await run({ agent: "claude", context: { working_directory } });
      expect(res.status, working_directory).toBe(400);
      expect(await res.json()).toMatchObject({ code: "INVALID_WORKING_DIRECTORY" });
    }
    const inside = await run({ agent: "claude", context: { working_directory: join(bench.root, "a", "b") } });
    expect(inside.status).toBe(200);
    await inside.text();
  });

  it("at most ATOMSTUDIO_MAX_AGENTS at once (429 AGENT_BUSY); a client disconnect kills the agent", async () => {
    svc.env.ATOMSTUDIO_MAX_AGENTS = "1";
    await bench.install("claude", hang("claude/text-only.jsonl"));
    const ctl = new AbortController();
    const first = await run({ agent: "claude", timeout: 30 }, ctl.signal);
    expect(first.status).toBe(200);
    await readSseUntil(first, 1);
    const pids = await readPids(bench.root);
    const busy = await run({ agent: "codex" });
    expect(busy.status).toBe(429);
    expect(await busy.json()).toMatchObject({ code: "AGENT_BUSY" });
    ctl.abort();
    expect(await waitGone(pids)).toBe(true);
    await bench.install("codex", printFixture("codex/exec-doc-sample.jsonl"));
    // the slot is free again once the killed agent has exited
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      const res = await run({ agent: "codex" });
      status = res.status;
      await res.text();
      if (status !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
  });
});
