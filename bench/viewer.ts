/**
 * Viewer speed: load-to-first-frame and screenshot round trip at 1920x1080 for 1,000 and
 * 10,000 atoms, with the real studio page in headless Chromium (software WebGL) relayed by the
 * service.
 *
 *   node --import tsx bench/viewer.ts [--repeat 3]
 *
 * load-to-first-frame: in the page, from handing the file text (pymatgen JSON) to the studio to
 * the first frame's pixels being readable (parse, scene with periodic images and bonds, 3Dmol
 * geometry, render, gl.finish). screenshot: from sending POST /api/view/screenshot to having
 * the whole response (relay both ways, render at 1920x1080, PNG encoding, base64).
 */
import { fromDict, supercell, toDict } from "atomstudio-core";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio, startService } from "../packages/studio/test/support.ts";

const repeat = Number(process.argv[process.argv.indexOf("--repeat") + 1]) || 3;

const cu = fromDict({
  lattice: {
    matrix: [
      [3.615, 0, 0],
      [0, 3.615, 0],
      [0, 0, 3.615],
    ],
  },
  sites: [
    [0, 0, 0],
    [0.5, 0.5, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5],
  ].map((abc) => ({ species: [{ element: "Cu", occu: 1 }], abc })),
});

const cases = [
  { n: 1000, make: () => supercell(cu, [5, 5, 10]) },
  { n: 10_000, make: () => supercell(supercell(cu, [5, 5, 5]), [2, 2, 5]) },
];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const main = async (): Promise<void> => {
  if (!hasChromium) throw new Error("Chromium is missing: run scripts/setup-system");
  await ensureStudioBuilt();
  const svc = await startService({ timeoutMs: 120_000 });
  const browser = await launchBrowser();
  const rows: Record<string, unknown>[] = [];
  try {
    const page = await openStudio(browser, svc.url, { width: 1600, height: 900 });
    for (const c of cases) {
      const s = c.make();
      if (s.length !== c.n) throw new Error(`expected ${c.n} atoms, got ${s.length}`);
      const text = JSON.stringify(toDict(s));
      const loads: number[] = [];
      for (let i = 0; i < repeat; i++) {
        const ms = await page.evaluate(async (t) => {
          const api = window.atomstudio!;
          const t0 = performance.now();
          api.openFile(t, "bench.json");
          // 3Dmol's renderer keeps its WebGL context as _gl; reading a pixel waits for the frame.
          const studio = (window as unknown as { __atomstudio: { viewer: { viewer: { getRenderer(): unknown } } } }).__atomstudio;
          const gl = (studio.viewer.viewer.getRenderer() as { _gl: WebGLRenderingContext })._gl;
          const px = new Uint8Array(4);
          gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
          return performance.now() - t0;
        }, text);
        loads.push(ms);
      }
      const shots: number[] = [];
      let bytes = 0;
      for (let i = 0; i < repeat + 1; i++) {
        const t0 = performance.now();
        const r = await fetch(`${svc.url}/api/view/screenshot`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ width: 1920, height: 1080, format: "png" }),
        });
        const body = (await r.json()) as { size_bytes: number; width: number; height: number; error?: string };
        const ms = performance.now() - t0;
        if (r.status !== 200 || body.width !== 1920 || body.height !== 1080) throw new Error(`screenshot failed: ${body.error}`);
        bytes = body.size_bytes;
        if (i > 0) shots.push(ms); // the first one warms up
      }
      const drawn = await page.evaluate(() => {
        const s = (window as unknown as { __atomstudio: { viewer: { scene: { atoms: unknown[]; bonds: unknown[] } } } })
          .__atomstudio;
        return { atoms: s.viewer.scene.atoms.length, bonds: s.viewer.scene.bonds.length };
      });
      rows.push({
        atoms: c.n,
        drawn_atoms: drawn.atoms,
        bonds: drawn.bonds,
        load_to_first_frame_ms: Math.round(median(loads)),
        load_runs_ms: loads.map(Math.round),
        screenshot_1920x1080_png_ms: Math.round(median(shots)),
        screenshot_runs_ms: shots.map(Math.round),
        png_bytes: bytes,
      });
    }
  } finally {
    await browser.close();
    await svc.close();
  }
  console.table(rows.map(({ load_runs_ms, screenshot_runs_ms, ...r }) => r));
  console.log(JSON.stringify({ repeat, rows }, null, 1));
};

await main();
