/**
 * The electronic-structure panel in the real studio (headless Chromium) against the real service
 * and analysis worker: drop the shared Si band file with its KPOINTS on the page, and the plot's
 * tick labels and the gap shown are the API's; the DOS and the structure come along; fat bands
 * chosen per element and orbital draw the API's projection weights on the band lines; dropping
 * the NaCl LOBSTER files gives the ICOHP table; the exports are a PNG and a CSV.
 */
import { readFileSync } from "node:fs";
import { testdataPath } from "atomstudio-testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio, type RunningService, startService } from "./support.ts";

const drop = (page: Page, files: Array<[string, string]>) =>
  page.evaluate((list) => {
    const dt = new DataTransfer();
    for (const [name, b64] of list) dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name));
    document
      .getElementById("viewer-wrap")
      ?.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, files);
const b64 = (rel: string) => readFileSync(testdataPath(rel)).toString("base64");

describe.skipIf(!hasChromium)("electronic-structure plots in the studio", () => {
  let svc: RunningService;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    await ensureStudioBuilt();
    svc = await startService();
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url, { width: 1500, height: 1000 });
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it("drop vasprun + KPOINTS: labelled ticks and the gap as the API gives them", async () => {
    const api = (await (
      await fetch(`${svc.url}/api/bands`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          vasprun: { content: b64("vasp/vasprun_Si_bands.xml.gz"), encoding: "base64" },
          kpoints: { content: readFileSync(testdataPath("vasp/KPOINTS_Si_bands"), "utf8") },
        }),
      })
    ).json()) as { band_gap: { energy_ev: number }; kpath: { ticks: Array<{ label: string }> } };

    await drop(page, [
      ["vasprun_Si_bands.xml.gz", b64("vasp/vasprun_Si_bands.xml.gz")],
      ["KPOINTS", b64("vasp/KPOINTS_Si_bands")],
    ]);
    await page.waitForSelector("#analysis-gap[data-gap]", { timeout: 120_000 });
    const gapShown = await page.$eval("#analysis-gap", (el) => ({
      text: el.textContent,
      value: Number((el as HTMLElement).dataset.gap),
    }));
    expect(gapShown.value).toBeCloseTo(api.band_gap.energy_ev, 10);
    expect(gapShown.text).toContain(`${api.band_gap.energy_ev.toFixed(3)} eV (indirect`);
    const ticks = JSON.parse(await page.$eval("#analysis-bands", (el) => (el as HTMLElement).dataset.ticks ?? "[]")) as string[];
    expect(ticks).toEqual(api.kpath.ticks.map((t) => t.label.replace("\\Gamma", "Γ")));
    expect(ticks).toEqual(["Γ", "X", "W", "K", "Γ", "L", "U", "W", "L", "K|U", "X"]);
    // the DOS beside the bands, a projection toggle per element, and the Si cell in the viewer
    expect(await page.$$eval("#analysis-dos canvas", (c) => c.length)).toBeGreaterThan(0);
    expect(
      await page.$$eval("#analysis-toggles input[data-element]", (b) => b.map((x) => (x as HTMLElement).dataset.element)),
    ).toEqual(["Si"]);
    const sites = await page.evaluate(() => (window.atomstudio?.getStructure() as { sites: unknown[] } | null)?.sites.length);
    expect(sites).toBe(2);
  });

  // [choice in the list, projection group the API is asked for]
  const fatRows: Array<[string, Record<string, string[]>]> = [
    ["Si", { elements: ["Si"] }],
    ["Si p", { elements: ["Si"], orbitals: ["p"] }],
    ["Si s", { elements: ["Si"], orbitals: ["s"] }],
  ];
  it.each(fatRows)("fat bands %s: the API's projection weights drawn on the band lines", async (choice, group) => {
    const api = (await (
      await fetch(`${svc.url}/api/bands`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          vasprun: { content: b64("vasp/vasprun_Si_bands.xml.gz"), encoding: "base64" },
          kpoints: { content: readFileSync(testdataPath("vasp/KPOINTS_Si_bands"), "utf8") },
          emin: -20,
          emax: 20,
          projections: [group],
        }),
      })
    ).json()) as { projections: Array<{ up: number[][]; down?: number[][] }> };
    const p = api.projections[0] as { up: number[][]; down?: number[][] };
    const apiSum = [...p.up, ...(p.down ?? [])].flat().reduce((a, b) => a + b, 0);
    const canvas = () => page.$eval("#analysis-bands canvas", (c) => (c as HTMLCanvasElement).toDataURL());
    const before = await canvas();
    const options = await page.$$eval("#analysis-fat option", (os) => os.map((o) => o.textContent));
    expect(options).toEqual(["none", "Si", "Si s", "Si p", "Si d"]);
    await page.selectOption("#analysis-fat", { label: choice });
    await page.waitForFunction(
      (label) => JSON.parse((document.getElementById("analysis-bands") as HTMLElement).dataset.fat ?? "{}").label === label,
      choice,
      { timeout: 60_000 },
    );
    const drawn = JSON.parse(await page.$eval("#analysis-bands", (el) => (el as HTMLElement).dataset.fat ?? "{}")) as {
      discs: number;
      sum: number;
    };
    expect(drawn.sum).toBeCloseTo(apiSum, 8);
    expect(drawn.discs).toBeGreaterThan(0);
    expect(await canvas()).not.toBe(before);
  });

  it("fat bands back to none: no discs", async () => {
    await page.selectOption("#analysis-fat", { label: "none" });
    await page.waitForFunction(() => (document.getElementById("analysis-bands") as HTMLElement).dataset.fat === undefined);
  });

  it("exports the bands as PNG and CSV", async () => {
    const [png] = await Promise.all([page.waitForEvent("download"), page.click("#analysis-bands-png")]);
    const pngBytes = readFileSync((await png.path()) as string);
    expect(pngBytes.subarray(1, 4).toString()).toBe("PNG");
    const [csv] = await Promise.all([page.waitForEvent("download"), page.click("#analysis-bands-csv")]);
    const lines = readFileSync((await csv.path()) as string, "utf8")
      .trim()
      .split("\n");
    expect(lines[0]).toMatch(/^distance_inv_ang,band0_up,/);
    expect(lines.length).toBeGreaterThan(160);
  });

  it("drop COHPCAR + ICOHPLIST + CONTCAR: the ICOHP table and the -COHP plot", async () => {
    await page.click("#analysis-close");
    await drop(page, [
      ["COHPCAR.lobster.gz", b64("lobster/NaCl/COHPCAR.lobster.gz")],
      ["ICOHPLIST.lobster.gz", b64("lobster/NaCl/ICOHPLIST.lobster.gz")],
      ["CONTCAR.gz", b64("lobster/NaCl/CONTCAR.gz")],
    ]);
    await page.waitForSelector("#analysis-bonds tbody tr", { timeout: 120_000 });
    const rows = await page.$$eval("#analysis-bonds tbody tr", (trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent)),
    );
    expect(rows).toHaveLength(50);
    const strongest = rows.reduce((a, b) => (Number(b[4]) < Number(a[4]) ? b : a));
    expect(strongest[2]).toMatch(/Cl\d–Na\d|Na\d–Cl\d/);
    expect(Number(strongest[4])).toBeCloseTo(-0.56541, 5);
    expect(await page.$$eval("#analysis-cohp-plot canvas", (c) => c.length)).toBeGreaterThan(0);
  });
});
