/** The one configuration: every variable parsed in config.ts, documented in the README, read nowhere else. */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, PATTERN_SETTINGS, readSettings, SETTINGS } from "../src/config.ts";

const ROOT = resolve(import.meta.dirname, "../../..");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : /\.ts$/.test(name) ? [p] : [];
  });

describe("configuration", () => {
  it.each(Object.keys({ ...SETTINGS, ...PATTERN_SETTINGS }))("%s is in the README's configuration table", (name) => {
    expect(readme).toContain(`| \`${name}\``);
  });

  it("no module but config.ts reads process.env", () => {
    const offenders = ["core", "server", "studio"]
      .flatMap((pkg) => sources(join(ROOT, "packages", pkg, "src")))
      .filter((f) => !f.endsWith(join("server", "src", "config.ts")))
      .filter((f) => /process\.env\b/.test(readFileSync(f, "utf8")));
    expect(offenders).toEqual([]);
  });

  it.each([
    ["ATOMSTUDIO_PORT", "eighty"],
    ["ATOMSTUDIO_WORKERS", "0"],
    ["ATOMSTUDIO_MAX_BODY_MB", "-1"],
    ["ATOMSTUDIO_LOG_LEVEL", "loud"],
    ["ATOMSTUDIO_ALLOW_UNAUTHENTICATED", "maybe"],
  ])("a malformed %s=%s is refused, naming the variable", (name, value) => {
    expect(() => readSettings({ [name]: value })).toThrow(name);
  });

  it("defaults are the safe ones", () => {
    const c = loadConfig({}, {});
    expect(c).toMatchObject({
      host: "127.0.0.1",
      port: 8000,
      token: undefined,
      allowUnauthenticated: false,
      corsOrigins: [],
      bodyLimit: 64 * 1024 * 1024,
      viewerTimeoutMs: 10_000,
      symmetryMaxAtoms: 10_000,
      workers: 1,
    });
  });

  it("settings come typed from their variables", () => {
    const c = loadConfig(
      {},
      {
        ATOMSTUDIO_CORS_ORIGINS: "http://a.example, http://b.example",
        ATOMSTUDIO_WORKERS: "3",
        ATOMSTUDIO_MAX_BODY_MB: "1.5",
        ATOMSTUDIO_STUDIO_AUTOBUILD: "0",
        ATOMSTUDIO_TOKEN: "",
      },
    );
    expect(c.corsOrigins).toEqual(["http://a.example", "http://b.example"]);
    expect(c.workers).toBe(3);
    expect(c.bodyLimit).toBe(Math.round(1.5 * 1024 * 1024));
    expect(c.studioAutoBuild).toBe(false);
    expect(c.token).toBeUndefined();
  });
});
