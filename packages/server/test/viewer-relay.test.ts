/**
 * The viewer relay without a browser: studios here are bare WebSocket clients speaking the relay
 * protocol (decisions §5). Covers 503 / 504 / disconnect / 404 / 400, studio choice (client_id,
 * X-Viewer-Client, most recently active), the token on the WebSocket, and the tool listings.
 */
import { density, fromDict, supercell, toDict } from "atomstudio-core";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { fakeStudio, type RunningService, startService } from "../../studio/test/support.ts";
import { SYMMETRY_MAX_ATOMS } from "../src/operations/viewer.ts";
import { DEFAULT_VIEWER_TIMEOUT_MS } from "../src/viewer/plugin.ts";
import { cuCell } from "./helpers.ts";

const running: RunningService[] = [];
const closers: (() => void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) c();
  for (const s of running.splice(0)) await s.close();
});

const service = async (opts: Parameters<typeof startService>[0] = {}) => {
  const s = await startService({ studio: false, ...opts });
  running.push(s);
  return s;
};

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

const PNG_1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

describe("viewer relay", () => {
  it("keeps the interface's 10 s reply timeout as the production default", () => {
    expect(DEFAULT_VIEWER_TIMEOUT_MS).toBe(10_000);
  });

  it("answers 503 NO_VIEWER on every viewer endpoint when no studio is connected", async () => {
    const s = await service();
    for (const r of [
      await post(`${s.url}/api/view/screenshot`, {}),
      await fetch(`${s.url}/api/view/structure-info`),
      await fetch(`${s.url}/api/view/selection`),
    ]) {
      expect(r.status).toBe(503);
      expect((await r.json()).code).toBe("NO_VIEWER");
    }
  });

  it("answers 504 VIEWER_TIMEOUT when the studio never replies", async () => {
    const s = await service({ timeoutMs: 300 });
    const studio = await fakeStudio(s.url, () => undefined);
    closers.push(studio.close);
    const t0 = Date.now();
    const r = await fetch(`${s.url}/api/view/selection`);
    expect(r.status).toBe(504);
    expect((await r.json()).code).toBe("VIEWER_TIMEOUT");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(280);
    expect(studio.received).toEqual(["get_selection"]);
  });

  it("fails at once with 503 when the studio disconnects while handling a request", async () => {
    const s = await service({ timeoutMs: 8000 });
    let ws: WebSocket | undefined;
    const studio = await fakeStudio(s.url, () => {
      setTimeout(() => ws?.close(), 50);
      return undefined;
    });
    ws = studio.ws;
    const t0 = Date.now();
    const r = await post(`${s.url}/api/view/screenshot`, { width: 10, height: 10 });
    expect(r.status).toBe(503);
    expect((await r.json()).code).toBe("NO_VIEWER");
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it("drops a studio that stops answering pings, so requests fail with 503 instead of waiting", async () => {
    const s = await service({ timeoutMs: 8000, heartbeatMs: 100 });
    // A client that never answers pings (a connection that died without closing).
    const ws = new WebSocket(`${s.url.replace(/^http/, "ws")}/api/view/ws`, { autoPong: false });
    closers.push(() => ws.terminate());
    await new Promise((resolve) => ws.once("message", resolve));
    const closed = new Promise((resolve) => ws.once("close", resolve));
    await closed;
    const t0 = Date.now();
    const r = await fetch(`${s.url}/api/view/selection`);
    expect(r.status).toBe(503);
    expect(Date.now() - t0).toBeLessThan(2000);
    // A live studio (the ws client answers pings by itself) stays connected.
    const live = await fakeStudio(s.url, () => ({ ok: true, result: { selected_indices: [], selected_atoms: [] } }));
    closers.push(live.close);
    await new Promise((r) => setTimeout(r, 500));
    expect((await fetch(`${s.url}/api/view/selection`)).status).toBe(200);
  });

  it("relays a screenshot and reports its size", async () => {
    const s = await service();
    const seen: unknown[] = [];
    const studio = await fakeStudio(s.url, (cmd, params) => {
      seen.push({ cmd, params });
      return { ok: true, result: { image: PNG_1x1, format: "png", width: 1, height: 1 } };
    });
    closers.push(studio.close);
    const r = await post(`${s.url}/api/view/screenshot`, { width: 1, height: 1, camera: { rotation: [10, 20, 30], zoom: 2 } });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toMatchObject({ image: PNG_1x1, format: "png", width: 1, height: 1 });
    expect(body.size_bytes).toBe(Buffer.from(PNG_1x1, "base64").length);
    expect(seen[0]).toEqual({
      cmd: "screenshot",
      params: {
        width: 1,
        height: 1,
        format: "png",
        quality: 0.92,
        transparent: false,
        camera: { rotation: [10, 20, 30], zoom: 2 },
      },
    });
  });

  it("validates screenshot requests before asking the studio (400)", async () => {
    const s = await service();
    const cases: [unknown, string][] = [
      [{ format: "gif" }, "INVALID_FORMAT"],
      [{ width: 0 }, "INVALID_DIMENSIONS"],
      [{ height: 10.5 }, "INVALID_DIMENSIONS"],
      [{ width: 100_000 }, "INVALID_DIMENSIONS"],
      [{ quality: 1.5 }, "INVALID_QUALITY"],
    ];
    for (const [body, code] of cases) {
      const r = await post(`${s.url}/api/view/screenshot`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((await r.json()).code).toBe(code);
    }
  });

  it("computes structure-info from the structure the studio reports, and 404 when none is loaded", async () => {
    const s = await service();
    let structure: unknown = cuCell;
    const studio = await fakeStudio(s.url, () => ({ ok: true, result: { structure } }));
    closers.push(studio.close);
    const r = await fetch(`${s.url}/api/view/structure-info`);
    expect(r.status).toBe(200);
    const info = await r.json();
    expect(info).toMatchObject({ formula: "Cu4", reduced_formula: "Cu", n_atoms: 4, has_lattice: true, is_molecule: false });
    expect(info.symmetry).toMatchObject({ space_group: "Fm-3m", space_group_number: 225, crystal_system: "cubic" });
    expect(info.sites).toHaveLength(4);
    structure = null;
    const r2 = await fetch(`${s.url}/api/view/structure-info`);
    expect(r2.status).toBe(404);
    expect((await r2.json()).code).toBe("NO_STRUCTURE_LOADED");
  });

  it("analyses a 256-atom supercell quickly, with every other field", async () => {
    const s = await service();
    const big = toDict(supercell(fromDict(cuCell), [4, 4, 4]));
    const studio = await fakeStudio(s.url, () => ({ ok: true, result: { structure: big } }));
    closers.push(studio.close);
    expect(big.sites.length).toBeLessThan(SYMMETRY_MAX_ATOMS);
    const t = performance.now();
    const info = await (await fetch(`${s.url}/api/view/structure-info`)).json();
    expect(performance.now() - t).toBeLessThan(5000);
    const st = fromDict(big);
    expect(info).toMatchObject({ formula: "Cu256", reduced_formula: "Cu", n_atoms: 256, has_lattice: true, is_molecule: false });
    expect(info.symmetry).toMatchObject({ space_group: "Fm-3m", space_group_number: 225 });
    expect(info.lattice.a).toBeCloseTo(4 * 3.61, 9);
    expect(info.density).toBeCloseTo(density(st) as number, 9);
    expect(info.sites[77]).toEqual({
      index: 77,
      element: "Cu",
      xyz: [...st.cart.slice(231, 234)],
      abc: [...st.frac.slice(231, 234)],
      label: st.labels[77],
    });
  });

  it("passes a studio's error through with its code", async () => {
    const s = await service();
    const studio = await fakeStudio(s.url, () => ({
      ok: false,
      error: { code: "INVALID_FORMAT", message: "cannot encode webp" },
    }));
    closers.push(studio.close);
    const r = await post(`${s.url}/api/view/screenshot`, { format: "webp" });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ code: "INVALID_FORMAT", error: "cannot encode webp" });
    const studio2 = await fakeStudio(s.url, () => ({ ok: false, error: "boom" }));
    closers.push(studio2.close);
    const r2 = await fetch(`${s.url}/api/view/selection`);
    expect(r2.status).toBe(502);
    expect((await r2.json()).code).toBe("VIEWER_ERROR");
  });

  it("routes to the studio named by client_id or X-Viewer-Client, else the most recently active", async () => {
    const s = await service();
    const answer = (name: string) => () => ({
      ok: true,
      result: { selected_indices: [name === "a" ? 1 : 2], selected_atoms: [] },
    });
    const a = await fakeStudio(s.url, answer("a"), { clientId: "a" });
    const b = await fakeStudio(s.url, answer("b"), { clientId: "b" });
    closers.push(a.close, b.close);
    expect([a.clientId, b.clientId]).toEqual(["a", "b"]);
    const sel = async (path: string, headers: Record<string, string> = {}) =>
      (await (await fetch(`${s.url}${path}`, { headers })).json()).selected_indices[0];
    expect(await sel("/api/view/selection?client_id=a")).toBe(1);
    expect(await sel("/api/view/selection", { "x-viewer-client": "b" })).toBe(2);
    // b connected last; then a reports activity and becomes the most recently active.
    expect(await sel("/api/view/selection")).toBe(2);
    await new Promise((r) => setTimeout(r, 5));
    a.ws.send(JSON.stringify({ type: "activity" }));
    await new Promise((r) => setTimeout(r, 50));
    expect(await sel("/api/view/selection")).toBe(1);
    const r = await fetch(`${s.url}/api/view/selection?client_id=nobody`);
    expect(r.status).toBe(503);
  });

  it("needs the token on the WebSocket when the service has one", async () => {
    const s = await service({ token: "s3cret-token" });
    await expect(fakeStudio(s.url, () => undefined)).rejects.toThrow(/401/);
    const studio = await fakeStudio(s.url, () => ({ ok: true, result: { selected_indices: [], selected_atoms: [] } }), {
      token: "s3cret-token",
    });
    closers.push(studio.close);
    const unauth = await fetch(`${s.url}/api/view/selection`);
    expect(unauth.status).toBe(401);
    const r = await fetch(`${s.url}/api/view/selection`, { headers: { authorization: "Bearer s3cret-token" } });
    expect(r.status).toBe(200);
  });

  it("lists the viewer tools for MCP and the assistant", async () => {
    const s = await service();
    const tools = await (await fetch(`${s.url}/api/tools`)).json();
    const mcp = Object.fromEntries(tools.mcp.map((t: { name: string }) => [t.name, t]));
    const assistant = Object.fromEntries(tools.assistant.map((t: { name: string }) => [t.name, t]));
    expect(mcp.svc_screenshot.endpoint).toEqual({ method: "POST", path: "/api/view/screenshot" });
    expect(mcp.svc_structure_info.endpoint).toEqual({ method: "GET", path: "/api/view/structure-info" });
    expect(mcp.svc_selection.endpoint).toEqual({ method: "GET", path: "/api/view/selection" });
    for (const name of ["take_screenshot", "get_structure_info", "get_selection"]) {
      expect(assistant[name].replaces_structure).toBe(false);
      expect(assistant[name].inject).toBeUndefined();
    }
    expect(Object.keys(assistant.take_screenshot.input_schema.properties)).toEqual(
      expect.arrayContaining(["width", "height", "format"]),
    );
  });
});
