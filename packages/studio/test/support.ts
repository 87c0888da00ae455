/**
 * Test support for the studio and the viewer relay: a listening service, headless Chromium
 * (Debian's, driven by playwright-core; no browser download), a studio page, image decoding in
 * the browser, a fake studio over WebSocket, and a throwaway redis-server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type Browser, chromium, type Page } from "playwright-core";
import WebSocket from "ws";
import { loadConfig, type ServiceConfig } from "../../server/src/config.ts";
import { buildApp } from "../../server/src/http/app.ts";
import type { Plugin } from "../../server/src/plugins.ts";
import { buildStudio, studioPlugin } from "../../server/src/studio/plugin.ts";
import { viewerPlugin } from "../../server/src/viewer/plugin.ts";

export const CHROMIUM = process.env.ATOMSTUDIO_CHROMIUM ?? "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
export const REDIS_SERVER = process.env.ATOMSTUDIO_REDIS_SERVER ?? "/usr/bin/redis-server";
export const hasRedis = existsSync(REDIS_SERVER);

// A skipped part must say why, loudly (the test command also prints a banner when anything was skipped).
if (!hasChromium)
  console.warn(
    `\n*** SKIPPING the browser tests: no Chromium at ${CHROMIUM}. Run scripts/setup-system as root (Debian's chromium) or set ATOMSTUDIO_CHROMIUM. ***\n`,
  );
if (!hasRedis)
  console.warn(
    `\n*** SKIPPING the Redis relay tests: no redis-server at ${REDIS_SERVER}. Run scripts/setup-system as root or set ATOMSTUDIO_REDIS_SERVER. ***\n`,
  );

/** Flags under which Debian's Chromium renders WebGL headless here (shared/notes/verified-here.md). */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--enable-unsafe-swiftshader",
  "--use-angle=swiftshader",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export interface RunningService {
  app: FastifyInstance;
  url: string;
  port: number;
  close(): Promise<void>;
}

export const startService = async (
  opts: {
    timeoutMs?: number;
    heartbeatMs?: number;
    redisUrl?: string;
    token?: string;
    studio?: boolean;
    studioDist?: string;
    /** Mounted between the viewer relay and the studio (e.g. the optimization WebSocket). */
    plugins?: readonly Plugin[];
  } = {},
): Promise<RunningService> => {
  const over: Partial<ServiceConfig> = { host: "127.0.0.1", port: 0, logLevel: "silent" };
  if (opts.studioDist) over.studioDist = opts.studioDist;
  if (opts.token) over.token = opts.token;
  if (opts.redisUrl) over.redisUrl = opts.redisUrl;
  const config = loadConfig(over, {});
  const plugins = [
    viewerPlugin({
      ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}),
    }),
  ];
  plugins.push(...(opts.plugins ?? []));
  if (opts.studio ?? true) plugins.push(studioPlugin({ autoBuild: false }));
  const { app } = await buildApp({ config, plugins });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const port = (app.server.address() as { port: number }).port;
  return { app, url: `http://127.0.0.1:${port}`, port, close: () => app.close() };
};

/** Build the studio when its dist is missing or older than its sources. */
export const ensureStudioBuilt = (): Promise<void> => buildStudio({ ifStale: true });

export const launchBrowser = async (): Promise<Browser> =>
  // Playwright starts Chromium with a fresh temporary profile of its own (no --user-data-dir needed).
  chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });

/** Open the studio and wait until its relay is connected. */
export const openStudio = async (
  browser: Browser,
  url: string,
  opts: { width?: number; height?: number; query?: string; token?: string } = {},
): Promise<Page> => {
  const context = await browser.newContext({
    viewport: { width: opts.width ?? 1000, height: opts.height ?? 700 },
    deviceScaleFactor: 1,
  });
  if (opts.token) await context.addInitScript((t) => localStorage.setItem("atomstudio.token", t), opts.token);
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error("[studio page error]", e.message));
  await page.goto(`${url}/${opts.query ? `?${opts.query}` : ""}`);
  await page.waitForSelector('body[data-relay="connected"]', { timeout: 60_000 });
  return page;
};

export interface StudioSession {
  browser: Browser;
  page: Page;
  url: string;
  close(): Promise<void>;
}

/**
 * What a panel's browser test starts with: the studio built, a service with `plugins` listening
 * on loopback, and a 1400x900 studio page in Chromium with its relay connected.
 */
export const openStudioSession = async (opts: { plugins?: readonly Plugin[] } = {}): Promise<StudioSession> => {
  await ensureStudioBuilt();
  const svc = await startService({ plugins: opts.plugins ?? [] });
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await svc.close();
  };
  try {
    browser = await launchBrowser();
    const page = await openStudio(browser, svc.url, { width: 1400, height: 900 });
    return { browser, page, url: svc.url, close };
  } catch (e) {
    await close();
    throw e;
  }
};

export interface ImageStats {
  width: number;
  height: number;
  /** Fraction of pixels that differ from the corner pixel (the background). */
  foreground: number;
  /** Fraction of fully transparent pixels. */
  transparent: number;
  /** A cheap fingerprint of the pixels (sum of channel values on a sparse grid). */
  fingerprint: number;
}

/** Decode an image with the browser and measure it. */
export const imageStats = async (page: Page, base64: string, mime: string): Promise<ImageStats> =>
  page.evaluate(
    async ({ b64, type }) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const bmp = await createImageBitmap(new Blob([bytes], { type }), { premultiplyAlpha: "none" });
      const c = document.createElement("canvas");
      c.width = bmp.width;
      c.height = bmp.height;
      const g = c.getContext("2d", { willReadFrequently: true }) as CanvasRenderingContext2D;
      g.drawImage(bmp, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      const [r0, g0, b0, a0] = [d[0], d[1], d[2], d[3]] as number[];
      let fg = 0;
      let tr = 0;
      let fp = 0;
      const n = c.width * c.height;
      for (let i = 0; i < n; i++) {
        const k = 4 * i;
        const r = d[k] as number;
        const gg = d[k + 1] as number;
        const b = d[k + 2] as number;
        const a = d[k + 3] as number;
        if (a === 0) tr++;
        if (
          Math.abs(r - (r0 as number)) +
            Math.abs(gg - (g0 as number)) +
            Math.abs(b - (b0 as number)) +
            Math.abs(a - (a0 as number)) >
          24
        )
          fg++;
        if (i % 97 === 0) fp = (fp + r * 3 + gg * 5 + b * 7 + a) % 1_000_000_007;
      }
      return { width: c.width, height: c.height, foreground: fg / n, transparent: tr / n, fingerprint: fp };
    },
    { b64: base64, type: mime },
  );

/** Pixel stats of what the page's viewer canvas shows now. */
export const canvasStats = async (page: Page): Promise<ImageStats> => {
  const b64 = await page.evaluate(() => {
    const c = document.querySelector("#viewer canvas") as HTMLCanvasElement;
    return c.toDataURL("image/png").split(",")[1] as string;
  });
  return imageStats(page, b64, "image/png");
};

/**
 * A studio that is only a WebSocket: answers with `answer`, or never when it returns undefined.
 * It may ask for a client id (and prove it owns it with the secret the service issued for it);
 * a connection the service refuses rejects with its HTTP status or WebSocket close code.
 */
export const fakeStudio = async (
  baseUrl: string,
  answer: (command: string, params: unknown) => unknown | undefined,
  opts: { clientId?: string; clientSecret?: string; token?: string } = {},
): Promise<{ ws: WebSocket; clientId: string; clientSecret: string; received: string[]; close(): void }> => {
  const q = new URLSearchParams();
  if (opts.clientId) q.set("client_id", opts.clientId);
  if (opts.clientSecret) q.set("client_secret", opts.clientSecret);
  if (opts.token) q.set("token", opts.token);
  const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/api/view/ws${q.size ? `?${q}` : ""}`);
  const received: string[] = [];
  const welcome = await new Promise<{ client_id: string; client_secret: string }>((resolve, reject) => {
    ws.once("error", reject);
    ws.once("close", (code, reason) => reject(new Error(`closed before welcome: ${code} ${reason}`)));
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data));
      if (msg.type === "welcome") return resolve(msg);
      received.push(msg.command);
      const out = answer(msg.command, msg.params);
      if (out !== undefined) ws.send(JSON.stringify({ id: msg.id, ...(out as object) }));
    });
  });
  return { ws, clientId: welcome.client_id, clientSecret: welcome.client_secret, received, close: () => ws.close() };
};

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });

/** A redis-server on a random loopback port with no persistence; stop() kills it. */
export const startRedis = async (): Promise<{ url: string; stop(): Promise<void> }> => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "atomstudio-redis-"));
  const proc: ChildProcess = spawn(
    REDIS_SERVER,
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("redis-server did not start")), 10_000);
    proc.stdout?.on("data", (d: Buffer) => {
      if (/Ready to accept connections/i.test(String(d))) {
        clearTimeout(t);
        resolve();
      }
    });
    proc.once("exit", (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      if (proc.exitCode === null) {
        const done = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await done;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
