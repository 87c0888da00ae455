/**
 * UFF in the real studio (headless Chromium): a distorted benzene opened as an XYZ file is relaxed
 * by the browser's UFF Web Worker through the optimization panel, and the final energy equals
 * RDKit's UFF minimum for the same start (RDKit run directly). Frozen atoms, cancel, undo in one
 * step, the refusal of a crystal, and the Worker kept from one run for the next are checked on the
 * same page.
 */
import { runPython, testdataPath } from "atomstudio-testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KCAL_PER_MOL_IN_EV } from "../../core/src/forcefield/uff/index.ts";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio, type RunningService, startService } from "./support.ts";

// RDKit embeds benzene, displaces every atom at random (seeded), and minimises it with its UFF.
const RDKIT_BENZENE = `
import json, sys
import numpy as np
from rdkit import Chem
from rdkit.Chem import AllChem, rdForceFieldHelpers
mol = Chem.AddHs(Chem.MolFromSmiles("c1ccccc1"))
AllChem.EmbedMolecule(mol, randomSeed=11)
conf = mol.GetConformer()
pos = np.array(conf.GetPositions()) + np.random.default_rng(11).normal(scale=0.08, size=(mol.GetNumAtoms(), 3))
for i, p in enumerate(pos):
    conf.SetAtomPosition(i, p.tolist())
ff = rdForceFieldHelpers.UFFGetMoleculeForceField(mol)
start = ff.CalcEnergy()
ff.Minimize(maxIts=100000, forceTol=1e-8, energyTol=1e-14)
xyz = f"{mol.GetNumAtoms()}\\ndistorted benzene\\n" + "".join(
    f"{a.GetSymbol()} {p[0]:.10f} {p[1]:.10f} {p[2]:.10f}\\n" for a, p in zip(mol.GetAtoms(), pos))
print(json.dumps({"xyz": xyz, "start": start, "minimum": ff.CalcEnergy()}))
`;

const panel = (page: Page, key: string) =>
  page.evaluate((k) => document.querySelector<HTMLElement>(".optimize-panel")?.dataset[k], key);

const waitForResult = (page: Page) =>
  page.waitForFunction(() => !!document.querySelector<HTMLElement>(".optimize-panel")?.dataset.result, undefined, {
    timeout: 60_000,
  });

describe.skipIf(!hasChromium)("UFF in the studio (browser Web Worker)", () => {
  let svc: RunningService;
  let browser: Browser;
  let page: Page;
  let oracle: { xyz: string; start: number; minimum: number };

  beforeAll(async () => {
    oracle = await runPython(RDKIT_BENZENE, {});
    await ensureStudioBuilt();
    svc = await startService();
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url, { width: 1400, height: 900 });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  const openXyz = async () => {
    await page.setInputFiles("#file-input", { name: "benzene.xyz", mimeType: "text/plain", buffer: Buffer.from(oracle.xyz) });
    await page.waitForFunction(() => window.atomstudio?.getStructure()?.sites?.length === 12);
  };

  it("is listed as available and runs in the browser", async () => {
    const res = await fetch(`${svc.url}/api/optimize/calculators`);
    const { calculators } = (await res.json()) as { calculators: { id: string; available: boolean; runs_in?: string }[] };
    expect(calculators.find((c) => c.id === "uff")).toMatchObject({ available: true, runs_in: "browser" });
    await page.waitForFunction(() => !!document.querySelector("#opt-calculator option[value=uff]:not([disabled])"));
  });

  it("relaxes a distorted benzene to RDKit's UFF minimum, live, and undoes in one step", async () => {
    await openXyz();
    const before = (await page.evaluate(() => window.atomstudio!.getStructure())) as { sites: { xyz: number[] }[] };
    await page.selectOption("#opt-calculator", "uff");
    await page.fill("#opt-fmax", "0.0001");
    await page.fill("#opt-steps", "2000");
    await page.click("#opt-run");
    await waitForResult(page);
    expect(await panel(page, "result")).toBe("converged");
    expect(Number(await panel(page, "steps"))).toBeGreaterThan(5);
    const energy = Number(await panel(page, "energy"));
    expect(Math.abs(energy - oracle.minimum * KCAL_PER_MOL_IN_EV)).toBeLessThan(1e-5);
    expect(energy).toBeLessThan(oracle.start * KCAL_PER_MOL_IN_EV);
    const after = (await page.evaluate(() => window.atomstudio!.getStructure())) as {
      sites: { xyz: number[]; properties: { forces?: number[] } }[];
    };
    expect(after.sites[0]?.xyz).not.toEqual(before.sites[0]?.xyz);
    expect(after.sites[0]?.properties.forces).toHaveLength(3);
    expect(await page.textContent("#opt-status")).toMatch(/Converged after \d+ steps/);
    // One undo returns to the structure before the run, not to an intermediate step.
    await page.evaluate(() => window.atomstudio!.undo());
    const undone = (await page.evaluate(() => window.atomstudio!.getStructure())) as { sites: { xyz: number[] }[] };
    expect(undone.sites.map((s) => s.xyz)).toEqual(before.sites.map((s) => s.xyz));
  });

  it("keeps frozen (selected) atoms exactly where they were", async () => {
    await openXyz();
    const before = (await page.evaluate(() => window.atomstudio!.getStructure())) as { sites: { xyz: number[] }[] };
    await page.evaluate(() => window.atomstudio!.setSelection([0, 6]));
    await page.check("#opt-freeze");
    await page.fill("#opt-fmax", "0.01");
    await page.click("#opt-run");
    await waitForResult(page);
    await page.uncheck("#opt-freeze");
    const after = (await page.evaluate(() => window.atomstudio!.getStructure())) as { sites: { xyz: number[] }[] };
    expect(await panel(page, "result")).toBe("converged");
    for (const i of [0, 6]) expect(after.sites[i]?.xyz).toEqual(before.sites[i]?.xyz);
    expect(after.sites[1]?.xyz).not.toEqual(before.sites[1]?.xyz);
  });

  it("cancel stops the run and leaves the last step shown", async () => {
    // A long, wavy alkane (C200H402), so the run is still going when cancel is pressed.
    const sites: { species: { element: string; occu: number }[]; xyz: number[] }[] = [];
    const add = (element: string, xyz: number[]) => sites.push({ species: [{ element, occu: 1 }], xyz });
    const n = 200;
    for (let i = 0; i < n; i++) {
      const c = [i * 1.28, (i % 2) * 0.9, 0.4 * Math.sin(i / 5)];
      add("C", c);
      add("H", [c[0] as number, (c[1] as number) + (i % 2 ? 0.6 : -0.6), (c[2] as number) + 0.9]);
      add("H", [c[0] as number, (c[1] as number) + (i % 2 ? 0.6 : -0.6), (c[2] as number) - 0.9]);
      if (i === 0) add("H", [-1, 0, 0]);
      if (i === n - 1) add("H", [(c[0] as number) + 1, c[1] as number, c[2] as number]);
    }
    await page.evaluate((s) => window.atomstudio!.setStructure(s), { "@class": "Molecule", sites });
    await page.selectOption("#opt-calculator", "uff");
    await page.fill("#opt-fmax", "0.00001");
    await page.fill("#opt-steps", "100000");
    await page.click("#opt-run");
    await page.waitForFunction(() => Number(document.querySelector<HTMLElement>(".optimize-panel")?.dataset.steps) > 3);
    await page.click("#opt-cancel");
    await waitForResult(page);
    expect(await panel(page, "result")).toBe("cancelled");
    expect(await panel(page, "running")).toBe("false");
  });

  it("refuses a crystal with a clear message", async () => {
    await page.setInputFiles("#file-input", testdataPath("structures/POSCAR_LiFePO4"));
    await page.waitForFunction(() => !!(window.atomstudio?.getStructure() as { lattice?: unknown } | null)?.lattice);
    await page.fill("#opt-fmax", "0.05");
    await page.click("#opt-run");
    await waitForResult(page);
    expect(await panel(page, "result")).toBe("error");
    expect(await page.textContent("#opt-status")).toMatch(/PERIODIC_NOT_SUPPORTED: UFF here is for molecules/);
  });

  it("keeps the Worker of a finished run for the next (not one ended by an error), with the same minimum", async () => {
    let started = 0;
    const count = () => started++;
    page.on("worker", count);
    const relax = async () => {
      await openXyz();
      await page.fill("#opt-fmax", "0.0001");
      await page.click("#opt-run");
      await waitForResult(page);
      expect(await panel(page, "result")).toBe("converged");
      expect(Math.abs(Number(await panel(page, "energy")) - oracle.minimum * KCAL_PER_MOL_IN_EV)).toBeLessThan(1e-5);
    };
    // The previous test's run ended with an error, so its Worker was terminated: a fresh one.
    await relax();
    expect(started).toBe(1);
    // The finished run's Worker takes the next run.
    await relax();
    expect(started).toBe(1);
    page.off("worker", count);
  });
});
