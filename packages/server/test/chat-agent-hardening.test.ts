/**
 * Hardening of the command-line agents and of caller-given base URLs (decisions §9, README of
 * src/chat "What an agent can still do"): option values cannot become flags, tool allowlists
 * take only `svc_*` names, the agent root is a private real directory, files are never written
 * through a symlink, an agent gets only its own key and a per-run MCP credential (never the
 * service token), timeouts are capped, and a caller's base_url learns nothing about what answers
 * there. Stand-in programs record how they were started (peers/agents.ts).
 */
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createTcpServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { chatPlugin } from "../src/chat/index.ts";
import { loadConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { mcpPlugin } from "../src/mcp/http.ts";
import { type AgentBench, makeAgentBench, printFixture } from "./peers/agents.ts";
import { post, readSse, type Service, startService } from "./peers/harness.ts";

const KEYS = {
  ANTHROPIC_API_KEY: "sk-ant-hardening-aaaaaaaaaaaaaaaa",
  OPENAI_API_KEY: "sk-proj-hardening-bbbbbbbbbbbbbbbb",
  GEMINI_API_KEY: "AIzaHardeningCCCCCCCCCCCCCCCCCCCC",
  DEEPSEEK_API_KEY: "sk-deepseek-hardening-dddddddddddd",
  ATOMSTUDIO_TOKEN: "service-token-hardening-eeeeeeeeee",
};

let bench: AgentBench;
let svc: Service;
const run = (body: Record<string, unknown>) =>
  post(`${svc.url}/api/chat/stream-cli-agent`, { prompt: "Make a 2x2x2 supercell", ...body });

beforeAll(async () => {
  bench = await makeAgentBench();
  svc = await startService({});
});
beforeEach(() => {
  for (const k of Object.keys(svc.env)) delete svc.env[k];
  Object.assign(svc.env, { PATH: bench.path, HOME: bench.root, ATOMSTUDIO_AGENT_ROOT: bench.root, ...KEYS });
});
afterAll(async () => {
  await svc.close();
  await bench.cleanup();
});

const STANDIN = {
  claude: "claude/text-only.jsonl",
  codex: "codex/exec-doc-sample.jsonl",
  gemini: "gemini/text-deltas.jsonl",
} as const;
type AgentId = keyof typeof STANDIN;

describe("option values never become options", () => {
  const refused: Array<[AgentId, Record<string, unknown>, string]> = [
    ["gemini", { model: "--approval-mode=yolo" }, "model"],
    ["gemini", { model: "-y" }, "model"],
    ["claude", { model: "--dangerously-skip-permissions" }, "model"],
    ["codex", { model: "--dangerously-bypass-approvals-and-sandbox" }, "model"],
    ["claude", { context: { available_tools: ["svc_structure_info,Bash(*)"] } }, "available_tools"],
    ["claude", { context: { available_tools: ["Bash"] } }, "available_tools"],
    ["codex", { context: { available_tools: ['svc_x"]\nsandbox_mode="danger-full-access'] } }, "available_tools"],
    ["gemini", { context: { available_tools: ["svc_slab", "run_shell_command"] } }, "available_tools"],
    ["gemini", { context: { available_tools: ["svc_"] } }, "available_tools"],
    ["claude", { timeout: Math.ceil(2 ** 31 / 1000) }, "timeout"],
    ["claude", { timeout: 100_000 }, "timeout"],
    ["codex", { max_turns: 100_000 }, "max_turns"],
  ];
  it.each(refused)("%s %j → 400 INVALID_AGENT_OPTION, nothing started", async (agent, body, option) => {
    await bench.install(agent, printFixture(STANDIN[agent]));
    await rm(join(bench.root, "invocation.json"), { force: true });
    const res = await run({ agent, ...body });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "INVALID_AGENT_OPTION", details: { option } });
    await expect(stat(join(bench.root, "invocation.json"))).rejects.toThrow();
  });

  const flagForms: Array<[AgentId, string]> = [
    ["claude", "--model=opus"],
    ["codex", "--model=gpt-5"],
    ["gemini", "--model=gemini-2.5-flash"],
  ];
  it.each(flagForms)("%s gets the model as one word %s", async (agent, word) => {
    await bench.install(agent, printFixture(STANDIN[agent]));
    const { events } = await readSse(
      await run({ agent, model: word.split("=")[1], context: { available_tools: ["svc_supercell"] } }),
    );
    expect(events.at(-1)).toBe("[DONE]");
    const { argv } = await bench.invocation();
    expect(argv).toContain(word);
    expect(argv).not.toContain("--model");
  });

  it("claude's allowed tools are one --allowedTools=… word of MCP tool names", async () => {
    await bench.install("claude", printFixture(STANDIN.claude));
    await readSse(await run({ agent: "claude", context: { available_tools: ["svc_supercell", "svc_slab"] } }));
    const { argv } = await bench.invocation();
    expect(argv).toContain("--allowedTools=mcp__atomstudio__svc_supercell,mcp__atomstudio__svc_slab");
  });
});

describe("the agent root is a private real directory", () => {
  let outer: string;
  beforeAll(async () => {
    outer = await mkdtemp(join(tmpdir(), "atomstudio-root-"));
  });
  afterAll(() => rm(outer, { recursive: true, force: true }));

  const refusedRoots: Array<[string, (dir: string) => Promise<void>]> = [
    [
      "a symlink to a directory",
      async (dir) => {
        await mkdir(`${dir}-target`, { mode: 0o700 });
        await symlink(`${dir}-target`, dir);
      },
    ],
    [
      "mode 0755",
      async (dir) => {
        await mkdir(dir);
        await chmod(dir, 0o755);
      },
    ],
    [
      "mode 0777",
      async (dir) => {
        await mkdir(dir);
        await chmod(dir, 0o777);
      },
    ],
    [
      "owned by another user",
      async (dir) => {
        await mkdir(dir, { mode: 0o700 });
        await chown(dir, 65534, 65534);
      },
    ],
    [
      "a regular file",
      async (dir) => {
        await writeFile(dir, "not a directory");
      },
    ],
  ];
  // Only root can give a directory away: without root that row is left out, and says so.
  const asRoot = process.getuid?.() === 0;
  if (!asRoot) console.warn("*** SKIPPING the agent-root row 'owned by another user': the tests do not run as root ***");
  const runnable = refusedRoots.filter(([name]) => asRoot || !name.includes("another user"));
  it.each(runnable)("%s → 503 AGENT_ROOT_UNSAFE, nothing started", async (name, make) => {
    const dir = join(outer, name.replace(/\W+/g, "-"));
    await make(dir);
    svc.env.ATOMSTUDIO_AGENT_ROOT = dir;
    await bench.install("claude", printFixture(STANDIN.claude));
    const res = await run({ agent: "claude" });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "AGENT_ROOT_UNSAFE" });
  });

  it("a missing root is created as a real directory with mode 0700", async () => {
    const dir = join(outer, "fresh", "root");
    svc.env.ATOMSTUDIO_AGENT_ROOT = dir;
    await bench.install("claude", printFixture(STANDIN.claude));
    const { events } = await readSse(await run({ agent: "claude" }));
    expect(events.at(-1)).toBe("[DONE]");
    const st = await lstat(dir);
    expect(st.isDirectory()).toBe(true);
    expect(st.mode & 0o777).toBe(0o700);
  });
});

describe("files in the working directory are never written through a symlink", () => {
  // The agents' own configuration goes to a fresh HOME per run; structure.json is the one file written in a working directory.
  const planted: Array<[AgentId, string]> = [
    ["claude", "structure.json"],
    ["codex", "structure.json"],
    ["gemini", "structure.json"],
  ];
  it.each(planted)("%s: a symlink planted at %s is replaced, its target untouched", async (agent, rel) => {
    const workdir = join(bench.root, `plant-${agent}-${rel.replace(/\W+/g, "-")}`);
    await mkdir(join(workdir, ".gemini"), { recursive: true });
    const victimDir = await mkdtemp(join(tmpdir(), "atomstudio-victim-"));
    const victim = join(victimDir, "victim.txt");
    await writeFile(victim, "precious");
    if (rel === ".gemini") {
      await rm(join(workdir, ".gemini"), { recursive: true });
      await symlink(victimDir, join(workdir, ".gemini"));
    } else await symlink(victim, join(workdir, rel));
    await bench.install(agent, printFixture(STANDIN[agent]));
    const { events } = await readSse(
      await run({ agent, context: { working_directory: workdir, structure_json: { "@class": "Structure", sites: [] } } }),
    );
    expect(events.at(-1)).toBe("[DONE]");
    expect(await readFile(victim, "utf8")).toBe("precious");
    await expect(stat(join(victimDir, "settings.json"))).rejects.toThrow();
    expect((await lstat(join(workdir, rel))).isSymbolicLink()).toBe(false);
    await rm(victimDir, { recursive: true, force: true });
  });
});

describe("an agent gets only its own key, never the service token", () => {
  const own: Array<[AgentId, string[]]> = [
    ["claude", ["ANTHROPIC_API_KEY"]],
    ["codex", ["OPENAI_API_KEY"]],
    ["gemini", ["GEMINI_API_KEY"]],
  ];
  it.each(own)("%s sees %j and no other secret", async (agent, mine) => {
    await bench.install(agent, printFixture(STANDIN[agent]));
    await readSse(await run({ agent }));
    const { env } = await bench.invocation();
    for (const [k, v] of Object.entries(KEYS)) {
      if (mine.includes(k)) expect(env[k], k).toBe(v);
      else {
        expect(env[k], k).toBeUndefined();
        expect(JSON.stringify(env), k).not.toContain(v);
      }
    }
  });
});

describe("with a service token, an agent reaches MCP with a per-run credential", () => {
  const TOKEN = "service-token-mcp-ffffffffffffffff";
  let app: FastifyInstance;
  let url: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    env = { PATH: bench.path, HOME: bench.root, ATOMSTUDIO_AGENT_ROOT: bench.root, ANTHROPIC_API_KEY: KEYS.ANTHROPIC_API_KEY };
    ({ app } = await buildApp({
      config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent", token: TOKEN }, {}),
      plugins: [chatPlugin({ env }), mcpPlugin],
    }));
    await app.listen({ host: "127.0.0.1", port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => app.close());

  // The stand-in calls tools/list on the MCP server its config names, with the header it names.
  const PROBE = `node -e '
const fs = require("fs");
const file = process.argv.find((a) => a.startsWith("--mcp-config=")).slice("--mcp-config=".length);
const server = JSON.parse(fs.readFileSync(file, "utf8")).mcpServers.atomstudio;
const auth = ((server.headers || {}).Authorization || "").replace(/\\$\\{(\\w+)\\}/g, (_, v) => process.env[v] || "");
fetch(server.url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: auth },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) })
  .then(async (r) => {
    fs.writeFileSync("mcp-probe.json", JSON.stringify({ status: r.status, url: server.url, auth, config: fs.readFileSync(file, "utf8"), body: await r.text() }));
    console.log(JSON.stringify({ type: "result", subtype: "success", is_error: false, result: "ok", usage: {} }));
  });
' -- "$@"`;

  it("the credential works during the run only, names only the allowed tools, and is not the service token", async () => {
    await bench.install("claude", PROBE);
    const res = await fetch(`${url}/api/chat/stream-cli-agent`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ agent: "claude", prompt: "list tools", context: { available_tools: ["svc_supercell"] } }),
    });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events.slice(-2)).toEqual([expect.objectContaining({ type: "done" }), "[DONE]"]);
    const probe = JSON.parse(await readFile(join(bench.root, "mcp-probe.json"), "utf8"));
    expect(probe.status).toBe(200);
    expect(probe.auth).toMatch(/^Bearer \S{20,}/);
    expect(probe.auth).not.toContain(TOKEN);
    expect(probe.config).not.toContain(TOKEN);
    const { env: seen } = await bench.invocation();
    expect(JSON.stringify(seen)).not.toContain(TOKEN);
    const tools = (JSON.parse(probe.body) as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name);
    expect(tools).toEqual(["svc_supercell"]);
    // revoked at the end of the run
    const after = await fetch(probe.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: probe.auth },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(after.status).toBe(401);
    // and it never opens the service's own /api
    const api = await fetch(`${url}/api/chat/providers`, { headers: { authorization: probe.auth } });
    expect(api.status).toBe(401);
  });
});

describe("a caller's base_url learns nothing about what answers there", () => {
  let closedPort: number;
  let banner: Server;
  let talker: ReturnType<typeof createHttpServer>;
  beforeAll(async () => {
    const closed = createTcpServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    // An SSH-like service: a banner, then it hangs up.
    banner = createTcpServer((s) => {
      s.end("SSH-2.0-OpenSSH_9.2p1 internal-host-7\r\n");
      s.on("finish", () => s.destroy());
    });
    await new Promise<void>((r) => banner.listen(0, "127.0.0.1", r));
    // An internal HTTP service that explains itself in its error body.
    talker = createHttpServer((_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "db password is hunter2 at 10.0.0.7" } }));
    });
    await new Promise<void>((r) => talker.listen(0, "127.0.0.1", r));
  });
  afterAll(async () => {
    talker.closeAllConnections(); // the SDK keeps its connection alive
    await new Promise((r) => banner.close(r));
    await new Promise((r) => talker.close(r));
  });

  const compat = (base: string) =>
    post(`${svc.url}/api/chat/stream-openai-compat`, {
      messages: [{ role: "user", content: "hi" }],
      provider: "custom",
      base_url: base,
      api_key: "sk-request-key-hardening-000000",
    });

  it("a closed port and a non-HTTP banner give the same short answer", async () => {
    const refused = await compat(`http://127.0.0.1:${closedPort}/v1`);
    const ssh = await compat(`http://127.0.0.1:${(banner.address() as AddressInfo).port}/v1`);
    const a = (await refused.json()) as Record<string, unknown>;
    const b = (await ssh.json()) as Record<string, unknown>;
    expect(refused.status).toBe(502);
    expect(ssh.status).toBe(502);
    expect(a).toEqual(b);
    expect(JSON.stringify(a)).not.toMatch(/ECONNREFUSED|SSH|OpenSSH|internal-host|HPE_|socket|parse/i);
  });

  it("an HTTP error at base_url: its status, never its body", async () => {
    const res = await compat(`http://127.0.0.1:${(talker.address() as AddressInfo).port}/v1`);
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body).toMatchObject({ code: "UPSTREAM_ERROR", details: { status: 500 } });
    expect(JSON.stringify(body)).not.toMatch(/hunter2|10\.0\.0\.7|db password/);
  });
});
