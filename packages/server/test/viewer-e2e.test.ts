/**
 * The studio end to end in headless Chromium (Debian's, software WebGL): the service serves the
 * built studio at /, the page renders a structure, and the viewer endpoints are answered by the
 * real page over the relay: real screenshots at the requested size and format, structure-info of
 * what is loaded, selection from clicks, every viewer tool visible in screenshots, a studio that
 * goes away mid-request, the token prompt, and 10,000 atoms.
 */
import { fromDict, initSymmetry, structureInfo, supercell, toDict } from "atomstudio-core";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canvasStats,
  ensureStudioBuilt,
  hasChromium,
  type ImageStats,
  imageStats,
  launchBrowser,
  openStudio,
  type RunningService,
  startService,
} from "../../studio/test/support.ts";
import { cuCell } from "./helpers.ts";

type Shot = { image: string; format: string; width: number; height: number; size_bytes: number };

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

const MIME = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" } as const;

const magic = (b64: string): string => {
  const b = Buffer.from(b64, "base64");
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "png";
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "jpeg";
  if (b.subarray(0, 4).toString() === "RIFF" && b.subarray(8, 12).toString() === "WEBP") return "webp";
  return "unknown";
};

const silicon = () => {
  const fcc = [
    [0, 0, 0],
    [0.5, 0.5, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5],
  ];
  const abc = [...fcc, ...fcc.map(([x, y, z]) => [x! + 0.25, y! + 0.25, z! + 0.25])];
  return {
    "@module": "pymatgen.core.structure",
    "@class": "Structure",
    lattice: {
      matrix: [
        [5.431, 0, 0],
        [0, 5.431, 0],
        [0, 0, 5.431],
      ],
    },
    sites: abc.map((p, i) => ({
      species: [{ element: "Si", occu: 1 }],
      abc: p,
      properties: { forces: [Math.sin(i + 1), Math.cos(2 * i + 1), 0.5 * Math.sin(3 * i + 2)] },
    })),
  };
};

describe.skipIf(!hasChromium)("studio in headless Chromium", () => {
  let svc: RunningService;
  let browser: Browser;
  let page: Page;
  /** A page used only to decode images. */
  let decoder: Page;

  const shot = async (body: Record<string, unknown> = {}): Promise<Shot & { stats: ImageStats }> => {
    const r = await post(`${svc.url}/api/view/screenshot`, body);
    const json = (await r.json()) as Shot & { error?: string };
    expect(r.status, json.error).toBe(200);
    const stats = await imageStats(decoder, json.image, MIME[json.format as keyof typeof MIME]);
    return { ...json, stats };
  };

  const setStructure = (dict: unknown) =>
    page.evaluate((d) => window.atomstudio?.setStructure(d, { name: "test" }), dict as Record<string, unknown>);

  const tool = (name: string, input: Record<string, unknown> = {}) =>
    page.evaluate(([n, i]) => window.atomstudio?.viewerTools[n as string]?.(i as Record<string, unknown>), [
      name,
      input,
    ] as const);

  beforeAll(async () => {
    await ensureStudioBuilt();
    // Software WebGL on a shared machine can be slow: a long relay timeout here (production: 10 s).
    svc = await startService({ timeoutMs: 60_000 });
    browser = await launchBrowser();
    decoder = await (await browser.newContext()).newPage();
    page = await openStudio(browser, svc.url);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it("serves the studio at / with a single-page fallback that leaves /api alone", async () => {
    const index = await fetch(`${svc.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toMatch(/text\/html/);
    const html = await index.text();
    expect(html).toContain('id="assistant-panel"');
    expect(await (await fetch(`${svc.url}/some/studio/route`)).text()).toBe(html);
    const api = await fetch(`${svc.url}/api/no-such-thing`);
    expect(api.status).toBe(404);
    expect((await api.json()).code).toBe("NOT_FOUND");
    expect((await fetch(`${svc.url}/assets/missing.js`)).status).toBe(404);
  });

  it("loads a structure and renders non-blank pixels", async () => {
    const stats = await canvasStats(page);
    expect(stats.width).toBeGreaterThan(100);
    expect(stats.foreground).toBeGreaterThan(0.02);
  });

  it("answers POST /api/view/screenshot with a real image of the requested size and format", async () => {
    const png = await shot({});
    expect(png).toMatchObject({ format: "png", width: 1920, height: 1080 });
    expect(magic(png.image)).toBe("png");
    expect(png.size_bytes).toBe(Buffer.from(png.image, "base64").length);
    expect(png.stats).toMatchObject({ width: 1920, height: 1080, transparent: 0 });
    expect(png.stats.foreground).toBeGreaterThan(0.02);

    const jpeg = await shot({ width: 800, height: 600, format: "jpeg", quality: 0.8 });
    expect(magic(jpeg.image)).toBe("jpeg");
    expect(jpeg.stats).toMatchObject({ width: 800, height: 600 });
    expect(jpeg.stats.foreground).toBeGreaterThan(0.02);

    const webp = await shot({ width: 640, height: 360, format: "webp" });
    expect(magic(webp.image)).toBe("webp");
    expect(webp.stats).toMatchObject({ width: 640, height: 360 });
    expect(webp.stats.foreground).toBeGreaterThan(0.02);

    const lowQ = await shot({ width: 800, height: 600, format: "jpeg", quality: 0.1 });
    expect(lowQ.size_bytes).toBeLessThan(jpeg.size_bytes);
  }, 120_000);

  it("gives a transparent background when asked, and different images for different structures", async () => {
    const opaque = await shot({ width: 400, height: 300 });
    const clear = await shot({ width: 400, height: 300, transparent: true });
    expect(opaque.stats.transparent).toBe(0);
    expect(clear.stats.transparent).toBeGreaterThan(0.3);
    expect(clear.stats.transparent).toBeLessThan(0.999);

    await setStructure(cuCell);
    const cu = await shot({ width: 400, height: 300 });
    expect(cu.stats.foreground).toBeGreaterThan(0.02);
    expect(cu.stats.fingerprint).not.toBe(opaque.stats.fingerprint);
    // The camera override changes the picture without moving the live view.
    const turned = await shot({ width: 400, height: 300, camera: { rotation: [30, 45, 0], zoom: 0.8 } });
    expect(turned.stats.fingerprint).not.toBe(cu.stats.fingerprint);
    const again = await shot({ width: 400, height: 300 });
    expect(again.stats.fingerprint).toBe(cu.stats.fingerprint);
  }, 120_000);

  it("reports structure-info of the loaded structure, computed by the core", async () => {
    await setStructure(cuCell);
    const r = await fetch(`${svc.url}/api/view/structure-info`);
    expect(r.status).toBe(200);
    const info = await r.json();
    await initSymmetry();
    expect(info).toEqual(JSON.parse(JSON.stringify(structureInfo(fromDict(cuCell)))));
    expect(info).toMatchObject({ formula: "Cu4", n_atoms: 4, symmetry: { space_group_number: 225 } });
  });

  it("changes GET /api/view/selection when atoms are clicked (sites only, never image atoms)", async () => {
    await setStructure(silicon());
    await tool("set_rotation", { x: 17, y: 29, z: 5 });
    // Small spheres and no sticks, so that what is under the pointer is unambiguous.
    await tool("toggle_bonds", { visible: false });
    await tool("set_atom_radius", { radius: 0.3 });
    // Drawn atoms whose screen position is well apart from every other drawn atom's.
    const targets = await page.evaluate(() => {
      const s = (window as unknown as { __atomstudio: import("../../studio/src/studio.ts").Studio }).__atomstudio;
      const scene = s.viewer.scene!;
      const pts = s.viewer.atomsOnScreen();
      const clear = (i: number) => pts.every((q, j) => j === i || Math.hypot(q.x - pts[i]!.x, q.y - pts[i]!.y) > 25);
      const home = pts.map((_, i) => i).filter((i) => !scene.atoms[i]!.image && clear(i));
      const image = pts.map((_, i) => i).filter((i) => scene.atoms[i]!.image && clear(i));
      const at = (i: number) => ({ site: scene.atoms[i]!.site, ...pts[i]! });
      return { home: home.map(at), image: image.map(at), n: s.store.structure!.length };
    });
    expect(targets.home.length).toBeGreaterThanOrEqual(2);
    expect(targets.image.length).toBeGreaterThanOrEqual(1);
    const selection = async () => (await (await fetch(`${svc.url}/api/view/selection`)).json()) as Record<string, unknown>;
    expect((await selection()).n_selected).toBe(0);

    const [a, b] = targets.home;
    await page.mouse.click(a!.x, a!.y);
    expect(await selection()).toMatchObject({ selected_indices: [a!.site], n_selected: 1, has_selection: true });
    const sel = await selection();
    expect((sel.selected_atoms as { element: string }[])[0]!.element).toBe("Si");

    await page.keyboard.down("Shift");
    await page.mouse.click(b!.x, b!.y);
    await page.keyboard.up("Shift");
    expect((await selection()).selected_indices).toEqual([a!.site, b!.site].sort((x, y) => x - y));

    // An image atom selects its site.
    const img = targets.image.find((t) => t.site !== a!.site && t.site !== b!.site) ?? targets.image[0]!;
    await page.mouse.click(img.x, img.y);
    const imgSel = await selection();
    expect(imgSel.selected_indices).toEqual([img.site]);
    expect(img.site).toBeLessThan(targets.n);

    // Box selection (Alt-drag) over everything selects every site exactly once.
    const box = await page.evaluate(() => {
      const r = document.getElementById("viewer")!.getBoundingClientRect();
      return { x0: r.left + 2, y0: r.top + 2, x1: r.right - 2, y1: r.bottom - 2 };
    });
    await page.keyboard.down("Alt");
    await page.mouse.move(box.x0, box.y0);
    await page.mouse.down();
    await page.mouse.move((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2);
    await page.mouse.move(box.x1, box.y1);
    await page.mouse.up();
    await page.keyboard.up("Alt");
    expect((await selection()).selected_indices).toEqual([...Array(targets.n).keys()]);
    await tool("clear_selection");
    expect((await selection()).n_selected).toBe(0);
    await tool("toggle_bonds", { visible: true });
    await tool("set_atom_radius", { scale: 0.3 });
  });

  it("shows the effect of every viewer tool in screenshots", async () => {
    await setStructure(silicon());
    await tool("set_rotation", { x: 20, y: 30 });
    const size = { width: 480, height: 360 };
    const changes = async (name: string, input: Record<string, unknown> = {}) => {
      const before = await shot(size);
      const result = await tool(name, input);
      const after = await shot(size);
      expect(after.stats.fingerprint, `${name} ${JSON.stringify(input)} → ${JSON.stringify(result)}`).not.toBe(
        before.stats.fingerprint,
      );
      return result;
    };
    for (const t of ["toggle_atoms", "toggle_bonds", "toggle_unit_cell", "toggle_labels", "toggle_force_vectors"]) {
      await changes(t);
      await changes(t);
    }
    expect(await changes("toggle_force_vectors", { visible: true })).toMatchObject({ n_sites_with_forces: 8 });
    await changes("toggle_force_vectors", { visible: false });
    await changes("set_rotation", { x: 60, y: -20, z: 10 });
    await changes("reset_camera");
    await changes("set_rotation", { x: 20, y: 30 });
    expect(await changes("select_atoms", { indices: [0, 5] })).toMatchObject({ selected_indices: [0, 5] });
    await changes("clear_selection");
    expect(await changes("select_by_element", { element: "Si" })).toMatchObject({ n_selected: 8 });
    await changes("clear_selection");
    await changes("set_atom_radius", { radius: 0.9 });
    await changes("set_atom_radius", { scale: 0.3 });
    await changes("set_bond_color", { color: "#ff00ff" });
    await changes("set_bond_color", { color: "element" });
    // Bad input is an error with a code, and changes nothing.
    await expect(tool("select_atoms", { indices: [99] })).rejects.toThrow(/INVALID_INDEX/);
  }, 300_000);

  it("edits through the core and undoes them (the page's own buttons)", async () => {
    await setStructure(silicon());
    await tool("select_atoms", { indices: [0, 1] });
    await page.click("#btn-delete");
    let info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info.n_atoms).toBe(6);
    await page.click("#btn-undo");
    info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info.n_atoms).toBe(8);
    await page.fill("#sc-a", "2");
    await page.fill("#sc-b", "1");
    await page.fill("#sc-c", "1");
    await page.click("#btn-supercell");
    info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info).toMatchObject({ n_atoms: 16, lattice: { a: 2 * 5.431 } });
    await page.click("#btn-undo");
    info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info.n_atoms).toBe(8);
    await page.click("#btn-redo");
    info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info.n_atoms).toBe(16);
    // A (111) slab of the bulk, three layers, 10 Angstrom of vacuum.
    await page.click("#btn-undo");
    for (const [id, v] of [
      ["#slab-h", "1"],
      ["#slab-k", "1"],
      ["#slab-l", "1"],
      ["#slab-thickness", "3"],
      ["#slab-vacuum", "10"],
    ] as const)
      await page.fill(id, v);
    await page.click("#btn-slab");
    info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info.has_lattice).toBe(true);
    expect(info.n_atoms).toBeGreaterThan(0);
    expect(info.n_atoms).not.toBe(8);
    await page.click("#btn-undo");
  });

  it("opens files (picker), examples, and exports what is loaded", async () => {
    const poscar = [
      "Si2",
      "1.0",
      "0 2.715 2.715",
      "2.715 0 2.715",
      "2.715 2.715 0",
      "Si",
      "2",
      "Direct",
      "0 0 0",
      "0.25 0.25 0.25",
      "",
    ].join("\n");
    await page.setInputFiles("#file-input", { name: "POSCAR", mimeType: "text/plain", buffer: Buffer.from(poscar) });
    await page.waitForFunction(() => window.atomstudio?.getStructure()?.sites.length === 2);
    const info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info).toMatchObject({ formula: "Si2", n_atoms: 2, symmetry: { space_group_number: 227 } });

    // Drag and drop a file onto the viewer, and paste a file's text.
    const xyz = ["3", "water", "O 0 0 0.1173", "H 0 0.7572 -0.4692", "H 0 -0.7572 -0.4692", ""].join("\n");
    await page.evaluate((text) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], "water.xyz", { type: "text/plain" }));
      document
        .getElementById("viewer-wrap")!
        .dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
    }, xyz);
    await page.waitForFunction(() => window.atomstudio?.getStructure()?.sites.length === 3);
    expect(await (await fetch(`${svc.url}/api/view/structure-info`)).json()).toMatchObject({
      formula: "H2 O1",
      is_molecule: true,
    });
    await page.evaluate((text) => {
      const dt = new DataTransfer();
      dt.setData("text/plain", text);
      document.body.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
    }, poscar);
    await page.waitForFunction(() => window.atomstudio?.getStructure()?.sites.length === 2);

    await page.selectOption("#examples", "tio2");
    await page.waitForFunction(() => window.atomstudio?.getStructure()?.sites.length === 6);

    await page.selectOption("#export-format", "cif");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#btn-export")]);
    expect(download.suggestedFilename()).toMatch(/\.cif$/);
    const text = await (await download.createReadStream()).toArray();
    const cif = Buffer.concat(text as Buffer[]).toString();
    expect(cif).toContain("_cell_length_a");
    // The exported file opens again to the same structure.
    await page.evaluate((t) => window.atomstudio?.openFile(t, "again.cif"), cif);
    const again = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(again).toMatchObject({ reduced_formula: "TiO2", n_atoms: 6, symmetry: { space_group_number: 136 } });
  });

  it("fails at once with 503 NO_VIEWER when the studio goes away mid-request", async () => {
    const extra = await openStudio(browser, svc.url);
    // This studio is the most recently active: it gets the request, holds it, and its page closes.
    await extra.evaluate(() => {
      const s = (window as unknown as { __atomstudio: { relay: { handlers: Record<string, unknown>; activity(): void } } })
        .__atomstudio;
      s.relay.handlers.screenshot = () => new Promise(() => {});
    });
    const t0 = Date.now();
    const pending = post(`${svc.url}/api/view/screenshot`, { width: 100, height: 100 });
    await new Promise((r) => setTimeout(r, 300));
    await extra.context().close();
    const r = await pending;
    expect(r.status).toBe(503);
    expect((await r.json()).code).toBe("NO_VIEWER");
    expect(Date.now() - t0).toBeLessThan(5000);
    // The first studio answers again.
    await page.mouse.move(10, 10);
    await page.mouse.down();
    await page.mouse.up();
    expect((await post(`${svc.url}/api/view/screenshot`, { width: 50, height: 50 })).status).toBe(200);
  });

  it("opens and renders 10,000 atoms", async () => {
    const cu = fromDict(cuCell);
    const big = toDict(supercell(supercell(cu, [5, 5, 5]), [2, 2, 5]));
    expect(big.sites).toHaveLength(10_000);
    await setStructure(big);
    const stats = await canvasStats(page);
    expect(stats.foreground).toBeGreaterThan(0.05);
    const t = performance.now();
    const info = await (await fetch(`${svc.url}/api/view/structure-info`)).json();
    expect(info.n_atoms).toBe(10_000);
    // A supercell's symmetry is found on its translation-reduced cell: quick even at 10,000 atoms.
    expect(info.symmetry).toMatchObject({ space_group: "Fm-3m", space_group_number: 225 });
    expect(performance.now() - t).toBeLessThan(10_000);
    const png = await shot({ width: 1920, height: 1080 });
    expect(png.stats.foreground).toBeGreaterThan(0.05);
  }, 300_000);
});

describe.skipIf(!hasChromium)("studio with a service token", () => {
  let svc: RunningService;
  let browser: Browser;
  beforeAll(async () => {
    await ensureStudioBuilt();
    svc = await startService({ token: "tok-123" });
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it("asks for the token once, keeps it, and relays with it", async () => {
    const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
    const page = await context.newPage();
    let asked = 0;
    page.on("dialog", (d) => {
      asked++;
      void d.accept("tok-123");
    });
    await page.goto(`${svc.url}/`);
    await page.waitForSelector('body[data-relay="connected"]', { timeout: 60_000 });
    expect(asked).toBe(1);
    expect(await page.evaluate(() => localStorage.getItem("atomstudio.token"))).toBe("tok-123");
    const r = await post(`${svc.url}/api/view/screenshot`, { width: 64, height: 64 }, { authorization: "Bearer tok-123" });
    expect(r.status).toBe(200);
    // A reload does not ask again.
    await page.reload();
    await page.waitForSelector('body[data-relay="connected"]', { timeout: 60_000 });
    expect(asked).toBe(1);
    await context.close();
  });
});
