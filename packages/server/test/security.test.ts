/** Safety defaults of decisions §7: loopback, bearer token, CORS allowlist, body cap. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { cuCell, makeApp } from "./helpers.ts";

const addAtom = { structure: cuCell, element: "O", position: [0, 0, 0] };

describe("binding", () => {
  // [host, env, starts]
  const rows: Array<[string, Record<string, string>, boolean]> = [
    ["127.0.0.1", {}, true],
    ["localhost", {}, true],
    ["::1", {}, true],
    ["0.0.0.0", {}, false],
    ["0.0.0.0", { ATOMSTUDIO_TOKEN: "s3cret" }, true],
    ["0.0.0.0", { ATOMSTUDIO_ALLOW_UNAUTHENTICATED: "1" }, true],
  ];
  it.each(rows)("host %s with %j starts: %s", (host, env, starts) => {
    const load = () => loadConfig({ host }, env);
    if (starts) expect(load().host).toBe(host);
    else expect(load).toThrow(/ATOMSTUDIO_TOKEN/);
  });

  it("defaults to 127.0.0.1:8000", () => {
    const c = loadConfig({}, {});
    expect([c.host, c.port]).toEqual(["127.0.0.1", 8000]);
  });
});

describe("bearer token", () => {
  // [path, method, authorization, status]
  const rows: Array<[string, "GET" | "POST", string | undefined, number]> = [
    ["/api/health", "GET", undefined, 401],
    ["/api/health", "GET", "Bearer wrong", 401],
    ["/api/health", "GET", "Basic s3cret", 401],
    ["/api/health", "GET", "Bearer s3cret", 200],
    ["/api/structure-ops/add-atom", "POST", undefined, 401],
    ["/api/structure-ops/add-atom", "POST", "Bearer s3cret", 200],
    ["/mcp", "POST", undefined, 401],
    ["/api/openapi.json", "GET", undefined, 200],
  ];
  it.each(rows)("%s %s with %s → %i", async (url, method, authorization, status) => {
    const app = await makeApp({ token: "s3cret" });
    const res = await app.inject({
      method,
      url,
      headers: authorization ? { authorization } : {},
      ...(method === "POST" ? { payload: addAtom } : {}),
    });
    expect(res.statusCode).toBe(status);
    if (status === 401) expect(res.json().code).toBe("UNAUTHORIZED");
    expect(res.body).not.toContain("s3cret");
    await app.close();
  });
});

describe("CORS", () => {
  it("sends no CORS headers by default (same origin only)", async () => {
    const app = await makeApp();
    const res = await app.inject({ method: "GET", url: "/api/health", headers: { origin: "https://evil.example" } });
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    await app.close();
  });
  it("allows listed origins only", async () => {
    const app = await makeApp({ corsOrigins: ["https://lab.example"] });
    const ok = await app.inject({ method: "GET", url: "/api/health", headers: { origin: "https://lab.example" } });
    expect(ok.headers["access-control-allow-origin"]).toBe("https://lab.example");
    const no = await app.inject({ method: "GET", url: "/api/health", headers: { origin: "https://evil.example" } });
    expect(no.headers["access-control-allow-origin"]).toBeUndefined();
    await app.close();
  });
});

describe("body cap", () => {
  it("answers 413 PAYLOAD_TOO_LARGE above the cap", async () => {
    const app = await makeApp({ bodyLimit: 1024 });
    const res = await app.inject({
      method: "POST",
      url: "/api/structure-ops/add-atom",
      payload: { ...addAtom, padding: "x".repeat(4096) },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe("PAYLOAD_TOO_LARGE");
    await app.close();
  });
});
