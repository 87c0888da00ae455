/**
 * The adsorption panel in the real studio (headless Chromium) against the real service and
 * analysis worker: find the sites of a Pt(111) slab, see them drawn, click one in the 3D viewer,
 * place CO, and read the result back through GET /api/view/structure-info (what an agent sees).
 * Undo returns to the bare slab.
 */
import { fromDict, slab, toDict } from "atomstudio-core";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, openStudioSession, type StudioSession } from "./support.ts";

interface StudioWindow {
  __atomstudio: {
    viewer: { markerOnScreen(i: number): { x: number; y: number } | null; markers: unknown[] };
  };
}

const ptBulk = fromDict({
  lattice: {
    matrix: [
      [3.924, 0, 0],
      [0, 3.924, 0],
      [0, 0, 3.924],
    ],
  },
  sites: [
    [0, 0, 0],
    [0.5, 0.5, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5],
  ].map((abc) => ({ species: [{ element: "Pt", occu: 1 }], abc })),
});
const ptSlab = toDict(slab(ptBulk, { miller: [1, 1, 1], thickness: 3, vacuum: 12 }).structure);

describe.skipIf(!hasChromium)("adsorption panel in the studio", () => {
  let page: Page;
  let url = "";
  let session: StudioSession | undefined;

  beforeAll(async () => {
    session = await openStudioSession();
    page = session.page;
    url = session.url;
  }, 300_000);
  afterAll(async () => {
    await session?.close();
  });

  it("finds sites on a slab, a click on one in the viewer picks it, CO placed there shows in /api/view/structure-info", async () => {
    const nSlab = (ptSlab.sites as unknown[]).length;
    await page.evaluate((s) => window.atomstudio!.setStructure(s, { name: "Pt(111)" }), ptSlab as Record<string, unknown>);
    await page.evaluate(() => window.atomstudio!.viewerTools.set_rotation!({ x: 0, y: 0, z: 0 }));
    await page.click("#ads-find");
    await page.waitForFunction(
      () => Number(document.querySelector<HTMLElement>(".adsorption-panel")?.dataset.sites) > 0,
      undefined,
      {
        timeout: 60_000,
      },
    );
    const nSites = await page.evaluate(() => (window as unknown as StudioWindow).__atomstudio.viewer.markers.length);
    expect(nSites).toBe(4); // top, bridge, fcc and hcp hollow: pymatgen's Pt(111) answer
    expect(await page.textContent("#ads-status")).toMatch(/4 symmetry-distinct sites/);

    // a real mouse click on the drawn marker of the first site (top) in the 3D viewer
    const p = await page.evaluate(() => (window as unknown as StudioWindow).__atomstudio.viewer.markerOnScreen(0));
    expect(p).not.toBeNull();
    await page.mouse.click(p!.x, p!.y);
    await page.waitForFunction(() => document.querySelector<HTMLElement>(".adsorption-panel")?.dataset.picked === "0");
    expect(await page.isEnabled("#ads-place")).toBe(true);

    await page.selectOption("#ads-molecule", "CO");
    await page.click("#ads-place");
    await page.waitForFunction(
      () => document.querySelector<HTMLElement>(".adsorption-panel")?.dataset.placed === "2",
      undefined,
      {
        timeout: 60_000,
      },
    );

    const info = (await (await fetch(`${url}/api/view/structure-info`)).json()) as {
      n_atoms: number;
      element_counts: Record<string, number>;
      sites: Array<{ element: string; xyz: number[] }>;
    };
    expect(info.n_atoms).toBe(nSlab + 2);
    expect(info.element_counts).toEqual({ Pt: nSlab, C: 1, O: 1 });
    const c = info.sites[nSlab]!;
    const o = info.sites[nSlab + 1]!;
    expect([c.element, o.element]).toEqual(["C", "O"]);
    // C straight above the top Pt atom at the site height, O above C
    const top = (ptSlab.sites as Array<{ xyz: number[] }>).reduce((m, s) =>
      (s.xyz[2] as number) > (m.xyz[2] as number) ? s : m,
    );
    expect(Math.hypot(...c.xyz.map((x, k) => x - (top.xyz[k] as number)))).toBeGreaterThan(1.49);
    expect((o.xyz[2] as number) - (c.xyz[2] as number)).toBeCloseTo(1.128, 6);
    // the markers are gone with the placement (they belong to the bare slab)
    expect(await page.evaluate(() => (window as unknown as StudioWindow).__atomstudio.viewer.markers.length)).toBe(0);

    // undoable in one step
    await page.evaluate(() => window.atomstudio!.undo());
    const back = (await (await fetch(`${url}/api/view/structure-info`)).json()) as { n_atoms: number };
    expect(back.n_atoms).toBe(nSlab);
  }, 180_000);
});
