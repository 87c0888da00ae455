/**
 * The heterostructure panel in the real studio (headless Chromium) against the real service and
 * analysis worker: open WS2 and MoS2 monolayers, search slab-mode matches, sort the table by
 * strain, preview a match (the current structure is untouched), build it (undoable) and export it.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, openStudioSession, type StudioSession } from "./support.ts";

/** A 2H-type MX2 monolayer in a hexagonal cell with 20 Å along c (reduced viewer form, fractional). */
const tmd = (metal: string, a: number, dz: number) => ({
  lattice: {
    matrix: [
      [a, 0, 0],
      [-a / 2, (a * Math.sqrt(3)) / 2, 0],
      [0, 0, 20],
    ],
  },
  sites: [
    { species: [{ element: metal, occu: 1 }], abc: [1 / 3, 2 / 3, 0.5] },
    { species: [{ element: "S", occu: 1 }], abc: [2 / 3, 1 / 3, 0.5 + dz / 20] },
    { species: [{ element: "S", occu: 1 }], abc: [2 / 3, 1 / 3, 0.5 - dz / 20] },
  ],
});

type Panel = { dataset: DOMStringMap };
const data = (page: Page, key: string) =>
  page.evaluate((k) => (document.querySelector(".hetero-panel") as unknown as Panel | null)?.dataset[k], key);

describe.skipIf(!hasChromium)("heterostructure panel in the studio", () => {
  let page: Page;
  let session: StudioSession | undefined;

  beforeAll(async () => {
    session = await openStudioSession();
    page = session.page;
  }, 180_000);
  afterAll(async () => {
    await session?.close();
  });

  it("searches MoS2 on WS2, sorts by strain, previews, builds (undoable) and exports", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s, { name: "WS2" }), tmd("W", 3.153, 1.57));
    await page.evaluate((s) => window.atomstudio!.setStructure(s, { name: "MoS2" }), tmd("Mo", 3.16, 1.58));
    expect(await page.inputValue("#het-substrate")).toBe(
      await page.evaluate(() => {
        const sel = document.querySelector<HTMLSelectElement>("#het-substrate");
        return Array.from(sel?.options ?? []).find((o) => o.text === "WS2")?.value ?? "";
      }),
    );
    await page.selectOption("#het-mode", "slab");
    await page.fill("#het-max-area", "30");
    await page.click("#het-search");
    await page.waitForFunction(
      () => Number((document.querySelector(".hetero-panel") as HTMLElement | null)?.dataset.matches) > 0,
      undefined,
      {
        timeout: 90_000,
      },
    );
    const n = Number(await data(page, "matches"));
    expect(await page.locator("#het-matches tbody tr").count()).toBe(n);

    // Sort by strain, twice: descending
    await page.click('#het-matches th[data-sort="strain"]');
    await page.click('#het-matches th[data-sort="strain"]');
    const strains = (await page.locator("#het-matches tbody tr td:nth-child(2)").allTextContents()).map(Number);
    expect(strains).toEqual([...strains].sort((a, b) => b - a));
    await page.click('#het-matches th[data-sort="match_area"]');
    const areas = (await page.locator("#het-matches tbody tr td:nth-child(1)").allTextContents()).map(Number);
    expect(areas).toEqual([...areas].sort((a, b) => a - b));

    // Preview the second-smallest cell: the viewer shows it, the structure is still MoS2
    const row = page.locator("#het-matches tbody tr").nth(1);
    const id = await row.getAttribute("data-match-id");
    const atoms = Number(await row.locator("td:nth-child(3)").textContent());
    await row.click();
    await page.waitForFunction(
      (want) => (document.querySelector(".hetero-panel") as HTMLElement | null)?.dataset.preview === want,
      id,
      {
        timeout: 60_000,
      },
    );
    expect(Number(await data(page, "previewAtoms"))).toBe(atoms);
    const shown = await page.evaluate(
      () =>
        (window as unknown as { __atomstudio: { viewer: { structure: { length: number } | null } } }).__atomstudio.viewer
          .structure?.length,
    );
    expect(shown).toBe(atoms);
    expect(await page.evaluate(() => window.atomstudio!.getStructure()?.sites.length)).toBe(3);

    // Build: the interface becomes the structure; undo returns to MoS2
    await page.click("#het-build");
    const built = (await page.evaluate(() => window.atomstudio!.getStructure())) as {
      sites: { species: { element: string }[] }[];
    };
    expect(built.sites).toHaveLength(atoms);
    const elements = new Set(built.sites.map((s) => s.species[0]?.element));
    expect([...elements].sort()).toEqual(["Mo", "S", "W"]);
    const cif = await page.evaluate(
      () =>
        (window as unknown as { __atomstudio: { exportFile(f: string): { text: string } } }).__atomstudio.exportFile("cif").text,
    );
    expect(cif).toContain("_cell_length_a");
    await page.evaluate(() => window.atomstudio!.undo());
    expect(await page.evaluate(() => window.atomstudio!.getStructure()?.sites.length)).toBe(3);
    await page.evaluate(() => window.atomstudio!.redo());
    expect(await page.evaluate(() => window.atomstudio!.getStructure()?.sites.length)).toBe(atoms);
  }, 180_000);
});
