/**
 * The Build panel in the real studio (headless Chromium) with the real service and analysis
 * worker: a strain sweep, an enumerated doping, substitution groups and a seeded random
 * substitution computed in the browser by the core (the random one checked against the service's
 * route with the same seed), a custom intercalation and a nanoparticle from the service (ASE);
 * results browsed one by one, undone in one step, exported.
 */
import { readFileSync } from "node:fs";
import { fccCell, testdataPath } from "atomstudio-testkit";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium, openStudioSession, type StudioSession } from "./support.ts";

const cu = fccCell();

const lifepo4 = readFileSync(testdataPath("structures/POSCAR_LiFePO4"), "utf8");

interface Shown {
  lattice?: { a: number };
  sites: { species: { element: string }[]; abc?: number[]; xyz?: number[] }[];
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

  it("one-sided strain sweep: m/n … m, the sign kept", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s), cu);
    await page.selectOption("#bp-kind", "strain");
    await page.selectOption("#bp-strain-axis", "a");
    await page.fill("#bp-strain-magnitude", "-2");
    await page.fill("#bp-strain-steps", "2");
    await page.selectOption("#bp-strain-sweep", "one_sided");
    await page.click("#bp-run");
    await waitStatus("^2 structures");
    expect((await shown()).lattice?.a).toBeCloseTo(3.61 * 0.99, 10);
    await page.click("#bp-next");
    expect((await shown()).lattice?.a).toBeCloseTo(3.61 * 0.98, 10);
  });

  it("two substitution groups (separated by ;) combine: Au or Ag on site 0, Pt on site 1", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s), cu);
    await page.selectOption("#bp-kind", "substitution");
    await page.fill("#bp-sub-sites", "0; 1");
    await page.fill("#bp-sub-elements", "Au, Ag; Pt");
    await page.click("#bp-run");
    await waitStatus("^2 structures");
    const els = (s: Shown) => s.sites.map((x) => x.species[0]?.element);
    expect(els(await shown())).toEqual(["Au", "Pt", "Cu", "Cu"]);
    await page.click("#bp-next");
    expect(els(await shown())).toEqual(["Ag", "Pt", "Cu", "Cu"]);
  });

  it("random substitution of LiFePO4 (Fe → 2 Mn, seed 7): the service's structures for the seed, browsed, undone in one step", async () => {
    await page.evaluate((text) => window.atomstudio!.openFile(text, "POSCAR_LiFePO4"), lifepo4);
    const input = (await shown()) as unknown as Record<string, unknown>;
    await page.selectOption("#bp-kind", "random-substitution");
    await page.fill("#bp-rs-host", "Fe");
    await page.fill("#bp-rs-dopant", "Mn");
    await page.fill("#bp-rs-count", "2");
    await page.fill("#bp-rs-samples", "3");
    await page.fill("#bp-rs-seed", "7");
    await page.click("#bp-run");
    await waitStatus("^3 structures from \\d+ draws");
    expect(await page.textContent("#bp-label")).toMatch(/^1 \/ 3: \[0\] random: Mn×2/);

    // What an agent sees of the studio, and the same request to the service's route.
    const info = async () =>
      (await (await fetch(`${session!.url}/api/view/structure-info`)).json()) as {
        element_counts: Record<string, number>;
        sites: { element: string }[];
      };
    const mnSites = (sites: { element?: string; species?: { element: string }[] }[]) =>
      sites.flatMap((x, i) => ((x.element ?? x.species?.[0]?.element) === "Mn" ? [i] : []));
    const r = await fetch(`${session!.url}/api/build/random-substitution`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        structure: input,
        host_element: "Fe",
        dopants: [{ element: "Mn", count: 2 }],
        n_samples: 3,
        seed: 7,
      }),
    });
    expect(r.status).toBe(200);
    const service = (await r.json()) as { structures: Shown[]; count: number };
    expect(service.count).toBe(3);

    const first = await info();
    expect(first.element_counts).toEqual({ Li: 4, Fe: 2, Mn: 2, P: 4, O: 16 });
    expect(mnSites(first.sites)).toEqual(mnSites(service.structures[0]!.sites));
    await page.click("#bp-next");
    expect(await page.textContent("#bp-label")).toMatch(/^2 \/ 3/);
    const second = await info();
    expect(second.element_counts).toEqual({ Li: 4, Fe: 2, Mn: 2, P: 4, O: 16 });
    expect(mnSites(second.sites)).toEqual(mnSites(service.structures[1]!.sites));
    expect(mnSites(second.sites)).not.toEqual(mnSites(first.sites));

    await page.evaluate(() => window.atomstudio!.undo());
    expect((await info()).element_counts).toEqual({ Li: 4, Fe: 4, P: 4, O: 16 });
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#bp-export")]);
    expect(download.suggestedFilename()).toBe("built_2.cif");
  });

  it("random substitution errors are shown: more dopants than host sites", async () => {
    await page.fill("#bp-rs-count", "5");
    await page.click("#bp-run");
    await waitStatus("need 5 sites");
    expect(await page.getAttribute("#bp-status", "class")).toContain("field-error");
  });

  it("a custom intercalation from the service: one Li at the octahedral void given", async () => {
    await page.evaluate((s) => window.atomstudio!.setStructure(s), cu);
    await page.selectOption("#bp-kind", "intercalation");
    await page.selectOption("#bp-int-position", "custom");
    await page.fill("#bp-int-positions", "0.5 0.5 0.5");
    await page.click("#bp-run");
    await waitStatus("^1 structure");
    const s = await shown();
    expect(s.sites.length).toBe(5);
    const li = s.sites.find((x) => x.species[0]?.element === "Li");
    for (const x of li?.abc ?? []) expect(x).toBeCloseTo(0.5, 10);
    expect(li?.abc).toHaveLength(3);
  });

  it("a nanoparticle from the service (ASE icosahedron, 2 shells = 13 atoms)", async () => {
    await page.selectOption("#bp-kind", "nanoparticle");
    await page.selectOption("#bp-np-shape", "icosahedron");
    await page.fill("#bp-np-size", "2");
    await page.click("#bp-run");
    await waitStatus("^1 structure");
    expect((await shown()).sites.length).toBe(13);
  });

  it("nanoparticle options under More options: an octahedron cut at 1 (38 atoms, ASE) in a box of 5 Å vacuum", async () => {
    await page.selectOption("#bp-kind", "nanoparticle");
    await page.selectOption("#bp-np-shape", "octahedron");
    await page.fill("#bp-np-size", "4");
    await page.click(".bp-more summary");
    await page.fill("#bp-np-cutoff", "1");
    await page.fill("#bp-np-vacuum", "5");
    await page.click("#bp-run");
    await waitStatus("^1 structure");
    const s = await shown();
    expect(s.sites.length).toBe(38);
    const xs = s.sites.map((x) => x.xyz?.[0] as number);
    expect(s.lattice?.a).toBeCloseTo(Math.max(...xs) - Math.min(...xs) + 10, 8);
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
