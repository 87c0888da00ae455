/**
 * The assistant panel in the real studio (headless Chromium): pick a provider, send a message,
 * watch the model's tool call change the structure in the viewer and the answer stream in.
 * Skipped where Chromium is missing.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatPlugin } from "../../server/src/chat/index.ts";
import { loadConfig } from "../../server/src/config.ts";
import { buildApp } from "../../server/src/http/app.ts";
import { studioPlugin } from "../../server/src/studio/plugin.ts";
import { viewerPlugin } from "../../server/src/viewer/plugin.ts";
import { startOpenAICompatPeer } from "../../server/test/peers/openai-compat.ts";
import type { Peer } from "../../server/test/peers/serve.ts";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio } from "./support.ts";

const silicon = {
  "@module": "pymatgen.core.structure",
  "@class": "Structure",
  lattice: {
    matrix: [
      [0, 2.7155, 2.7155],
      [2.7155, 0, 2.7155],
      [2.7155, 2.7155, 0],
    ],
  },
  sites: [
    { species: [{ element: "Si", occu: 1 }], abc: [0, 0, 0], label: "Si", properties: {} },
    { species: [{ element: "Si", occu: 1 }], abc: [0.25, 0.25, 0.25], label: "Si", properties: {} },
  ],
};

describe.skipIf(!hasChromium)("assistant panel in the studio", () => {
  let peer: Peer;
  let browser: Browser;
  let page: Page;
  let close: () => Promise<void>;

  beforeAll(async () => {
    await ensureStudioBuilt();
    peer = await startOpenAICompatPeer();
    const env = {
      DEEPSEEK_API_KEY: "sk-deepseek-e2e-0123456789",
      ATOMSTUDIO_DEEPSEEK_BASE_URL: `${peer.origin}/v1`,
      PATH: "/nonexistent",
    };
    const { app } = await buildApp({
      config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent" }, {}),
      plugins: [viewerPlugin(), chatPlugin({ env }), studioPlugin({ autoBuild: false })],
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const port = (app.server.address() as { port: number }).port;
    close = () => app.close();
    browser = await launchBrowser();
    page = await openStudio(browser, `http://127.0.0.1:${port}`, { width: 1400, height: 800 });
  });
  afterAll(async () => {
    await browser?.close();
    await close?.();
    await peer?.close();
  });

  it("lists the providers, runs a tool call on the loaded structure and streams the answer", async () => {
    await page.evaluate((s) => window.atomstudio?.setStructure(s, { name: "Si" }), silicon);
    const panel = page.locator("#assistant-panel");
    await expect.poll(() => panel.locator("select.as-provider option").count(), { timeout: 30_000 }).toBeGreaterThan(5);
    // deepseek has a key: available and chosen first; agents are not on PATH
    expect(await panel.locator("select.as-provider").inputValue()).toBe("openai-compat:deepseek");
    expect(await panel.locator('option[value="cli-agent:claude"]').isDisabled()).toBe(true);
    await page.evaluate(() => {
      const sel = document.querySelector<HTMLSelectElement>("#assistant-panel select.as-model");
      const o = document.createElement("option");
      o.value = "tool-then-text";
      o.textContent = "scripted";
      sel?.append(o);
      if (sel) sel.value = "tool-then-text";
    });
    await panel.locator("textarea").fill("Make a 2x2x2 supercell");
    await panel.locator("textarea").press("Enter");
    await expect
      .poll(() => panel.locator(".as-assistant").last().textContent(), { timeout: 30_000 })
      .toBe("A 2x2x2 supercell of Si has 16 atoms.");
    await expect.poll(() => panel.locator(".as-send").isVisible()).toBe(true);
    expect(await panel.locator(".as-stop").isVisible()).toBe(false);
    expect(await panel.locator(".as-user").textContent()).toBe("Make a 2x2x2 supercell");
    expect(await panel.locator(".as-tool summary").allTextContents()).toEqual(["⚙ make_supercell", "✓ make_supercell"]);
    expect(await page.evaluate(() => (window.atomstudio!.getStructure() as { sites: unknown[] }).sites.length)).toBe(16);
    // the edit is undoable like any other
    expect(await page.evaluate(() => window.atomstudio?.undo())).toBe(true);
    expect(await page.evaluate(() => (window.atomstudio!.getStructure() as { sites: unknown[] }).sites.length)).toBe(2);
  });
});
