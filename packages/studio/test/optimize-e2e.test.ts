/**
 * The optimization panel in the real studio (headless Chromium) against the real calculator
 * worker: pick EMT and BFGS, freeze the selection, relax, watch steps arrive and the structure
 * change, see force arrows at the end; undo returns to the structure before the run.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { optimizeWsPlugin } from "../../server/src/optimize/ws.ts";
import { hasChromium, openStudioSession, type StudioSession } from "./support.ts";

const cluster = {
  "@class": "Molecule",
  sites: [
    [0, 0, 0],
    [2.4, 0.3, 0],
    [0.2, 2.6, 0.1],
    [0, 0.1, 2.3],
    [2.2, 2.2, 0.3],
  ].map((xyz) => ({ species: [{ element: "Cu", occu: 1 }], xyz })),
};

describe.skipIf(!hasChromium)("optimization panel in the studio", () => {
  let page: Page;
  let session: StudioSession | undefined;

  beforeAll(async () => {
    session = await openStudioSession({ plugins: [optimizeWsPlugin] });
    page = session.page;
  });
  afterAll(async () => {
    await session?.close();
  });

  it("relaxes with EMT, streams steps, keeps frozen atoms, shows forces, undoes in one step", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s), cluster);
    await page.evaluate(() => window.atomstudio!.setSelection([0]));
    await page.waitForFunction(() => !!document.querySelector("#opt-calculator option[value=emt]:not([disabled])"));
    await page.selectOption("#opt-calculator", "emt");
    await page.selectOption("#opt-optimizer", "bfgs");
    await page.check("#opt-freeze");
    await page.fill("#opt-fmax", "0.01");
    await page.click("#opt-run");
    await page.waitForFunction(
      () => document.querySelector<HTMLElement>(".optimize-panel")?.dataset.result === "converged",
      undefined,
      {
        timeout: 60_000,
      },
    );
    const after = (await page.evaluate(() => window.atomstudio!.getStructure())) as {
      sites: Array<{ xyz: number[]; properties: { forces?: number[] } }>;
    };
    const steps = Number(await page.evaluate(() => document.querySelector<HTMLElement>(".optimize-panel")?.dataset.steps));
    expect(steps).toBeGreaterThan(2);
    expect(after.sites[0]?.xyz).toEqual(cluster.sites[0]?.xyz);
    expect(after.sites[1]?.xyz).not.toEqual(cluster.sites[1]?.xyz);
    expect(after.sites[1]?.properties.forces).toHaveLength(3);
    expect(await page.textContent("#opt-status")).toMatch(/Converged after \d+ steps/);
    await page.evaluate(() => window.atomstudio!.undo());
    const before = (await page.evaluate(() => window.atomstudio!.getStructure())) as { sites: Array<{ xyz: number[] }> };
    expect(before.sites.map((s) => s.xyz)).toEqual(cluster.sites.map((s) => s.xyz));
  });
});
