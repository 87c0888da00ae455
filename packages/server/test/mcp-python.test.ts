/**
 * The Python `mcp` SDK as a second, independent client (test/oracle/mcp_client.py): over
 * streamable HTTP (with the token) and over stdio (`atomstudio mcp`) it sees the registry's tools
 * and gets what the HTTP endpoint answers for svc_add_atom, and a tool error for a bad element.
 */
import { join } from "node:path";
import { runPython } from "atomstudio-testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations } from "../src/operations/index.ts";
import { mcpTools } from "../src/registry/tools.ts";
import {
  ATOMSTUDIO_BIN,
  callEndpoint,
  opByTool,
  type RunningService,
  SAMPLES,
  SERVER_ROOT,
  startService,
} from "./mcp-fixtures.ts";

interface PyResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { type: string; text?: string }[];
}
interface PySession {
  tools: { name: string; inputSchema: Record<string, unknown> }[];
  results: PyResult[];
}
interface PyOut {
  http: PySession;
  stdio: PySession;
  http_without_token?: string;
}

describe("MCP with the Python mcp client", () => {
  const token = "python-client-token-9012";
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService({ token });
  });
  afterAll(async () => svc?.close());

  it("lists the tools and calls svc_add_atom over streamable HTTP and stdio", async () => {
    const good = SAMPLES.svc_add_atom as Record<string, unknown>;
    const bad = { ...good, element: "Xx" };
    const auth = { authorization: `Bearer ${token}` };
    const [okEndpoint, badEndpoint] = await Promise.all([
      callEndpoint(svc.url, opByTool("svc_add_atom"), good, auth),
      callEndpoint(svc.url, opByTool("svc_add_atom"), bad, auth),
    ]);
    expect(okEndpoint.status).toBe(200);
    expect(badEndpoint.status).toBe(400);

    const env: Record<string, string> = { PATH: process.env.PATH ?? "" };
    const out = await runPython<PyOut>(
      join(SERVER_ROOT, "test/oracle/mcp_client.py"),
      {
        http_url: `${svc.url}/mcp`,
        token,
        stdio: { command: process.execPath, args: [ATOMSTUDIO_BIN, "mcp", "--url", svc.url, "--token", token], env },
        calls: [
          { name: "svc_add_atom", arguments: good },
          { name: "svc_add_atom", arguments: bad },
        ],
      },
      { timeoutMs: 120_000 },
    );

    expect(out.http_without_token).toMatch(/^refused/);
    const expected = mcpTools(operations);
    for (const session of [out.http, out.stdio]) {
      expect(session.tools.map((t) => t.name).sort()).toEqual(expected.map((t) => t.name).sort());
      for (const def of expected) expect(session.tools.find((t) => t.name === def.name)?.inputSchema).toEqual(def.input_schema);
      const [ok, err] = session.results as [PyResult, PyResult];
      expect(ok.isError ?? false).toBe(false);
      expect(ok.structuredContent).toEqual(okEndpoint.body);
      expect(JSON.parse(ok.content[0]?.text ?? "null")).toEqual(okEndpoint.body);
      expect(err.isError).toBe(true);
      expect(err.structuredContent).toEqual(badEndpoint.body);
      expect(err.structuredContent?.code).toBe("INVALID_ELEMENT");
    }
  });
});
