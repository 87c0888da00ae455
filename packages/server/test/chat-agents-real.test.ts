/**
 * `/api/chat/stream-cli-agent` with the real programs (Claude Code, Codex CLI, Gemini CLI at the
 * versions `scripts/setup-agents` pins into `.test-agents/`), each pointed at the scripted model
 * endpoint on loopback (peers/scripted-model.ts) through its own base-URL setting. The real
 * program starts, connects to this service's MCP server, calls svc_supercell, and the stream
 * carries the real tool output. Then what real programs do that stand-ins did not: a refused key,
 * turn limits, timeouts and cancellation with the process table checked for orphans.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio } from "../../studio/test/support.ts";
import { chatPlugin } from "../src/chat/index.ts";
import { loadConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { mcpPlugin } from "../src/mcp/http.ts";
import { studioPlugin } from "../src/studio/plugin.ts";
import { viewerPlugin } from "../src/viewer/plugin.ts";
import { cuCell } from "./helpers.ts";
import { post, readSse } from "./peers/harness.ts";
import { CONVERSATION, type ScriptedModel, startScriptedModel } from "./peers/scripted-model.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
export const AGENT_BIN = join(REPO, ".test-agents", "node_modules", ".bin");
const PROGRAMS = ["claude", "codex", "gemini"] as const;
const missing = PROGRAMS.filter((p) => !existsSync(join(AGENT_BIN, p)));
if (missing.length)
  console.warn(
    `\n*** SKIPPING the real command-line agent tests: ${missing.join(", ")} not installed in .test-agents/. Run scripts/setup-agents (needs the npm registry). ***\n`,
  );

const KEYS = {
  ANTHROPIC_API_KEY: "sk-ant-scripted-0123456789abcdef",
  OPENAI_API_KEY: "sk-scripted-openai-0123456789abcdef",
  GEMINI_API_KEY: "AIzaScriptedGeminiKey0123456789abcdef",
};

type Agent = (typeof PROGRAMS)[number];
type Ev = { type?: string; name?: string; text?: string; code?: string; output?: unknown; usage?: unknown };

let model: ScriptedModel;
let app: FastifyInstance;
let url: string;
let root: string;
const env: NodeJS.ProcessEnv = {};

const ask = (agent: Agent, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
  post(
    `${url}/api/chat/stream-cli-agent`,
    { agent, prompt: `${CONVERSATION.prompt}\n\n${JSON.stringify(CONVERSATION.arguments.structure)}`, timeout: 180, ...extra },
    signal,
  );

/** Pids of every process started from the test-only install of the agents (the programs and their children). */
const agentProcesses = (): number[] => {
  const out = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((l) => l.includes("/.test-agents/"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
};

const waitNoAgents = async (ms: number): Promise<number[]> => {
  const until = Date.now() + ms;
  let left = agentProcesses();
  while (left.length && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    left = agentProcesses();
  }
  return left;
};

describe.skipIf(missing.length > 0)("the real agents, end to end", { timeout: 150_000 }, () => {
  beforeAll(async () => {
    model = await startScriptedModel();
    root = join(await mkdtemp(join(tmpdir(), "atomstudio-real-agents-")), "root");
    Object.assign(env, {
      PATH: [AGENT_BIN, dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
      ATOMSTUDIO_AGENT_ROOT: root,
      ATOMSTUDIO_MAX_AGENTS: "3",
      ATOMSTUDIO_CLAUDE_BASE_URL: model.origin,
      ATOMSTUDIO_CODEX_BASE_URL: `${model.origin}/v1`,
      ATOMSTUDIO_GEMINI_BASE_URL: model.origin,
      ...KEYS,
    });
    ({ app } = await buildApp({
      config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent" }, {}),
      plugins: [viewerPlugin(), chatPlugin({ env }), mcpPlugin],
    }));
    await app.listen({ host: "127.0.0.1", port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await model?.close();
    if (root) await rm(dirname(root), { recursive: true, force: true });
  });

  it.each(PROGRAMS)("%s: connects to /mcp, calls svc_supercell, streams tool_use, tool_result, text, done", async (agent) => {
    model.mode = "conversation";
    const before = model.calls.length;
    const res = await ask(agent);
    const { events } = await readSse(res);
    const seen = events as Array<Ev | string>;
    const problems = seen.filter((e) => typeof e === "object" && e.type === "error" && e.code !== "AGENT_WARNING");
    expect(problems, JSON.stringify(seen, null, 1).slice(0, 4000)).toEqual([]);
    const kinds = seen.map((e) => (typeof e === "string" ? e : e.type)).filter((k) => k !== "thinking" && k !== "error");
    const diag = JSON.stringify(
      model.calls.slice(before).map((c) => ({
        p: c.path,
        tools: JSON.stringify(c.body.tools).slice(0, 600),
        input: JSON.stringify(c.body.input ?? c.body.contents ?? "").slice(-1500),
      })),
    );
    expect(kinds, `${JSON.stringify(seen).slice(0, 1500)}\n${diag}`).toEqual([
      "tool_use",
      "tool_result",
      "text",
      "done",
      "[DONE]",
    ]);
    const [use, result, text, done] = seen.filter(
      (e) => typeof e === "object" && e.type !== "thinking" && e.type !== "error",
    ) as Ev[];
    expect(use?.name).toBe("svc_supercell");
    // The real tool output: this service computed a 16-atom silicon cell.
    expect(JSON.stringify(result?.output)).toMatch(/Si16/);
    expect(JSON.stringify(result?.output)).toMatch(/"?n_atoms"?\\?"?:\s*16/);
    expect(text?.text).toContain(CONVERSATION.answer);
    expect(done?.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    expect((done?.usage as { output_tokens: number } | undefined)?.output_tokens).toBeGreaterThan(0);
    // The model saw the tool under the agent's name for it, and then this service's answer.
    const calls = model.calls.slice(before);
    expect(calls.some((c) => c.offeredTool !== null)).toBe(true);
    expect(calls.some((c) => c.toolResultText?.includes("Si16"))).toBe(true);
    // The run's HOME is gone afterwards.
    await new Promise((r) => setTimeout(r, 300));
    expect(await readdir(join(root, ".homes"))).toEqual([]);
  });

  it("the providers listing reports each program's own version and whether its key is set", async () => {
    const pins = JSON.parse(readFileSync(join(REPO, "tools", "test-agents", "package.json"), "utf8")).dependencies;
    const list = async () =>
      (
        (await (await fetch(`${url}/api/chat/providers`)).json()) as { providers: Array<Record<string, unknown>> }
      ).providers.filter((p) => p.type === "cli-agent");
    const rows: Array<[Agent, string, string]> = [
      ["claude", "@anthropic-ai/claude-code", "ANTHROPIC_API_KEY"],
      ["codex", "@openai/codex", "OPENAI_API_KEY"],
      ["gemini", "@google/gemini-cli", "GEMINI_API_KEY"],
    ];
    const signedIn = await list();
    for (const [id, pkg] of rows)
      expect(
        signedIn.find((p) => p.id === id),
        id,
      ).toMatchObject({
        available: true,
        version: pins[pkg],
        signed_in: true,
        has_api_key: true,
        status_message: null,
      });
    const saved = { ...KEYS };
    for (const [, , key] of rows) delete env[key];
    try {
      const signedOut = await list();
      for (const [id, , key] of rows)
        expect(
          signedOut.find((p) => p.id === id),
          id,
        ).toMatchObject({
          available: true,
          signed_in: false,
          status_message: expect.stringContaining(key),
        });
      const res = await ask("codex");
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ code: "AGENT_AUTH", error: expect.stringContaining("OPENAI_API_KEY") });
    } finally {
      Object.assign(env, saved);
    }
  });

  it.each(PROGRAMS)("%s: a refused key is 401 AGENT_AUTH naming the variable", async (agent) => {
    model.mode = "reject-key";
    try {
      const res = await ask(agent, { timeout: 120 });
      const body = res.status === 200 ? (await readSse(res)).events : await res.json();
      expect(res.status, JSON.stringify(body).slice(0, 2000)).toBe(401);
      expect(body).toMatchObject({ code: "AGENT_AUTH" });
      expect((body as { error: string }).error).toMatch(/_API_KEY/);
      expect(JSON.stringify(body)).not.toContain(Object.values(KEYS).join("|"));
    } finally {
      model.mode = "conversation";
    }
    expect(await waitNoAgents(5000)).toEqual([]);
  });

  it("codex: max_turns stops a model that keeps asking for tools", async () => {
    model.mode = "always-tool";
    try {
      const { events } = await readSse(await ask("codex", { max_turns: 2 }));
      const uses = (events as Ev[]).filter((e) => e.type === "tool_use");
      expect(uses.length).toBe(3);
      expect(events.slice(-3)).toEqual([
        expect.objectContaining({ type: "error", text: expect.stringContaining("max_turns (2") }),
        expect.objectContaining({ type: "done" }),
        "[DONE]",
      ]);
    } finally {
      model.mode = "conversation";
    }
    expect(await waitNoAgents(5000)).toEqual([]);
  });

  it.each(PROGRAMS)("%s: a timeout kills the real process group (no orphan in the process table)", async (agent) => {
    model.mode = "hang";
    try {
      const res = await ask(agent, { timeout: 8 });
      expect([200, 504]).toContain(res.status);
      const text = await res.text();
      expect(text).toContain("AGENT_TIMEOUT");
    } finally {
      model.mode = "conversation";
    }
    expect(await waitNoAgents(5000)).toEqual([]);
  });

  it.each(PROGRAMS)("%s: a client that goes away kills the real process group", async (agent) => {
    model.mode = "hang";
    const ctl = new AbortController();
    try {
      const calls = model.calls.length;
      // The stream has not opened yet (the model never answers): the client leaves while waiting.
      const pending = ask(agent, { timeout: 120 }, ctl.signal)
        .then((res) => res.text())
        .catch(() => undefined);
      const until = Date.now() + 60_000;
      while (model.calls.length === calls && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      expect(agentProcesses().length).toBeGreaterThan(0);
      ctl.abort();
      await pending;
    } finally {
      model.mode = "conversation";
    }
    expect(await waitNoAgents(5000)).toEqual([]);
  });
});

describe.skipIf(missing.length > 0)(
  "the real agents with a service token: the per-run MCP credential",
  { timeout: 150_000 },
  () => {
    const TOKEN = "service-token-real-agents-0123456789abcdef";
    let tokenModel: ScriptedModel;
    let tokenApp: FastifyInstance;
    let tokenUrl: string;
    let tokenRoot: string;
    beforeAll(async () => {
      tokenModel = await startScriptedModel();
      tokenRoot = join(await mkdtemp(join(tmpdir(), "atomstudio-real-agents-token-")), "root");
      const tokenEnv: NodeJS.ProcessEnv = {
        PATH: [AGENT_BIN, dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
        ATOMSTUDIO_AGENT_ROOT: tokenRoot,
        ATOMSTUDIO_CLAUDE_BASE_URL: tokenModel.origin,
        ATOMSTUDIO_CODEX_BASE_URL: `${tokenModel.origin}/v1`,
        ATOMSTUDIO_GEMINI_BASE_URL: tokenModel.origin,
        ...KEYS,
      };
      ({ app: tokenApp } = await buildApp({
        config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent", token: TOKEN }, {}),
        plugins: [viewerPlugin(), chatPlugin({ env: tokenEnv }), mcpPlugin],
      }));
      await tokenApp.listen({ host: "127.0.0.1", port: 0 });
      tokenUrl = `http://127.0.0.1:${(tokenApp.server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await tokenApp?.close();
      await tokenModel?.close();
      if (tokenRoot) await rm(dirname(tokenRoot), { recursive: true, force: true });
    });

    it.each(PROGRAMS)(
      "%s: reaches the tools with its own credential (only svc_supercell offered), never the token",
      async (agent) => {
        const before = tokenModel.calls.length;
        const res = await fetch(`${tokenUrl}/api/chat/stream-cli-agent`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({
            agent,
            prompt: `${CONVERSATION.prompt}\n\n${JSON.stringify(CONVERSATION.arguments.structure)}`,
            context: { available_tools: ["svc_supercell"] },
            timeout: 120,
          }),
        });
        const { events, raw } = await readSse(res);
        const result = (events as Ev[]).find((e) => e.type === "tool_result");
        expect(JSON.stringify(result?.output), raw.slice(0, 3000)).toMatch(/Si16/);
        expect(raw).not.toContain(TOKEN);
        const calls = tokenModel.calls.slice(before);
        // This service's tools as the model saw them: svc_supercell alone (the gateway serves only the allowed tools).
        const offered = new Set(calls.flatMap((c) => c.toolNames.filter((n) => /svc_/.test(n))));
        expect(
          [...offered].every((n) => n.endsWith("svc_supercell")),
          [...offered].join(","),
        ).toBe(true);
        expect(JSON.stringify(calls.map((c) => c.body))).not.toContain(TOKEN);
      },
    );
  },
);

describe.skipIf(missing.length > 0 || !hasChromium)("the real agents with the studio open", { timeout: 300_000 }, () => {
  let studioModel: ScriptedModel;
  let studioApp: FastifyInstance;
  let studioUrl: string;
  let studioRoot: string;
  let browser: Browser;
  beforeAll(async () => {
    await ensureStudioBuilt();
    studioModel = await startScriptedModel();
    // The model asks the studio what it shows, through this service's viewer tool.
    studioModel.script = { tool: "svc_structure_info", arguments: {}, answer: "The studio shows Cu4, space group 225." };
    studioRoot = join(await mkdtemp(join(tmpdir(), "atomstudio-real-agents-studio-")), "root");
    const studioEnv: NodeJS.ProcessEnv = {
      PATH: [AGENT_BIN, dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":"),
      ATOMSTUDIO_AGENT_ROOT: studioRoot,
      ATOMSTUDIO_CLAUDE_BASE_URL: studioModel.origin,
      ATOMSTUDIO_CODEX_BASE_URL: `${studioModel.origin}/v1`,
      ATOMSTUDIO_GEMINI_BASE_URL: studioModel.origin,
      ...KEYS,
    };
    ({ app: studioApp } = await buildApp({
      config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent" }, {}),
      plugins: [viewerPlugin(), chatPlugin({ env: studioEnv }), mcpPlugin, studioPlugin({ autoBuild: false })],
    }));
    await studioApp.listen({ host: "127.0.0.1", port: 0 });
    studioUrl = `http://127.0.0.1:${(studioApp.server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
    const page = await openStudio(browser, studioUrl);
    await page.evaluate((d) => window.atomstudio?.setStructure(d, { name: "Cu" }), cuCell as Record<string, unknown>);
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await studioApp?.close();
    await studioModel?.close();
    if (studioRoot) await rm(dirname(studioRoot), { recursive: true, force: true });
  });

  it.each(PROGRAMS)("%s: its svc_structure_info call is answered by the studio's viewer", async (agent) => {
    const res = await post(`${studioUrl}/api/chat/stream-cli-agent`, {
      agent,
      prompt: "What does the studio show?",
      timeout: 120,
    });
    const { events, raw } = await readSse(res);
    const kinds = (events as Array<Ev | string>)
      .map((e) => (typeof e === "string" ? e : e.type))
      .filter((k) => k !== "thinking" && k !== "error");
    expect(kinds, raw.slice(0, 3000)).toEqual(["tool_use", "tool_result", "text", "done", "[DONE]"]);
    const result = (events as Ev[]).find((e) => e.type === "tool_result");
    expect(result?.name).toBe("svc_structure_info");
    // What the studio page has loaded, as its viewer reported it over the relay.
    expect(JSON.stringify(result?.output)).toMatch(/Cu4/);
    expect(JSON.stringify(result?.output)).toMatch(/225/);
  });
});
