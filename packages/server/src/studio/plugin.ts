/**
 * Serves the web studio (packages/studio, built by Vite) at `/`: files of its `dist` folder, and
 * `index.html` for any other GET path (single-page app), never for `/api` or `/mcp`, which stay
 * the service's (an unknown path there is a 404 ErrorResponse).
 *
 * When `dist` is missing the service builds it in the background (Vite, about half a minute) and
 * answers `/` with a page that says so and how to build it by hand:
 * `npm run build -w packages/studio`. Under Vitest (or with `ATOMSTUDIO_STUDIO_AUTOBUILD=0`) it
 * does not build on its own; tests call `buildStudio()`.
 * `ATOMSTUDIO_STUDIO_DIST` points at another built studio.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import type { ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";
import { sendError } from "../http/errors.ts";
import type { Plugin } from "../plugins.ts";

/** The studio package's folder (sources, vite config). */
export const studioPackageDir = (): string => fileURLToPath(new URL("../../../studio/", import.meta.url));

export const studioDistDir = (configured?: string): string => resolve(configured || join(studioPackageDir(), "dist"));

const newestMtime = (dir: string): number => {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return t;
};

/** Whether dist is missing or older than the studio's sources (or the core it bundles). */
export const studioIsStale = (outDir = studioDistDir()): boolean => {
  const index = join(outDir, "index.html");
  if (!existsSync(index)) return true;
  const pkg = studioPackageDir();
  const core = fileURLToPath(new URL("../../../core/src/", import.meta.url));
  const sources = [join(pkg, "src"), join(pkg, "index.html"), join(pkg, "vite.config.ts"), core].filter(existsSync);
  const built = statSync(index).mtimeMs;
  return sources.some((s) => (statSync(s).isDirectory() ? newestMtime(s) : statSync(s).mtimeMs) > built);
};

let building: Promise<void> | undefined;

/**
 * Build the studio with Vite (once per process at a time; across processes a lock directory
 * keeps two builds from writing dist together). `ifStale`: skip when dist is newer than sources.
 */
export const buildStudio = (opts: { ifStale?: boolean; outDir?: string } = {}): Promise<void> => {
  const outDir = opts.outDir ?? studioDistDir();
  building ??= (async () => {
    const lock = join(studioPackageDir(), ".build-lock");
    const deadline = Date.now() + 180_000;
    for (;;) {
      try {
        mkdirSync(lock);
        break;
      } catch {
        // Another process builds: wait for it, then look again. A lock older than 3 minutes is stale.
        try {
          if (Date.now() - statSync(lock).mtimeMs > 180_000) rmSync(lock, { recursive: true, force: true });
        } catch {
          // gone meanwhile
        }
        if (Date.now() > deadline) throw new Error("timed out waiting for another studio build");
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    try {
      if (opts.ifStale && !studioIsStale(outDir)) return;
      const vite = await import("vite");
      await vite.build({
        root: studioPackageDir(),
        logLevel: "warn",
        configFile: join(studioPackageDir(), "vite.config.ts"),
        // Into the folder the service serves (the configuration may point elsewhere).
        build: { outDir, emptyOutDir: true },
      });
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  })().finally(() => {
    building = undefined;
  });
  return building;
};

const notBuiltPage = (status: string): string => `<!doctype html><html><head><meta charset="utf-8"><title>AtomStudio</title>
<meta http-equiv="refresh" content="5"></head><body style="font-family:sans-serif;max-width:40em;margin:3em auto">
<h1>AtomStudio</h1><p>The web studio is not built yet. ${status}</p>
<p>To build it by hand: <code>npm run build -w packages/studio</code>, then reload.</p>
<p>The service's API is available meanwhile: <a href="/api/docs">/api/docs</a>.</p></body></html>`;

export interface StudioPluginOptions {
  /** Build dist in the background when missing; default: the configuration's `studioAutoBuild`. */
  autoBuild?: boolean;
}

export const studioPlugin =
  (opts: StudioPluginOptions = {}): Plugin =>
  async (app: FastifyInstance, ctx: ServiceContext) => {
    const dist = studioDistDir(ctx.config.studioDist);
    const autoBuild = opts.autoBuild ?? ctx.config.studioAutoBuild;
    let buildError: string | undefined;
    if (!existsSync(join(dist, "index.html")) && autoBuild) {
      app.log.warn(`The web studio is not built (${dist}); building it now with Vite`);
      buildStudio({ outDir: dist }).then(
        () => app.log.info("Web studio built"),
        (e: unknown) => {
          buildError = (e as Error).message;
          app.log.error({ err: buildError }, "Building the web studio failed");
        },
      );
    }

    await app.register(fastifyStatic, { root: dist, serve: false });

    // The studio's files carry no data (the page asks for the token itself): public.
    app.get("/*", { config: { public: true } }, async (req, reply) => {
      const path = decodeURIComponent((req.url.split("?")[0] as string).replace(/^\/+/, ""));
      if (/^(api|mcp)(\/|$)/.test(path)) return sendError(reply, req, serviceError("NOT_FOUND", `No route GET /${path}`));
      if (!existsSync(join(dist, "index.html"))) {
        const status = buildError
          ? `Building it failed: ${buildError}.`
          : building
            ? "It is being built now; this page reloads by itself."
            : "";
        return reply.code(503).type("text/html; charset=utf-8").send(notBuiltPage(status));
      }
      const file = normalize(join(dist, path));
      if (path && file.startsWith(dist + sep) && existsSync(file) && statSync(file).isFile()) {
        const hashed = path.startsWith("assets/");
        return reply.sendFile(path, { maxAge: hashed ? 31_536_000_000 : 0, immutable: hashed });
      }
      // An asset that is not there is a 404; any other path is a route of the single-page app.
      if (/\.[a-z0-9]{1,8}$/i.test(path)) return sendError(reply, req, serviceError("NOT_FOUND", `No file /${path}`));
      reply.header("cache-control", "no-cache");
      return reply.sendFile("index.html", { maxAge: 0 });
    });
  };
