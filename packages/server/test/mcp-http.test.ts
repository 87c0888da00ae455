/**
 * MCP over streamable HTTP (`/mcp` on the service), with the official TypeScript client: the tool
 * list is the registry's, every tool answers what its endpoint answers, the interface's error rows
 * are tool errors with their codes, and the bearer token of decisions §7 guards /mcp.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations } from "../src/operations/index.ts";
import { mcpTools } from "../src/registry/tools.ts";
import {
  callEndpoint,
  callTool,
  ERROR_ROWS,
  expectSameAsEndpoint,
  mcpOperations,
  NEEDS_REDIS,
  opByTool,
  type RunningService,
  SAMPLES,
  startService,
} from "./mcp-fixtures.ts";

const connect = async (url: string, headers: Record<string, string> = {}): Promise<Client> => {
  const client = new Client({ name: "atomstudio-test", version: "0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
};

describe("MCP over streamable HTTP", () => {
  let svc: RunningService;
  let client: Client;
  beforeAll(async () => {
    svc = await startService();
    client = await connect(svc.url);
  });
  afterAll(async () => {
    await client?.close();
    await svc?.close();
  });

  it("lists exactly the registry's svc_ tools with the endpoints' request schemas", async () => {
    const { tools } = await client.listTools();
    const expected = mcpTools(operations);
    expect(tools.map((t) => t.name).sort()).toEqual(expected.map((t) => t.name).sort());
    expect(tools.length).toBeGreaterThanOrEqual(8);
    for (const def of expected) {
      const tool = tools.find((t) => t.name === def.name);
      expect(tool?.inputSchema).toEqual(def.input_schema);
      expect(tool?.description).toBe(def.description);
    }
    const supercell = tools.find((t) => t.name === "svc_supercell");
    expect(supercell?.inputSchema.required).toEqual(["structure", "scaling"]);
    expect((supercell?.inputSchema.properties?.structure as { properties?: object })?.properties).toHaveProperty("lattice");
  });

  it("answers every tool as its endpoint answers the same input", async () => {
    const called: string[] = [];
    for (const op of mcpOperations()) {
      const name = op.mcp as string;
      const args = SAMPLES[name] ?? {};
      const [result, endpoint] = await Promise.all([callTool(client, name, args), callEndpoint(svc.url, op, args)]);
      expectSameAsEndpoint(result, endpoint);
      if (SAMPLES[name] && !NEEDS_REDIS.has(name))
        expect(result.isError ?? false, `${name}: ${JSON.stringify(result.structuredContent)}`).toBe(false);
      called.push(name);
    }
    expect(called).toContain("svc_add_atom");
    expect(called).toContain("svc_merge");
  });

  it("returns the structure a tool built, as the endpoint's response fields", async () => {
    const r = await callTool(client, "svc_supercell", SAMPLES.svc_supercell as Record<string, unknown>);
    const sc = r.structuredContent as {
      n_atoms: number;
      scaling: number[];
      original_n_atoms: number;
      structure: { sites: unknown[] };
    };
    expect(sc.n_atoms).toBe(16);
    expect(sc.original_n_atoms).toBe(8);
    expect(sc.structure.sites).toHaveLength(16);
  });

  it.each(ERROR_ROWS)("$tool fails as a tool error $code", async ({ tool, args, code }) => {
    const [result, endpoint] = await Promise.all([callTool(client, tool, args), callEndpoint(svc.url, opByTool(tool), args)]);
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { code: string }).code).toBe(code);
    expect((endpoint.body as { code: string }).code).toBe(code);
    expectSameAsEndpoint(result, endpoint);
  });

  it("refuses an unknown tool with a protocol error", async () => {
    await expect(client.callTool({ name: "svc_nope", arguments: {} })).rejects.toThrow(/Unknown tool svc_nope/);
  });

  it("is stateless: GET and DELETE answer 405, a foreign browser origin 403", async () => {
    const get = await fetch(`${svc.url}/mcp`, { headers: { accept: "text/event-stream" } });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect(((await get.json()) as { code: string }).code).toBe("METHOD_NOT_ALLOWED");
    expect((await fetch(`${svc.url}/mcp`, { method: "DELETE" })).status).toBe(405);
    const init = {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        origin: "http://evil.example",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    };
    const foreign = await fetch(`${svc.url}/mcp`, init);
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { code: string }).code).toBe("FORBIDDEN_ORIGIN");
    const own = await fetch(`${svc.url}/mcp`, { ...init, headers: { ...init.headers, origin: svc.url } });
    expect(own.status).toBe(200);
  });
});

describe("MCP over streamable HTTP with a token (decisions §7)", () => {
  const token = "mcp-test-token-1234";
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ token });
  });
  afterAll(async () => svc?.close());

  it("refuses a client without the token", async () => {
    const client = new Client({ name: "atomstudio-test", version: "0" });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)))).rejects.toThrow();
    const raw = await fetch(`${svc.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(raw.status).toBe(401);
    expect(((await raw.json()) as { code: string }).code).toBe("UNAUTHORIZED");
  });

  it("refuses a wrong token", async () => {
    const client = new Client({ name: "atomstudio-test", version: "0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), {
      requestInit: { headers: { authorization: "Bearer wrong" } },
    });
    await expect(client.connect(transport)).rejects.toThrow();
  });

  it("accepts the token and serves the tools", async () => {
    const client = await connect(svc.url, { authorization: `Bearer ${token}` });
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("svc_add_atom");
      const args = SAMPLES.svc_add_atom as Record<string, unknown>;
      const [result, endpoint] = await Promise.all([
        callTool(client, "svc_add_atom", args),
        callEndpoint(svc.url, opByTool("svc_add_atom"), args, { authorization: `Bearer ${token}` }),
      ]);
      expectSameAsEndpoint(result, endpoint);
      expect((result.structuredContent as { added_index: number }).added_index).toBe(8);
    } finally {
      await client.close();
    }
  });
});
