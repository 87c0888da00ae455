/**
 * The Build panel in the real studio (headless Chromium) with the real service and analysis
 * worker: a strain sweep and an enumerated doping computed in the browser by the core, a
 * nanoparticle from the service (ASE); results browsed one by one, undone in one step, exported.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, openStudioSession, type StudioSession } from "./support.ts";

const cu = {
  lattice: {
    matrix: [
      [3.61, 0, 0],
      [0, 3.61, 0],
      [0, 0, 3.61],
    ],
  },
  sites: [
    [0, 0, 0],
    [0.5, 0.5, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5],
  ].map((abc) => ({ species: [{ element: "Cu", occu: 1 }], abc })),
};

interface Shown {
  lattice?: { a: number };
  sites: { species: { element: string }[] }[];
}

describe.skipIf(!hasChromium)("Build panel in the studio", () => {
  let page: Page;
  let session: StudioSession | undefined;

  beforeAll(async () => {
    session = await openStudioSession();
    page = session.page;
  }, 300_000);
  afterAll(async () => {
    await session?.close();
  });

  const shown = async () => (await page.evaluate(() => window.atomstudio!.getStructure())) as Shown;
  const waitStatus = (re: string) =>
    page.waitForFunction((r) => new RegExp(r).test(document.querySelector("#bp-status")?.textContent ?? ""), re, {
      timeout: 90_000,
    });

  it("strain sweep: browse three cells one by one, undo returns to the input in one step", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s), cu);
    await page.selectOption("#bp-kind", "strain");
    await page.selectOption("#bp-strain-axis", "a");
    await page.fill("#bp-strain-magnitude", "2");
    await page.fill("#bp-strain-steps", "3");
    await page.click("#bp-run");
    await waitStatus("^3 structures");
    expect((await shown()).lattice?.a).toBeCloseTo(3.61 * 0.98, 10);
    await page.click("#bp-next");
    expect(await page.textContent("#bp-label")).toMatch(/^2 \/ 3/);
    expect((await shown()).lattice?.a).toBeCloseTo(3.61, 10);
    await page.click("#bp-next");
    expect((await shown()).lattice?.a).toBeCloseTo(3.61 * 1.02, 10);
    await page.evaluate(() => window.atomstudio!.undo());
    expect((await shown()).lattice?.a).toBeCloseTo(3.61, 12);
  });

  it("enumerated doping groups the six Au pairs of the fcc cell into one structure; export saves a CIF", async () => {
    await page.selectOption("#bp-kind", "doping");
    await page.fill("#bp-doping-host", "Cu");
    await page.fill("#bp-doping-dopant", "Au");
    await page.fill("#bp-doping-count", "2");
    await page.check("#bp-doping-enumerate");
    await page.click("#bp-run");
    await waitStatus("^1 structure$");
    const s = await shown();
    expect(s.sites.filter((x) => x.species[0]?.element === "Au").length).toBe(2);
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#bp-export")]);
    expect(download.suggestedFilename()).toBe("built_1.cif");
  });

  it("a nanoparticle from the service (ASE icosahedron, 2 shells = 13 atoms)", async () => {
    await page.selectOption("#bp-kind", "nanoparticle");
    await page.selectOption("#bp-np-shape", "icosahedron");
    await page.fill("#bp-np-size", "2");
    await page.click("#bp-run");
    await waitStatus("^1 structure");
    expect((await shown()).sites.length).toBe(13);
  });

  it("a bad request shows the service's message, not a crash", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s), cu);
    await page.selectOption("#bp-kind", "defect");
    await page.selectOption("#bp-defect-type", "substitution");
    await page.click("#bp-run");
    await waitStatus("substitute_element");
    expect(await page.getAttribute("#bp-status", "class")).toContain("field-error");
  });
});
