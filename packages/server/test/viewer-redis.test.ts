/**
 * The viewer relay across service processes through Redis pub/sub (ATOMSTUDIO_REDIS_URL): two
 * services share a real redis-server (started here on a random loopback port, no persistence);
 * a request on one is answered by the studio connected to the other.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ensureStudioBuilt,
  fakeStudio,
  hasChromium,
  hasRedis,
  imageStats,
  launchBrowser,
  openStudio,
  type RunningService,
  startRedis,
  startService,
} from "../../studio/test/support.ts";
import { cuCell } from "./helpers.ts";

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe.skipIf(!hasRedis)("viewer relay through Redis", () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let a: RunningService;
  let b: RunningService;
  const closers: (() => void)[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    a = await startService({ redisUrl: redis.url, timeoutMs: 30_000, studio: false });
    b = await startService({ redisUrl: redis.url, timeoutMs: 30_000 });
  });
  afterEach(async () => {
    for (const c of closers.splice(0)) c();
    await new Promise((r) => setTimeout(r, 100));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  it("answers a request on one service with the studio connected to the other", async () => {
    const studio = await fakeStudio(b.url, (cmd) =>
      cmd === "get_structure" ? { ok: true, result: { structure: cuCell } } : undefined,
    );
    closers.push(studio.close);
    await new Promise((r) => setTimeout(r, 50));
    const r = await fetch(`${a.url}/api/view/structure-info`);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ formula: "Cu4", n_atoms: 4, symmetry: { space_group_number: 225 } });
    expect(studio.received).toEqual(["get_structure"]);
  });

  it("routes by client id and to the most recently active studio across processes", async () => {
    const sel = (name: number) => () => ({ ok: true, result: { selected_indices: [name], selected_atoms: [] } });
    const onA = await fakeStudio(a.url, sel(1), { clientId: "studio-on-a" });
    const onB = await fakeStudio(b.url, sel(2), { clientId: "studio-on-b" });
    closers.push(onA.close, onB.close);
    await new Promise((r) => setTimeout(r, 50));
    const ask = async (svc: RunningService, q = "") =>
      (await (await fetch(`${svc.url}/api/view/selection${q}`)).json()).selected_indices[0];
    expect(await ask(a, "?client_id=studio-on-b")).toBe(2);
    expect(await ask(b, "?client_id=studio-on-a")).toBe(1);
    // The one on b connected last; then the one on a is used.
    expect(await ask(a)).toBe(2);
    await new Promise((r) => setTimeout(r, 300));
    onA.ws.send(JSON.stringify({ type: "activity" }));
    await new Promise((r) => setTimeout(r, 100));
    expect(await ask(b)).toBe(1);
    expect(await ask(a)).toBe(1);
  });

  it("keeps 504 and the immediate 503 on disconnect across processes", async () => {
    // The requesting service's timeout applies (here a short one; production: 10 s).
    const quick = await startService({ redisUrl: redis.url, timeoutMs: 800, studio: false });
    closers.push(() => void quick.close());
    const silent = await fakeStudio(b.url, () => undefined, { clientId: "silent" });
    closers.push(silent.close);
    await new Promise((r) => setTimeout(r, 50));
    let t0 = Date.now();
    const r = await fetch(`${quick.url}/api/view/selection?client_id=silent`);
    expect(r.status).toBe(504);
    expect((await r.json()).code).toBe("VIEWER_TIMEOUT");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(750);

    let ws: { close(): void } | undefined;
    const leaving = await fakeStudio(
      b.url,
      () => {
        setTimeout(() => ws?.close(), 30);
        return undefined;
      },
      { clientId: "leaving" },
    );
    ws = leaving.ws;
    await new Promise((r) => setTimeout(r, 50));
    t0 = Date.now();
    const r2 = await post(`${a.url}/api/view/screenshot?client_id=leaving`, { width: 10, height: 10 });
    expect(r2.status).toBe(503);
    expect((await r2.json()).code).toBe("NO_VIEWER");
    expect(Date.now() - t0).toBeLessThan(5000);

    // Gone from the registry: a named request for it is 503 at once.
    await new Promise((r) => setTimeout(r, 100));
    const r3 = await fetch(`${a.url}/api/view/selection?client_id=leaving`);
    expect(r3.status).toBe(503);
  });

  it("skips studios of a service process that died without cleaning up", async () => {
    const c = await startService({ redisUrl: redis.url, timeoutMs: 5000, studio: false });
    const studio = await fakeStudio(c.url, () => ({ ok: true, result: { selected_indices: [7], selected_atoms: [] } }), {
      clientId: "on-c",
    });
    await new Promise((r) => setTimeout(r, 50));
    expect((await (await fetch(`${a.url}/api/view/selection?client_id=on-c`)).json()).selected_indices).toEqual([7]);
    studio.close();
    await c.close();
    const r = await fetch(`${a.url}/api/view/selection?client_id=on-c`);
    expect(r.status).toBe(503);
  });

  it.skipIf(!hasChromium)(
    "returns a real screenshot from a studio page connected to the other service",
    async () => {
      await ensureStudioBuilt();
      const browser = await launchBrowser();
      try {
        const page = await openStudio(browser, b.url);
        const r = await post(
          `${a.url}/api/view/screenshot?client_id=${await page.evaluate(() => window.atomstudio?.clientId())}`,
          {
            width: 320,
            height: 200,
          },
        );
        const body = await r.json();
        expect(r.status, body.error).toBe(200);
        const stats = await imageStats(page, body.image, "image/png");
        expect(stats).toMatchObject({ width: 320, height: 200 });
        expect(stats.foreground).toBeGreaterThan(0.02);
      } finally {
        await browser.close();
      }
    },
    300_000,
  );
});
