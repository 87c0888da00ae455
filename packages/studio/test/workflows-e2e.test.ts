/**
 * The Workflows panel in the real studio (headless Chromium) against the real service: the
 * `atomstudio serve` process with its real job queue on a real redis-server (loopback) and its
 * real calculator worker (EMT). The panel offers the service's operations; the graph checks
 * show the service's own codes beside the node (and the service answers the same code); the
 * one-click template (slab → supercells → EMT relax each → lowest) runs with live node states
 * and the lowest energy is the smallest of the relaxations; an output opens in the viewer as an
 * undoable structure; a failing node shows its attempts and error while it retries, the panel
 * reattaches to the running workflow after a page reload, and Cancel stops it.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AnyStructureDict, fromDict, moveAtoms, supercell, toDict } from "atomstudio-core";
import { type ServeProcess, startServeProcess } from "atomstudio-testkit";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exampleById } from "../src/examples.ts";
import type { WorkflowDraft } from "../src/workflows/graph.ts";
import { ensureStudioBuilt, hasChromium, hasRedis, launchBrowser, openStudio, startRedis } from "./support.ts";

/** `atomstudio serve` on a free loopback port, its queue on `redisUrl`. */
const serve = (redisUrl: string, dataDir: string): Promise<ServeProcess> =>
  startServeProcess({ ATOMSTUDIO_REDIS_URL: redisUrl, ATOMSTUDIO_DATA_DIR: dataDir });

const panel = (page: Page, key: string) =>
  page.evaluate((k) => document.getElementById("workflows-panel")?.dataset[k] ?? null, key);

const nodeCodes = (page: Page, id: string) =>
  page.$$eval(`#workflows-panel li.wf-node[data-node="${id}"] .wf-node-issues li[data-code]`, (lis) =>
    lis.map((li) => (li as HTMLElement).dataset.code),
  );

const loadDraft = (page: Page, draft: WorkflowDraft) =>
  page.evaluate(
    (d) => (window as unknown as { __atomstudioWorkflows: { load(d: unknown): void } }).__atomstudioWorkflows.load(d),
    draft,
  );

/** The run state the panel shows, once it is one of `states`. */
const waitRunState = async (page: Page, states: string[], timeout = 120_000) => {
  await page.waitForFunction((s) => s.includes(document.getElementById("workflows-panel")?.dataset.runState ?? ""), states, {
    timeout,
  });
  return panel(page, "runState");
};

describe.skipIf(!hasChromium || !hasRedis)("Workflows panel in the studio, on the real queue", () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let svc: ServeProcess;
  let browser: Browser;
  let page: Page;
  const dataDir = mkdtempSync(join(tmpdir(), "atomstudio-wf-e2e-"));

  beforeAll(async () => {
    await ensureStudioBuilt();
    redis = await startRedis();
    svc = await serve(redis.url, dataDir);
    browser = await launchBrowser();
    page = await openStudio(browser, svc.url, { width: 1400, height: 1000 });
    await page.waitForFunction(() => Number(document.getElementById("workflows-panel")?.dataset.catalog ?? 0) > 0);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
    await redis?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("offers the service's operations plus map and select as node types", async () => {
    const types = await page.$$eval("#wf-add-type option", (os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(types).toEqual(
      expect.arrayContaining(["slab", "build_supercell_legacy", "optimize_structure", "energy", "map", "select"]),
    );
    expect(types.filter((t) => t.startsWith("workflow_") || t.startsWith("view_"))).toEqual([]);
  });

  const post = async (path: string, body: unknown) => {
    const r = await fetch(svc.url + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it.each<[string, WorkflowDraft, string, string]>([
    [
      "an unknown node type",
      { name: "bad", nodes: [{ id: "cook", type: "cook_dinner", params: {}, inputs: {} }] },
      "cook",
      "UNKNOWN_NODE_TYPE",
    ],
    [
      "a reference to a node that is not there",
      {
        name: "bad",
        nodes: [
          { id: "cells", type: "build_supercell_legacy", params: { scaling: "1x1x1" }, inputs: { structure: "ghost.structure" } },
        ],
      },
      "cells",
      "DANGLING_REFERENCE",
    ],
    [
      "two nodes reading each other",
      {
        name: "bad",
        nodes: [
          { id: "a", type: "supercell", params: { scaling: [1, 1, 1] }, inputs: { structure: "b.structure" } },
          { id: "b", type: "supercell", params: { scaling: [1, 1, 1] }, inputs: { structure: "a.structure" } },
        ],
      },
      "a",
      "CYCLE_DETECTED",
    ],
  ])("%s: the panel marks the node with the service's code, and the service answers it", async (_, draft, nodeId, code) => {
    await loadDraft(page, draft);
    await page.click("#wf-run");
    expect(await nodeCodes(page, nodeId)).toContain(code);
    expect(await page.textContent("#wf-status")).toMatch(/problem/);
    // Nothing was sent: no workflow id. The service itself refuses the same graph with the same code.
    expect(await panel(page, "workflowId")).toBeNull();
    const r = await post("/api/workflow/create", draft);
    expect([r.status, r.body.code]).toEqual([400, code]);
  });

  it("removing a node that another reads marks the reader DANGLING_REFERENCE", async () => {
    await page.click("#wf-template");
    expect(await panel(page, "issues")).toBe("0");
    await page.click('li.wf-node[data-node="supercells"] .wf-remove');
    expect(await nodeCodes(page, "relax")).toContain("DANGLING_REFERENCE");
  });

  it("runs the template (slab → supercells → EMT relax each → lowest) over three structures with live node states; lowest is the smallest energy", async () => {
    // A molecule in the viewer: the template starts from its own Cu crystal.
    await page.selectOption("#examples", "water");
    await page.click("#wf-template");
    expect(await page.$$eval("li.wf-node", (lis) => lis.map((li) => (li as HTMLElement).dataset.node))).toEqual([
      "slab",
      "supercells",
      "relax",
      "lowest",
    ]);
    // Fan out over three: the slab and two more crystals added to the supercell list from the viewer.
    for (const example of ["cu", "pt"]) {
      await page.selectOption("#examples", example);
      await page.click('li.wf-node[data-node="supercells"] button.wf-use-structure[data-param="structures"]');
    }
    expect(await page.textContent('li.wf-node[data-node="supercells"] .wf-structure[data-param="structures"]')).toBe(
      "structures: Cu4 (4 atoms), Pt4 (4 atoms)",
    );
    expect(await panel(page, "issues")).toBe("0");
    // Every state each node shows, as the panel draws it.
    await page.evaluate(() => {
      const seen: Record<string, string[]> = {};
      (window as unknown as { __wfSeen: typeof seen }).__wfSeen = seen;
      new MutationObserver(() => {
        for (const li of Array.from(document.querySelectorAll<HTMLElement>("li.wf-node"))) {
          const key = li.dataset.node as string;
          seen[key] ??= [];
          const list = seen[key];
          const s = li.dataset.state as string;
          if (list.at(-1) !== s) list.push(s);
        }
      }).observe(document.getElementById("wf-nodes") as HTMLElement, { attributes: true, subtree: true, childList: true });
    });
    await page.click("#wf-run");
    const state = await waitRunState(page, ["succeeded", "failed", "cancelled"]);
    const why = await page.$$eval("#wf-status, .wf-run-error", (els) => els.map((e) => e.textContent).join(" | "));
    expect(state, why).toBe("succeeded");
    const id = (await panel(page, "workflowId")) as string;
    expect(id).toMatch(/^wf_/);
    const seen = await page.evaluate(() => (window as unknown as { __wfSeen: Record<string, string[]> }).__wfSeen);
    // The last node was drawn waiting before it was drawn done: the states were followed live.
    expect(seen.lowest?.at(-1)).toBe("succeeded");
    expect(seen.lowest?.some((s) => ["pending", "queued", "running"].includes(s))).toBe(true);
    for (const n of ["slab", "supercells", "relax", "lowest"]) {
      expect(await page.getAttribute(`li.wf-node[data-node="${n}"]`, "data-state")).toBe("succeeded");
      expect(Number(await page.getAttribute(`li.wf-node[data-node="${n}"]`, "data-attempts"))).toBeGreaterThanOrEqual(1);
    }
    // The service's record: the lowest is the smallest of the relaxed energies.
    const status = (await (await fetch(`${svc.url}/api/workflow/${id}`)).json()) as {
      run: { nodes: { id: string; output: Record<string, unknown> }[] };
    };
    const out = (n: string) => status.run.nodes.find((x) => x.id === n)?.output as Record<string, unknown>;
    const energies = (out("relax").results as { energy: number }[]).map((r) => r.energy);
    expect(energies).toHaveLength(3);
    expect(await page.textContent('li.wf-node[data-node="relax"] .wf-meta')).toContain("3/3 items");
    expect(out("lowest").value).toBe(Math.min(...energies));
    expect(await page.textContent('li.wf-node[data-node="lowest"] .wf-value')).toContain(String(Math.min(...energies)));
  });

  it("opens a node's output structure in the viewer; undo returns to the structure before", async () => {
    const before = await page.evaluate(() =>
      (window as unknown as { atomstudio: { getStructure(): unknown } }).atomstudio.getStructure(),
    );
    await page.click('li.wf-node[data-node="lowest"] button.wf-open[data-path="structure"]');
    const opened = await page.evaluate(
      () =>
        (window as unknown as { atomstudio: { getStructure(): { sites: unknown[] } } }).atomstudio.getStructure().sites.length,
    );
    const id = (await panel(page, "workflowId")) as string;
    const status = (await (await fetch(`${svc.url}/api/workflow/${id}`)).json()) as {
      run: { nodes: { id: string; output: { structure: { sites: unknown[] } } }[] };
    };
    expect(opened).toBe(status.run.nodes.find((n) => n.id === "lowest")?.output.structure.sites.length);
    await page.click("#btn-undo");
    expect(
      await page.evaluate(() => (window as unknown as { atomstudio: { getStructure(): unknown } }).atomstudio.getStructure()),
    ).toEqual(before);
  });

  it("passes axe-core with no serious or critical violation with a finished workflow drawn", async () => {
    expect(await panel(page, "runState")).toBe("succeeded");
    await page.addScriptTag({ content: readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8") });
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: unknown[] }> } }).axe;
      const r = await axe.run("#workflows-panel", { resultTypes: ["violations"] });
      return (r.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
    });
    expect(violations).toEqual([]);
  });

  it("a failing node shows attempts and its error while it retries; after closing the page, a new one reattaches; Cancel stops it", {
    timeout: 180_000,
  }, async () => {
    // An EMT relaxation of 108 Cu atoms, one displaced, to 1e-6 eV/Å with a deadline of 0.1 s per
    // attempt: every attempt is stopped (504 DEADLINE_EXCEEDED, retried), and 8 retries with
    // exponential backoff (1, 2, 4, … 128 s) keep the run going long after the page is back.
    const cell = exampleById("cu")?.dict as unknown as AnyStructureDict;
    const displaced = toDict(moveAtoms(supercell(fromDict(cell), [3, 3, 3]), [0], [0.3, 0.2, 0.1]).structure);
    await page.evaluate(
      (d) => (window as unknown as { atomstudio: { setStructure(d: unknown): void } }).atomstudio.setStructure(d),
      displaced,
    );
    await page.click("#wf-new");
    await page.selectOption("#wf-add-type", "optimize_structure");
    await page.click("#wf-add");
    const node = 'li.wf-node[data-node="optimize_structure"]';
    await page.click(`${node} button.wf-use-structure`);
    for (const [param, value] of [
      ["calculator", "emt"],
      ["fmax", "0.000001"],
      ["max_steps", "10000"],
    ] as const) {
      await page.fill(`${node} input[data-param="${param}"]`, value);
      await page.dispatchEvent(`${node} input[data-param="${param}"]`, "change");
    }
    for (const [cls, value] of [
      ["wf-node-retries", "8"],
      ["wf-node-timeout", "0.1"],
    ] as const) {
      await page.fill(`${node} input.${cls}`, value);
      await page.dispatchEvent(`${node} input.${cls}`, "change");
    }
    await page.fill("#wf-name", "relaxation past its deadline");
    await page.dispatchEvent("#wf-name", "change");
    expect(await panel(page, "issues")).toBe("0");
    await page.click("#wf-run");
    // Between attempts (the job waiting for its retry) the node shows the last attempt's error.
    await page.waitForFunction(
      (sel) =>
        Number(document.querySelector<HTMLElement>(sel)?.dataset.attempts ?? 0) >= 2 &&
        document.querySelector(`${sel} .wf-run-error`) !== null,
      node,
      { timeout: 60_000 },
    );
    expect(await page.$$eval(`${node} .wf-run-error`, (e) => e.map((x) => (x as HTMLElement).dataset.code))).toEqual([
      "DEADLINE_EXCEEDED",
    ]);
    const id = (await panel(page, "workflowId")) as string;
    expect(await waitRunState(page, ["running", "queued"])).toMatch(/running|queued/);

    // "Close the browser, come back": the page is closed; a new one (same browser profile) finds the
    // workflow in localStorage and follows it again.
    const context = page.context();
    await page.close();
    page = await context.newPage();
    await page.goto(`${svc.url}/`);
    await page.waitForSelector('body[data-relay="connected"]', { timeout: 60_000 });
    await page.waitForFunction((wf) => document.getElementById("workflows-panel")?.dataset.workflowId === wf, id, {
      timeout: 30_000,
    });
    expect(await page.$$eval("#wf-saved li", (lis) => lis.map((li) => (li as HTMLElement).dataset.id))).toContain(id);
    expect(await waitRunState(page, ["running", "queued"])).toMatch(/running|queued/);
    expect(await page.$$eval("li.wf-node", (lis) => lis.map((li) => (li as HTMLElement).dataset.node))).toEqual([
      "optimize_structure",
    ]);

    await page.click("#wf-cancel");
    expect(await waitRunState(page, ["cancelled", "failed", "succeeded"], 30_000)).toBe("cancelled");
    expect(await page.getAttribute(node, "data-state")).toBe("cancelled");
  });
});
