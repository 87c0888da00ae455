/**
 * The assistant runs UFF in the real studio (headless Chromium): a scripted model (loopback peer
 * speaking OpenAI's chat-completion-chunk SSE) calls optimize_structure with calculator "uff";
 * the studio relaxes its molecule in the UFF Web Worker, the structure changes (one undo step
 * back), and the answer streams in.
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

// A stretched, bent water molecule: UFF has work to do.
const water = {
  "@class": "Molecule",
  sites: [
    ["O", [0, 0, 0]],
    ["H", [1.2, 0.1, 0]],
    ["H", [-0.1, 1.1, 0.3]],
  ].map(([element, xyz]) => ({ species: [{ element: element as string, occu: 1 }], xyz })),
};

describe.skipIf(!hasChromium)("the assistant runs UFF in the studio", () => {
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
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await close?.();
    await peer?.close();
  });

  it("optimize_structure with calculator uff relaxes the studio's molecule in the browser", async () => {
    await page.evaluate((s) => window.atomstudio?.setStructure(s, { name: "water" }), water);
    const panel = page.locator("#assistant-panel");
    await expect.poll(() => panel.locator("select.as-provider option").count(), { timeout: 30_000 }).toBeGreaterThan(5);
    await page.evaluate(() => {
      const sel = document.querySelector<HTMLSelectElement>("#assistant-panel select.as-model");
      const o = document.createElement("option");
      o.value = "uff-then-text";
      o.textContent = "scripted";
      sel?.append(o);
      if (sel) sel.value = "uff-then-text";
    });
    await panel.locator("textarea").fill("Clean up this water molecule with UFF");
    await panel.locator("textarea").press("Enter");
    await expect
      .poll(() => panel.locator(".as-tool summary").allTextContents(), { timeout: 30_000 })
      .toContain("✓ optimize_structure");
    await expect.poll(() => panel.locator(".as-send").isVisible(), { timeout: 30_000 }).toBe(true);
    const after = (await page.evaluate(() => window.atomstudio!.getStructure())) as unknown as {
      sites: { xyz: number[]; properties: { forces?: number[] } }[];
    };
    const oh = (i: number) => {
      const [o, h] = [after.sites[0]?.xyz as number[], after.sites[i]?.xyz as number[]];
      return Math.hypot(...o.map((x, k) => x - (h[k] as number)));
    };
    // UFF's O-H rest length for water is 0.99 Å; the start had 1.20 and 1.15 Å.
    expect(oh(1)).toBeCloseTo(0.99, 1);
    expect(oh(2)).toBeCloseTo(0.99, 1);
    expect(after.sites[1]?.properties.forces).toHaveLength(3);
    expect(await page.evaluate(() => window.atomstudio?.undo())).toBe(true);
    const undone = (await page.evaluate(() => window.atomstudio!.getStructure())) as unknown as { sites: { xyz: number[] }[] };
    expect(undone.sites.map((s) => s.xyz)).toEqual(water.sites.map((s) => s.xyz));
  });
});
