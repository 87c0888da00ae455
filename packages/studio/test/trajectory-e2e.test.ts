/**
 * The trajectory player in the real studio (headless Chromium) against the real service: open
 * the shared water trajectory (gzip), step frames and see the atoms move to that frame's
 * coordinates, plot the RDF and read its first peak from the page, plot RMSD, H-bonds and the
 * clustering and jump to a medoid, and play a 1,000-atom trajectory in real time (the drawing rate is logged).
 */
import { readFileSync } from "node:fs";
import { readTrajectory } from "atomstudio-core";
import { generateTrajectory, readTestdata, testdataPath, toExtxyz } from "atomstudio-testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio, type RunningService, startService } from "./support.ts";

const panelData = (page: Page, key: string) =>
  page.evaluate((k) => document.getElementById("trajectory-panel")?.dataset[k] ?? null, key);

/** The shown frame and every atom 3Dmol draws: [site, x, y, z, image a, b, c]. */
const drawnAtoms = (page: Page) =>
  page.evaluate(() => {
    const v = (
      window as unknown as {
        __atomstudio: {
          viewer: {
            scene: { atoms: { site: number; offset: number[] }[] };
            viewer: { getModel(): { selectedAtoms(s: object): { index: number; x: number; y: number; z: number }[] } };
          };
        };
      }
    ).__atomstudio.viewer;
    const atoms = v.viewer
      .getModel()
      .selectedAtoms({})
      .map((a) => {
        const sa = v.scene.atoms[a.index] as { site: number; offset: number[] };
        return [sa.site, a.x, a.y, a.z, ...sa.offset] as [number, number, number, number, number, number, number];
      });
    return { frame: Number(document.getElementById("trajectory-panel")?.dataset.frame), atoms };
  });

describe.skipIf(!hasChromium)("trajectory player in the studio", () => {
  let svc: RunningService;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    await ensureStudioBuilt();
    svc = await startService();
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url, { width: 1400, height: 900 });
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  const water = readTrajectory(readTestdata("md/water.pdb.gz"), { filename: "water.pdb" }).trajectory;

  it("opens water.pdb.gz and steps frames: the atoms are at that frame's coordinates", async () => {
    await page.setInputFiles("#traj-file", {
      name: "water.pdb.gz",
      mimeType: "application/gzip",
      buffer: readFileSync(testdataPath("md/water.pdb.gz")),
    });
    await page.waitForFunction(() => document.getElementById("trajectory-panel")?.dataset.nFrames === "100");
    await page.click("#traj-next");
    await page.click("#traj-next");
    expect(await panelData(page, "frame")).toBe("2");
    const cart = await page.evaluate(() =>
      Array.from(
        (
          window as unknown as { __atomstudio: { store: { structure: { cart: Float64Array } } } }
        ).__atomstudio.store.structure.cart.slice(0, 6),
      ),
    );
    expect(cart).toEqual(Array.from(water.frameCoords(2).slice(0, 6)));
    await page.fill("#traj-slider", "57");
    await page.dispatchEvent("#traj-slider", "change");
    expect(await panelData(page, "frame")).toBe("57");
    expect(await page.textContent("#traj-frame")).toContain("58 / 100");
  });

  it("plots the O–O RDF; its first peak reads 2.75 ± 0.05 Å", async () => {
    await page.fill("#traj-sel-a", "O");
    await page.fill("#traj-sel-b", "O");
    await page.click("#traj-rdf");
    await page.waitForFunction(() => document.getElementById("trajectory-panel")?.dataset.analysis === "rdf", undefined, {
      timeout: 60_000,
    });
    const peak = Number(await page.evaluate(() => document.getElementById("traj-chart")?.dataset.peak));
    expect(Math.abs(peak - 2.75)).toBeLessThanOrEqual(0.05);
    expect(await page.locator("#traj-chart canvas").count()).toBeGreaterThan(0);
    expect(await page.textContent("#traj-status")).toContain("first peak at");
  });

  it.each([
    ["#traj-rmsd", "rmsd", "RMSD of"],
    ["#traj-hbonds", "hbonds", "H-bonds per frame"],
    ["#traj-cluster", "clustering", "clusters"],
  ])("%s plots its analysis", async (button, key, text) => {
    await page.click(button);
    await page.waitForFunction((k) => document.getElementById("trajectory-panel")?.dataset.analysis === k, key, {
      timeout: 60_000,
    });
    expect(await page.textContent("#traj-status")).toContain(text);
  });

  it("clusters with HDBSCAN (scikit-learn in the analysis worker) when it is picked", async () => {
    await page.selectOption("#traj-cluster-method", "hdbscan");
    await page.click("#traj-cluster");
    await page.waitForFunction(() => /\(hdbscan\)/.test(document.getElementById("traj-status")?.textContent ?? ""), undefined, {
      timeout: 60_000,
    });
    expect(await panelData(page, "analysis")).toBe("clustering");
    await page.selectOption("#traj-cluster-method", "agglomerative");
    await page.click("#traj-cluster");
    await page.waitForFunction(() => /\(agglomerative\)/.test(document.getElementById("traj-status")?.textContent ?? ""));
  });

  it("jumps to a cluster's medoid frame", async () => {
    const first = page.locator("#traj-clusters button").first();
    const label = (await first.textContent()) ?? "";
    const frame = Number(label.match(/frame (\d+)/)?.[1]) - 1;
    await first.click();
    expect(await panelData(page, "frame")).toBe(String(frame));
  });

  it("plays 1,000 atoms in real time (60 fps asked, at least 30 frames advanced per second), pauses, loops", async () => {
    // Its own page at the default size: software WebGL cost grows with the canvas.
    const small = await openStudio(browser, svc.url);
    const t = generateTrajectory({ nAtoms: 1000, nFrames: 120, cell: [22, 0, 0, 0, 22, 0, 0, 0, 22], seed: 8, step: 0.005 });
    const text = toExtxyz(t);
    await small.setInputFiles("#traj-file", { name: "big.extxyz", mimeType: "text/plain", buffer: Buffer.from(text) });
    await small.waitForFunction(() => document.getElementById("trajectory-panel")?.dataset.nFrames === "120");
    await small.selectOption("#traj-fps", "60");
    await small.check("#traj-loop");
    await small.click("#traj-play");
    const t0 = Date.now();
    await small.waitForTimeout(3000);
    const playingView = await drawnAtoms(small);
    await small.click("#traj-play");
    const seconds = (Date.now() - t0) / 1000;
    const shown = Number(await panelData(small, "shown"));
    const advanced = Number(await panelData(small, "advanced"));
    const stepMs = Number(await panelData(small, "stepMs"));
    console.log(
      `studio playback, 1,000 atoms: one step costs ${stepMs.toFixed(1)} ms (${(1000 / stepMs).toFixed(0)} steps/s possible); ${(advanced / seconds).toFixed(1)} frames advanced/s at 60 asked; ${(shown / seconds).toFixed(1)} frames presented/s by this machine's software compositor`,
    );
    // The player keeps time (skipping frames when the page cannot present them all) ...
    expect(advanced / seconds).toBeGreaterThanOrEqual(30);
    // The drawing rate is this machine's software WebGL (SwiftShader), shared with other work: the
    // 30 frames/s goal is measured by bench/trajectory-player.ts; here only a floor far below it
    // (a step cost 64 ms here once, on a loaded shared machine, against 20 ms idle).
    expect(stepMs).toBeGreaterThan(0);
    expect(shown / seconds).toBeGreaterThanOrEqual(5);
    // What is drawn is the shown frame, while playing (atoms moved in place) and after pausing
    // (the frame loaded whole): every drawn atom, periodic images too, sits at its site's
    // coordinates in that frame plus its image's lattice translation (the cell is 22 Å cubic).
    const frames = readTrajectory(text, { filename: "big.extxyz" }).trajectory;
    for (const { frame, atoms } of [playingView, await drawnAtoms(small)]) {
      const want = frames.frameCoords(frame);
      expect(atoms.length).toBeGreaterThanOrEqual(1000);
      for (const [site, x, y, z, ...image] of atoms)
        for (const [k, got] of [x, y, z].entries())
          expect(got).toBeCloseTo((want[3 * site + k] as number) + 22 * (image[k] as number), 6);
    }
    expect(await panelData(small, "playing")).toBe("false");
    // It looped: more frames advanced than the trajectory holds.
    expect(advanced).toBeGreaterThan(120);
    await small.close();
  });
});
