/**
 * `atomstudio mcp` (stdio), with the official TypeScript client starting the real command: the
 * same tools as the registry, every tool answering what its endpoint answers (structure tools in
 * process, service tools forwarded to a listening service), the error rows, the token on
 * forwarded calls, and nothing but JSON-RPC on stdout.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations } from "../src/operations/index.ts";
import { mcpTools } from "../src/registry/tools.ts";
import {
  ATOMSTUDIO_BIN,
  callEndpoint,
  callTool,
  ERROR_ROWS,
  expectSameAsEndpoint,
  mcpOperations,
  opByTool,
  type RunningService,
  SAMPLES,
  startService,
} from "./mcp-fixtures.ts";

/** The environment of the child: this one without any AtomStudio settings, plus `extra`. */
const childEnv = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("ATOMSTUDIO_")) env[k] = v;
  return { ...env, ...extra };
};

const stdioClient = async (args: string[], env: Record<string, string> = {}): Promise<Client> => {
  const client = new Client({ name: "atomstudio-test", version: "0" });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ATOMSTUDIO_BIN, "mcp", ...args],
    env: childEnv(env),
    stderr: "pipe",
  });
  await client.connect(transport);
  return client;
};

/** A service tool: one the stdio server forwards (the viewer's, today). */
const serviceTool = (): string => {
  const names = mcpOperations().map((op) => op.mcp as string);
  const tool = ["svc_selection", "svc_structure_info", "svc_screenshot", "svc_providers"].find((n) => names.includes(n));
  if (!tool) throw new Error("no service tool in the registry");
  return tool;
};

describe("MCP over stdio (atomstudio mcp)", () => {
  let svc: RunningService;
  let client: Client;
  beforeAll(async () => {
    svc = await startService();
    client = await stdioClient(["--url", svc.url]);
  });
  afterAll(async () => {
    await client?.close();
    await svc?.close();
  });

  it("lists exactly the registry's svc_ tools with the endpoints' request schemas", async () => {
    const { tools } = await client.listTools();
    const expected = mcpTools(operations);
    expect(tools.map((t) => t.name).sort()).toEqual(expected.map((t) => t.name).sort());
    for (const def of expected) expect(tools.find((t) => t.name === def.name)?.inputSchema).toEqual(def.input_schema);
  });

  it("answers every tool as its endpoint answers the same input (in process or forwarded)", async () => {
    for (const op of mcpOperations()) {
      const name = op.mcp as string;
      const args = SAMPLES[name] ?? {};
      const [result, endpoint] = await Promise.all([callTool(client, name, args), callEndpoint(svc.url, op, args)]);
      expectSameAsEndpoint(result, endpoint);
    }
  });

  it.each(ERROR_ROWS)("$tool fails as a tool error $code", async ({ tool, args, code }) => {
    const [result, endpoint] = await Promise.all([callTool(client, tool, args), callEndpoint(svc.url, opByTool(tool), args)]);
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { code: string }).code).toBe(code);
    expectSameAsEndpoint(result, endpoint);
  });
});

describe("atomstudio mcp: forwarding and its token", () => {
  const token = "stdio-forward-token-5678";
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ token });
  });
  afterAll(async () => svc?.close());

  it("forwards service tools with --token, and with ATOMSTUDIO_URL / ATOMSTUDIO_TOKEN", async () => {
    const tool = serviceTool();
    const endpoint = await callEndpoint(svc.url, opByTool(tool), {}, { authorization: `Bearer ${token}` });
    expect((endpoint.body as { code?: string }).code).not.toBe("UNAUTHORIZED");
    for (const [args, env] of [
      [["--url", svc.url, "--token", token], {}],
      [[], { ATOMSTUDIO_URL: svc.url, ATOMSTUDIO_TOKEN: token }],
    ] as const) {
      const client = await stdioClient([...args], { ...env });
      try {
        expectSameAsEndpoint(await callTool(client, tool, {}), endpoint);
      } finally {
        await client.close();
      }
    }
  });

  it("passes the service's refusal on when the token is missing; structure tools need no service", async () => {
    const client = await stdioClient(["--url", svc.url]);
    try {
      const r = await callTool(client, serviceTool(), {});
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ code: "UNAUTHORIZED" });
      const local = await callTool(client, "svc_add_atom", SAMPLES.svc_add_atom as Record<string, unknown>);
      expect(local.isError ?? false).toBe(false);
    } finally {
      await client.close();
    }
  });

  it("says SERVICE_UNAVAILABLE with the URL when no service listens there", async () => {
    const closed = await startService();
    const url = closed.url;
    await closed.close();
    const client = await stdioClient(["--url", url]);
    try {
      const r = await callTool(client, serviceTool(), {});
      expect(r.isError).toBe(true);
      expect(r.structuredContent).toMatchObject({ code: "SERVICE_UNAVAILABLE", details: { url } });
      expect((r.structuredContent as { error: string }).error).toContain("atomstudio serve");
    } finally {
      await client.close();
    }
  });
});

describe("atomstudio mcp: stdout carries MCP only", () => {
  it("writes nothing but JSON-RPC messages on stdout, logs (if any) on stderr", async () => {
    const child = spawn(process.execPath, [ATOMSTUDIO_BIN, "mcp", "--url", "http://127.0.0.1:9"], {
      env: childEnv({ ATOMSTUDIO_LOG_LEVEL: "trace" }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    const lines: string[] = [];
    const rl = createInterface({ input: child.stdout });
    const answered = new Promise<void>((resolve) => {
      rl.on("line", (line) => {
        lines.push(line);
        if (lines.some((l) => l.includes('"id":4'))) resolve();
      });
    });
    const send = (msg: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...msg })}\n`);
    send({
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    });
    send({ method: "notifications/initialized" });
    send({ id: 2, method: "tools/list" });
    send({ id: 3, method: "tools/call", params: { name: "svc_add_atom", arguments: SAMPLES.svc_add_atom } });
    send({ id: 4, method: "tools/call", params: { name: serviceTool(), arguments: {} } });
    await answered;
    child.stdin.end();
    await new Promise((resolve) => child.once("exit", resolve));
    expect(lines.length).toBeGreaterThanOrEqual(4);
    const messages = lines.map((l) => JSON.parse(l) as { jsonrpc: string; id?: number; result?: { isError?: boolean } });
    for (const m of messages) expect(m.jsonrpc).toBe("2.0");
    expect(messages.map((m) => m.id)).toEqual([1, 2, 3, 4]);
    expect(messages[2]?.result?.isError ?? false).toBe(false);
    expect(messages[3]?.result?.isError).toBe(true);
  });
});
