/**
 * The studio as a newcomer uses it (headless Chromium, the real service): the summary of a known
 * CIF against the service's structure-info, measurements against pymatgen, the periodic-table
 * picker, validation beside the fields, keyboard shortcuts, themes, an accessibility check with
 * axe-core, screenshots at 1280×720 and 1920×1080 kept as artefacts, and the whole newcomer task:
 * a Pt(111) slab with CO on top, the C–Pt distance measured, exported.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseStructureFile, structureFormula } from "atomstudio-core";
import { REPO_ROOT, runPython, testdataPath } from "atomstudio-testkit";
import pixelmatch from "pixelmatch";
import type { Browser, Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio, type RunningService, startService } from "./support.ts";

const ARTEFACTS = join(REPO_ROOT, ".test-output", "screenshots");
/** Reference screenshots (committed); `ATOMSTUDIO_UPDATE_BASELINES=1` rewrites them after an intended change. */
const BASELINES = join(REPO_ROOT, "packages/studio/test/baselines");
const updateBaselines = process.env.ATOMSTUDIO_UPDATE_BASELINES === "1";
/**
 * Share of pixels allowed to differ from the baseline. Software WebGL renders the same scene the
 * same way on this kind of machine; the margin absorbs anti-aliasing of text and sphere edges, not
 * a moved panel, a lost label or a changed colour (each of those changes far more pixels).
 */
const MAX_DIFF_SHARE = 0.005;

/** Compare a screenshot with its baseline; write the difference image beside the artefacts. */
const compareWithBaseline = (name: string, png: Buffer): { share: number; baseline: boolean } => {
  const file = join(BASELINES, name);
  if (updateBaselines || !existsSync(file)) {
    mkdirSync(BASELINES, { recursive: true });
    writeFileSync(file, png);
    return { share: 0, baseline: false };
  }
  const want = PNG.sync.read(readFileSync(file));
  const got = PNG.sync.read(png);
  if (want.width !== got.width || want.height !== got.height) return { share: 1, baseline: true };
  const diff = new PNG({ width: got.width, height: got.height });
  const n = pixelmatch(want.data, got.data, diff.data, got.width, got.height, { threshold: 0.1 });
  writeFileSync(join(ARTEFACTS, name.replace(/\.png$/, ".diff.png")), PNG.sync.write(diff));
  return { share: n / (got.width * got.height), baseline: true };
};
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

type StudioWindow = { __atomstudio: import("../src/studio.ts").Studio };

/** The summary's values by key (the `<dd data-key>` cells). */
const summary = (page: Page): Promise<Record<string, string>> =>
  page.evaluate(() =>
    Object.fromEntries(
      Array.from(document.querySelectorAll<HTMLElement>("#structure-summary dd")).map((d) => [d.dataset.key, d.textContent]),
    ),
  );

/**
 * Turn the view until the home atoms of `sites` are each at least `gap` px from every other drawn
 * atom on screen (so a click hits exactly that site), and return their screen positions.
 */
const clearShot = async (page: Page, sites: number[], gap = 14) => {
  for (const rot of [
    [80, 15, 0],
    [75, 35, 10],
    [60, 20, 30],
    [85, 55, 0],
    [40, 10, 0],
    [20, 35, 0],
    [0, 0, 0],
  ]) {
    await page.evaluate((r) => window.atomstudio!.viewerTools.set_rotation!({ x: r[0], y: r[1], z: r[2] }), rot);
    const found = await page.evaluate(
      ({ want, gap }) => {
        const s = (window as unknown as StudioWindow).__atomstudio;
        const scene = s.viewer.scene!;
        const pts = s.viewer.atomsOnScreen();
        return want.map((site) => {
          const i = scene.siteToAtom[site] as number;
          const p = pts[i]!;
          const clear = pts.every((q, j) => j === i || Math.hypot(q.x - p.x, q.y - p.y) > gap);
          return clear ? { x: p.x, y: p.y } : null;
        });
      },
      { want: sites, gap },
    );
    if (found.every((f) => f !== null)) return found as { x: number; y: number }[];
  }
  throw new Error(`no view shows sites ${sites.join(", ")} apart from the others`);
};

describe.skipIf(!hasChromium)("studio usability (a newcomer's tasks)", () => {
  let browser: Browser;
  let svc: RunningService;
  let page: Page;

  beforeAll(async () => {
    await ensureStudioBuilt();
    svc = await startService();
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url, { width: 1280, height: 720 });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it("shows the summary of a known CIF as the service's structure-info (pymatgen's) says", async () => {
    const file = testdataPath("structures/Cod_2100513.cif");
    await page.setInputFiles("#file-input", file);
    await page.waitForFunction(
      () => document.querySelector('#structure-summary dd[data-key="space_group"]')?.textContent !== "…",
    );
    const shown = await summary(page);
    const parsed = await (
      await fetch(`${svc.url}/api/structure/parse`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: readFileSync(file, "utf8"), filename: "Cod_2100513.cif" }),
      })
    ).json();
    const info = await (
      await fetch(`${svc.url}/api/structure/info`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ structure: parsed.structure }),
      })
    ).json();
    expect(shown.reduced_formula).toBe(info.reduced_formula);
    expect(shown.formula).toBe(info.formula);
    expect(shown.n_atoms).toBe(String(info.n_atoms));
    expect(shown.space_group).toBe(`${info.symmetry.space_group} (${info.symmetry.space_group_number})`);
    const { a, b, c, alpha, beta, gamma, volume } = info.lattice;
    expect(shown.abc).toBe([a, b, c].map((x: number) => x.toFixed(4)).join(", "));
    expect(shown.angles).toBe([alpha, beta, gamma].map((x: number) => x.toFixed(2)).join(", "));
    expect(shown.volume).toBe(volume.toFixed(3));
    expect(shown.density).toBe(info.density.toFixed(4));
    // And the same values straight from pymatgen, reading the same file.
    const pmg = await runPython<Record<string, string>>(
      `
import json, sys, warnings
warnings.simplefilter("ignore")
from pymatgen.core import Structure
from pymatgen.symmetry.analyzer import SpacegroupAnalyzer
s = Structure.from_file(json.load(sys.stdin))
sga = SpacegroupAnalyzer(s)
L = s.lattice
print(json.dumps({
  "formula": s.composition.formula, "reduced_formula": s.composition.reduced_formula, "n_atoms": str(len(s)),
  "space_group": f"{sga.get_space_group_symbol()} ({sga.get_space_group_number()})",
  "abc": ", ".join(f"{x:.4f}" for x in L.abc), "angles": ", ".join(f"{x:.2f}" for x in L.angles),
  "volume": f"{L.volume:.3f}", "density": f"{float(s.density):.4f}",
}))
`,
      file,
    );
    expect(shown).toMatchObject(pmg);
  });

  it("shows charge and spin for a molecule, and follows every edit", async () => {
    await page.selectOption("#examples", "water");
    expect(await summary(page)).toMatchObject({ reduced_formula: "H2O", n_atoms: "3", charge: "0", spin: "1" });
    await page.fill("#add-element", "H");
    await page.click("#btn-add");
    expect(await summary(page)).toMatchObject({ formula: "H3 O1", n_atoms: "4", spin: "2" });
  });

  it("explains a bad value beside its field and runs nothing", async () => {
    await page.selectOption("#examples", "nacl");
    await page.fill("#add-element", "Xx");
    await page.click("#btn-add");
    expect(await page.textContent("#add-error")).toMatch(/"Xx" is not an element symbol/);
    expect(await page.getAttribute("#add-element", "aria-invalid")).toBe("true");
    await page.fill("#sc-a", "0");
    await page.click("#btn-supercell");
    expect(await page.textContent("#sc-error")).toMatch(/at least 1/);
    await page.fill("#slab-h", "0");
    await page.fill("#slab-k", "0");
    await page.fill("#slab-l", "0");
    await page.click("#btn-slab");
    expect(await page.textContent("#slab-error")).toMatch(/cannot all be 0/);
    expect((await summary(page)).n_atoms).toBe("8");
    await page.fill("#sc-a", "2");
    await page.click("#btn-supercell");
    expect(await page.textContent("#sc-error")).toBe("");
    expect((await summary(page)).n_atoms).toBe("64");
  });

  it("adds an element picked from the periodic table", async () => {
    await page.selectOption("#examples", "water");
    await page.click('button.pick-element[data-target="add-element"]');
    await page.click('#periodic-table button[data-element="Fe"]');
    expect(await page.inputValue("#add-element")).toBe("Fe");
    await page.fill("#add-z", "3");
    await page.click("#btn-add");
    const s = await page.evaluate(() => window.atomstudio!.getStructure());
    expect((s as { sites: { species: { element: string }[]; xyz: number[] }[] }).sites.at(-1)).toMatchObject({
      species: [{ element: "Fe" }],
      xyz: [0, 0, 3],
    });
    expect(await page.locator('#element-legend tr[data-element="Fe"] td').first().textContent()).toBe("1");
  });

  it("measures a distance, an angle and a dihedral by clicking atoms, as pymatgen computes them", async () => {
    await page.selectOption("#examples", "benzene");
    await page.evaluate(() => window.atomstudio!.viewerTools.toggle_bonds!({ visible: false }));
    await page.evaluate(() => window.atomstudio!.viewerTools.set_atom_radius!({ radius: 0.25 }));
    await page.click("#btn-measure");
    const picks = [
      [0, 1],
      [0, 1, 2],
      [0, 1, 2, 3],
    ];
    for (const sites of picks) {
      await page.check(`input[name="measure-kind"][value="${sites.length}"]`);
      await page.click("#btn-measure");
      if ((await page.getAttribute("#btn-measure", "aria-pressed")) !== "true") await page.click("#btn-measure");
      for (const p of await clearShot(page, sites)) await page.mouse.click(p.x, p.y);
    }
    const listed = await page.$$eval("#measurements li", (li) => li.map((l) => Number((l as HTMLElement).dataset.value)));
    const dict = await page.evaluate(() => window.atomstudio!.getStructure());
    const want = await runPython<number[]>(
      `
import json, sys
from pymatgen.core import Molecule
d = json.load(sys.stdin)
m = Molecule.from_dict(d)
print(json.dumps([m.get_distance(0, 1), m.get_angle(0, 1, 2), m.get_dihedral(0, 1, 2, 3)]))
`,
      dict,
    );
    expect(listed).toHaveLength(3);
    for (const [k, v] of listed.entries()) expect(Math.abs(v - (want[k] as number))).toBeLessThan(1e-8);
    await page.keyboard.press("Escape");
    expect(await page.getAttribute("#btn-measure", "aria-pressed")).toBe("false");
  });

  it("keyboard: Ctrl+A selects all, Esc clears, Delete deletes, Ctrl+Z undoes, ? opens the help", async () => {
    await page.selectOption("#examples", "nacl");
    await page.locator("#viewer").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("Control+a");
    expect((await page.evaluate(() => window.atomstudio!.getSelection())).n_selected).toBe(8);
    await page.keyboard.press("Escape");
    expect((await page.evaluate(() => window.atomstudio!.getSelection())).n_selected).toBe(0);
    await page.evaluate(() => window.atomstudio!.setSelection([0, 1]));
    await page.keyboard.press("Delete");
    expect((await summary(page)).n_atoms).toBe("6");
    await page.keyboard.press("Control+z");
    expect((await summary(page)).n_atoms).toBe("8");
    await page.keyboard.press("?");
    expect(await page.isVisible("#help-dialog")).toBe(true);
    const rows = await page.$$eval("#shortcut-table tbody tr", (r) => r.map((x) => x.textContent));
    expect(rows.join("\n")).toMatch(/Ctrl\+A.*Select every atom/);
    await page.keyboard.press("Escape");
    expect(await page.isVisible("#help-dialog")).toBe(false);
  });

  it("every control is reachable by keyboard with a visible focus", async () => {
    await page.focus("#btn-open");
    const seen = new Set<string>();
    for (let k = 0; k < 60; k++) {
      await page.keyboard.press("Tab");
      const f = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el || el === document.body) return null;
        const style = getComputedStyle(el);
        return { id: el.id, outline: style.outlineStyle !== "none" && Number.parseFloat(style.outlineWidth) > 0 };
      });
      if (!f) continue;
      expect(f.outline, `focus ring on #${f.id}`).toBe(true);
      if (f.id) seen.add(f.id);
    }
    for (const id of ["btn-export", "btn-theme", "btn-help", "btn-select-all", "btn-measure", "add-element", "add-x", "btn-add"])
      expect(seen, id).toContain(id);
  });

  it("passes axe-core with no serious or critical violation, in both themes", async () => {
    for (const theme of ["light", "dark"]) {
      if ((await page.getAttribute("html", "data-theme")) !== theme) await page.click("#btn-theme");
      await page.addScriptTag({ content: axeSource });
      const violations = await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: unknown[] }> } }).axe;
        const r = await axe.run(document, { resultTypes: ["violations"] });
        return (r.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
          .filter((v) => v.impact === "serious" || v.impact === "critical")
          .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
      });
      expect(violations, theme).toEqual([]);
    }
    await page.click("#btn-theme");
    expect(await page.getAttribute("html", "data-theme")).toBe("light");
  });

  it("lays out at 1280×720 and 1920×1080 (screenshots kept as artefacts and compared with the baselines)", async () => {
    mkdirSync(ARTEFACTS, { recursive: true });
    await page.selectOption("#examples", "tio2");
    await page.waitForFunction(
      () => document.querySelector('#structure-summary dd[data-key="space_group"]')?.textContent !== "…",
    );
    // No hover effect or focus ring in the pictures: only what the layout itself draws.
    await page.mouse.move(0, 0);
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    for (const [w, h] of [
      [1280, 720],
      [1920, 1080],
    ] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.waitForTimeout(300);
      const layout = await page.evaluate(() => {
        const box = (sel: string) => document.querySelector(sel)!.getBoundingClientRect();
        return {
          scrollWidth: document.documentElement.scrollWidth,
          summaryBottom: box("#summary").bottom,
          viewer: box("#viewer"),
          toolbarRight: Math.max(
            ...Array.from(document.querySelectorAll("#toolbar > *")).map((e) => e.getBoundingClientRect().right),
          ),
        };
      });
      expect(layout.scrollWidth).toBeLessThanOrEqual(w);
      expect(layout.toolbarRight).toBeLessThanOrEqual(w);
      expect(layout.summaryBottom).toBeLessThan(h * 0.6);
      expect(layout.viewer.width).toBeGreaterThan(500);
      expect(layout.viewer.height).toBeGreaterThan(450);
      for (const theme of ["light", "dark"]) {
        if ((await page.getAttribute("html", "data-theme")) !== theme) await page.click("#btn-theme");
        await page.waitForTimeout(200);
        const name = `studio-${w}x${h}-${theme}.png`;
        const png = await page.screenshot({ path: join(ARTEFACTS, name) });
        const { share, baseline } = compareWithBaseline(name, png);
        if (!baseline) console.warn(`*** baseline ${name} written (no earlier baseline or ATOMSTUDIO_UPDATE_BASELINES=1) ***`);
        expect(share, `${name}: share of pixels unlike the baseline (diff image in .test-output/screenshots)`).toBeLessThan(
          MAX_DIFF_SHARE,
        );
      }
      await page.click("#btn-theme");
    }
    await page.setViewportSize({ width: 1280, height: 720 });
  });

  it("newcomer task: Pt(111) slab, CO on top, C–Pt distance measured, exported", async () => {
    await page.selectOption("#examples", "pt");
    await page.fill("#slab-h", "1");
    await page.fill("#slab-k", "1");
    await page.fill("#slab-l", "1");
    await page.fill("#slab-thickness", "3");
    await page.fill("#slab-vacuum", "12");
    await page.click("#btn-slab");
    const slab = (await page.evaluate(() => window.atomstudio!.getStructure())) as { sites: { xyz: number[] }[] };
    const top = slab.sites.reduce((best, s, i) => ((s.xyz[2] as number) > (slab.sites[best]!.xyz[2] as number) ? i : best), 0);
    await page.evaluate((i) => window.atomstudio!.setSelection([i]), top);
    await page.check("#add-relative");
    await page.fill("#add-element", "C");
    for (const [k, v] of Object.entries({ x: "0", y: "0", z: "1.85" })) await page.fill(`#add-${k}`, v);
    await page.click("#btn-add");
    const c = slab.sites.length;
    await page.evaluate((i) => window.atomstudio!.setSelection([i]), c);
    await page.fill("#add-element", "O");
    await page.fill("#add-z", "1.15");
    await page.click("#btn-add");
    expect((await summary(page)).formula).toMatch(/^Pt\d+ C1 O1$/);

    await page.evaluate(() => window.atomstudio!.viewerTools.toggle_bonds!({ visible: false }));
    await page.evaluate(() => window.atomstudio!.viewerTools.set_atom_radius!({ radius: 0.3 }));
    await page.check('input[name="measure-kind"][value="2"]');
    await page.click("#btn-measure-clear");
    if ((await page.getAttribute("#btn-measure", "aria-pressed")) !== "true") await page.click("#btn-measure");
    for (const p of await clearShot(page, [c, top])) await page.mouse.click(p.x, p.y);
    const li = page.locator("#measurements li").first();
    expect(await li.textContent()).toMatch(/distance C\d+–Pt\d+: 1\.8500 Å/);

    await page.selectOption("#export-format", "poscar");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#btn-export")]);
    const text = readFileSync((await download.path()) as string, "utf8");
    const back = parseStructureFile(text, { filename: download.suggestedFilename() }).structure;
    expect(structureFormula(back)).toMatch(/^Pt\d+ C1 O1$/);
  });
});
