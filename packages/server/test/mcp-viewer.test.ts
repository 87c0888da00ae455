/**
 * Viewer tools through MCP. With a real studio page in headless Chromium (the studio's test
 * support): svc_structure_info and svc_screenshot over streamable HTTP, and svc_structure_info
 * forwarded by the stdio server, each compared with the HTTP endpoint. Without a browser too: a
 * fake studio on the relay WebSocket answers a screenshot, which must come back as MCP image
 * content.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FastifyInstance } from "fastify";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureStudioBuilt, fakeStudio, hasChromium, imageStats, launchBrowser, openStudio } from "../../studio/test/support.ts";
import { loadConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { mcpPlugin } from "../src/mcp/http.ts";
import type { Plugin } from "../src/plugins.ts";
import { studioPlugin } from "../src/studio/plugin.ts";
import { viewerPlugin } from "../src/viewer/plugin.ts";
import { ATOMSTUDIO_BIN, callEndpoint, callTool, expectSameAsEndpoint, nacl, opByTool } from "./mcp-fixtures.ts";

const PNG_1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** A service with the viewer relay and MCP (and the studio page when asked). */
const start = async (withStudio: boolean): Promise<{ app: FastifyInstance; url: string }> => {
  const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent" }, {});
  const plugins: Plugin[] = [viewerPlugin(), mcpPlugin];
  if (withStudio) plugins.push(studioPlugin({ autoBuild: false }));
  const { app } = await buildApp({ config, plugins });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
};

const httpClient = async (url: string): Promise<Client> => {
  const client = new Client({ name: "atomstudio-test", version: "0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  return client;
};

describe("viewer tools through MCP, fake studio on the relay WebSocket", () => {
  it("returns a relayed screenshot as structured content and as MCP image content", async () => {
    const svc = await start(false);
    const studio = await fakeStudio(svc.url, (command) =>
      command === "screenshot" ? { ok: true, result: { image: PNG_1x1, format: "png", width: 1, height: 1 } } : undefined,
    );
    const client = await httpClient(svc.url);
    try {
      const args = { width: 1, height: 1 };
      const result = await callTool(client, "svc_screenshot", args);
      expect(result.isError ?? false).toBe(false);
      expect(result.content).toContainEqual({ type: "image", data: PNG_1x1, mimeType: "image/png" });
      expect(result.structuredContent).toMatchObject({ image: PNG_1x1, format: "png", width: 1, height: 1 });
      const text = JSON.parse((result.content[0] as { text: string }).text);
      expect(text.image).not.toContain(PNG_1x1);
      expectSameAsEndpoint(result, await callEndpoint(svc.url, opByTool("svc_screenshot"), args));
    } finally {
      await client.close();
      studio.close();
      await svc.app.close();
    }
  });

  it("names a studio with X-Viewer-Client or ?client_id on /mcp, and with --viewer-client on stdio", async () => {
    const svc = await start(false);
    const selecting = (index: number) => (command: string) =>
      command === "get_selection" ? { ok: true, result: { selected_indices: [index] } } : undefined;
    const alpha = await fakeStudio(svc.url, selecting(1), { clientId: "alpha" });
    const beta = await fakeStudio(svc.url, selecting(2), { clientId: "beta" });
    const selected = async (client: Client) =>
      ((await callTool(client, "svc_selection", {})).structuredContent as { selected_indices: number[] }).selected_indices;
    const clients: Client[] = [];
    const http = async (path: string, headers: Record<string, string> = {}) => {
      const c = new Client({ name: "atomstudio-test", version: "0" });
      await c.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}${path}`), { requestInit: { headers } }));
      clients.push(c);
      return c;
    };
    try {
      // Unnamed: the most recently active studio (beta connected last).
      expect(await selected(await http("/mcp"))).toEqual([2]);
      expect(await selected(await http("/mcp", { "x-viewer-client": "alpha" }))).toEqual([1]);
      expect(await selected(await http("/mcp?client_id=alpha"))).toEqual([1]);
      expect(await selected(await http("/mcp", { "x-viewer-client": "beta" }))).toEqual([2]);
      const stdio = new Client({ name: "atomstudio-test", version: "0" });
      await stdio.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [ATOMSTUDIO_BIN, "mcp", "--url", svc.url, "--viewer-client", "alpha"],
          stderr: "pipe",
        }),
      );
      clients.push(stdio);
      expect(await selected(stdio)).toEqual([1]);
    } finally {
      for (const c of clients) await c.close();
      alpha.close();
      beta.close();
      await svc.app.close();
    }
  });
});

describe.skipIf(!hasChromium)("viewer tools through MCP, real studio in headless Chromium", () => {
  let svc: { app: FastifyInstance; url: string };
  let browser: Browser;
  let page: Page;
  let client: Client;
  beforeAll(async () => {
    await ensureStudioBuilt();
    svc = await start(true);
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url);
    await page.evaluate((dict) => window.atomstudio?.setStructure(dict, { name: "NaCl" }), nacl);
    client = await httpClient(svc.url);
  }, 180_000);
  afterAll(async () => {
    await client?.close();
    await browser?.close();
    await svc?.app.close();
  });

  it("svc_structure_info describes the studio's structure, as GET /api/view/structure-info does", async () => {
    const result = await callTool(client, "svc_structure_info", {});
    expect(result.isError ?? false, JSON.stringify(result.structuredContent)).toBe(false);
    expect(result.structuredContent).toMatchObject({
      formula: "Na4 Cl4",
      reduced_formula: "NaCl",
      n_atoms: 8,
      has_lattice: true,
      symmetry: { space_group_number: 225 },
    });
    expectSameAsEndpoint(result, await callEndpoint(svc.url, opByTool("svc_structure_info"), {}));
  });

  it("svc_screenshot renders the studio's view into an image of the asked size", async () => {
    const result = await callTool(client, "svc_screenshot", { width: 320, height: 200, format: "png" });
    expect(result.isError ?? false, JSON.stringify(result.structuredContent)).toBe(false);
    const image = result.content.find((c) => c.type === "image") as { data: string; mimeType: string };
    expect(image.mimeType).toBe("image/png");
    const sc = result.structuredContent as { image: string; format: string; width: number; height: number; size_bytes: number };
    expect(sc).toMatchObject({ format: "png", width: 320, height: 200, image: image.data });
    expect(sc.size_bytes).toBe(Buffer.from(image.data, "base64").length);
    const stats = await imageStats(page, image.data, image.mimeType);
    expect([stats.width, stats.height]).toEqual([320, 200]);
    expect(stats.foreground).toBeGreaterThan(0.01);
  });

  it("the stdio server forwards svc_structure_info to the service and its studio", async () => {
    const stdio = new Client({ name: "atomstudio-test", version: "0" });
    await stdio.connect(
      new StdioClientTransport({ command: process.execPath, args: [ATOMSTUDIO_BIN, "mcp", "--url", svc.url], stderr: "pipe" }),
    );
    try {
      const result = await callTool(stdio, "svc_structure_info", {});
      expectSameAsEndpoint(result, await callEndpoint(svc.url, opByTool("svc_structure_info"), {}));
      expect(result.structuredContent).toMatchObject({ reduced_formula: "NaCl" });
    } finally {
      await stdio.close();
    }
  });
});
