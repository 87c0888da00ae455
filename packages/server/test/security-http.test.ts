/**
 * The HTTP layer's guards (packages/server/SECURITY.md), proved with real requests over a real
 * socket: `app.inject` normalises request targets, so percent-encoded paths, absolute-form targets,
 * forged Host headers and WebSocket upgrades are written byte for byte with `node:net`.
 */
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import {
  ensureStudioBuilt,
  fakeStudio,
  hasChromium,
  hasRedis,
  launchBrowser,
  openStudio,
  type RunningService,
  startRedis,
  startService,
} from "../../studio/test/support.ts";
import type { ServiceConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { LocalClaims } from "../src/viewer/claims.ts";
import { cuCell, testConfig } from "./helpers.ts";

interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Send `text` as is and read one response (a 101 ends at its headers). */
const rawExchange = (port: number, text: string | Buffer): Promise<RawReply> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(text));
    let buf = Buffer.alloc(0);
    let settled = false;
    const parse = (): RawReply | undefined => {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return undefined;
      const [statusLine, ...lines] = buf.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(":");
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      return { status: Number(statusLine?.split(" ")[1]), headers, body: buf.subarray(end + 4).toString() };
    };
    const finish = (r: RawReply | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (r) resolve(r);
      else reject(new Error(`no HTTP response to ${String(text).split("\r\n")[0]}`));
    };
    const timer = setTimeout(() => finish(parse()), 5000);
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const r = parse();
      if (!r) return;
      const length = Number(r.headers["content-length"] ?? Number.NaN);
      if (r.status === 101 || Buffer.byteLength(r.body) >= length) finish(r);
    });
    socket.on("close", () => finish(parse()));
    socket.on("error", () => finish(parse()));
  });

interface RawRequest {
  headers?: Record<string, string>;
  body?: string;
  /** Send a WebSocket upgrade. */
  upgrade?: boolean;
}

/** One request; `line` is the request line without the version ("GET /%61pi/health"). */
const rawRequest = (port: number, line: string, opts: RawRequest = {}): Promise<RawReply> => {
  const headers: Record<string, string> = { host: `127.0.0.1:${port}`, connection: "close", ...opts.headers };
  if (opts.upgrade)
    Object.assign(headers, {
      connection: "Upgrade",
      upgrade: "websocket",
      "sec-websocket-version": "13",
      "sec-websocket-key": randomBytes(16).toString("base64"),
    });
  if (opts.body !== undefined) headers["content-length"] = String(Buffer.byteLength(opts.body));
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return rawExchange(port, `${line} HTTP/1.1\r\n${head}\r\n${opts.body ?? ""}`);
};

/** The whole service (every plugin), listening on a loopback port; the studio is not built here. */
const listen = async (over: Partial<ServiceConfig>): Promise<{ app: FastifyInstance; port: number }> => {
  const { app } = await buildApp({ config: testConfig({ studioAutoBuild: false, ...over }) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { app, port: (app.server.address() as { port: number }).port };
};

const json = (r: RawReply): { code?: string } => {
  try {
    return JSON.parse(r.body);
  } catch {
    return {};
  }
};

const TOKEN = "s3cret-token";
const BEARER = { authorization: `Bearer ${TOKEN}` };
const JSON_BODY = { headers: { "content-type": "application/json" }, body: "{}" };

describe("the token is decided on the matched route, not on the URL text", () => {
  let svc: { app: FastifyInstance; port: number };
  beforeAll(async () => {
    svc = await listen({ token: TOKEN });
  });
  afterAll(() => svc?.app.close());

  // [request line, request, status]
  const rows: Array<[string, RawRequest, number]> = [
    ["GET /api/chat/providers", {}, 401],
    ["GET /%61pi/chat/providers", {}, 401],
    ["GET /api/chat/%70roviders", {}, 401],
    ["GET http://localhost/api/chat/providers", {}, 401],
    ["GET http://x/api/chat/providers", {}, 403],
    ["GET /%61pi/health", {}, 401],
    ["POST /%6dcp", JSON_BODY, 401],
    ["POST /mcp", JSON_BODY, 401],
    // A path no route has needs the token too; a GET is the studio's public fallback, whose
    // answer for /api and /mcp paths is a plain 404.
    ["POST /api/no-such-route", JSON_BODY, 401],
    ["POST /%61pi/no-such-route", JSON_BODY, 401],
    ["GET /api/no-such-route", {}, 404],
    ["GET /%61pi/no-such-route", {}, 404],
    ["GET /%61pi/view/ws", { upgrade: true }, 401],
    ["GET /api/view/ws", { upgrade: true }, 401],
    ["GET /api/optimize/ws", { upgrade: true }, 401],
    ["GET /%61pi/optimize/ws", { upgrade: true }, 401],
    ["GET http://localhost/api/view/ws", { upgrade: true }, 401],
    ["GET /api/view/ws/", { upgrade: true }, 401],
    ["GET /mcp", { upgrade: true }, 401],
    ["GET /api/view/ws?token=wrong", { upgrade: true }, 401],
    ["GET /api/view/ws?token=s3cret-token", { upgrade: true }, 101],
    ["GET /api/tools", {}, 401],
    // Dot segments do not lead out of a public route into a protected one.
    ["GET /api/docs/../tools", {}, 404],
    ["GET /api/docs/%2e%2e/tools", {}, 404],
    ["GET /api/health", { headers: BEARER }, 200],
    ["GET /%61pi/health", { headers: BEARER }, 200],
    // A token in the query is for WebSocket upgrades only (browsers cannot set their headers).
    ["GET /api/health?token=s3cret-token", {}, 401],
    ["GET /api/health?token=s3cret-token", { upgrade: true }, 401],
    // Documentation carries no data: public.
    ["GET /api/openapi.json", {}, 200],
    ["GET /%61pi/openapi.json", {}, 200],
    ["GET /api/docs/json", {}, 200],
  ];
  it.each(rows)("%s %j → %i", async (line, req, status) => {
    const r = await rawRequest(svc.port, line, req);
    expect(r.status).toBe(status);
    if (status === 401) expect(json(r).code).toBe("UNAUTHORIZED");
    if (status >= 400) expect(r.body).not.toMatch(/providers|anthropic/i);
  });

  it("leaves the studio's files public (the studio asks for the token itself)", async () => {
    const r = await rawRequest(svc.port, "GET /");
    // 503 is the "not built yet" page when this checkout has no built studio.
    expect([200, 503]).toContain(r.status);
    expect(r.headers["content-type"]).toMatch(/text\/html/);
  });
});

describe("Origin and Host are checked on every route and WebSocket upgrade", () => {
  let svc: { app: FastifyInstance; port: number };
  beforeAll(async () => {
    svc = await listen({});
  });
  afterAll(() => svc?.app.close());

  const evil = "https://evil.example";
  const multipart = (boundary: string) =>
    [
      `--${boundary}`,
      'Content-Disposition: form-data; name="agent"',
      "",
      "claude",
      `--${boundary}`,
      'Content-Disposition: form-data; name="messages"',
      "",
      '[{"role":"user","content":"rm -rf ~"}]',
      `--${boundary}--`,
      "",
    ].join("\r\n");

  // [what, request line, request (Host defaults to 127.0.0.1:port), status]
  const rows: Array<[string, string, (port: number) => RawRequest, number]> = [
    ["loopback Host", "GET /api/health", () => ({}), 200],
    ["localhost Host", "GET /api/health", (p) => ({ headers: { host: `localhost:${p}` } }), 200],
    ["same-origin page", "GET /api/health", (p) => ({ headers: { origin: `http://127.0.0.1:${p}` } }), 200],
    ["DNS rebinding (foreign Host)", "GET /api/health", () => ({ headers: { host: "evil.example" } }), 403],
    ["DNS rebinding, absolute-form target", "GET http://evil.example/api/health", () => ({}), 403],
    ["cross-site fetch", "GET /api/health", () => ({ headers: { origin: evil } }), 403],
    ["sandboxed page (Origin null)", "GET /api/health", () => ({ headers: { origin: "null" } }), 403],
    ["cross-site WebSocket to the relay", "GET /api/view/ws", () => ({ upgrade: true, headers: { origin: evil } }), 403],
    ["cross-site WebSocket to optimization", "GET /api/optimize/ws", () => ({ upgrade: true, headers: { origin: evil } }), 403],
    ["rebinding WebSocket", "GET /api/view/ws", () => ({ upgrade: true, headers: { host: "evil.example" } }), 403],
    ["same-origin WebSocket", "GET /api/view/ws", (p) => ({ upgrade: true, headers: { origin: `http://127.0.0.1:${p}` } }), 101],
    [
      "cross-site form post that would start a command-line agent",
      "POST /api/chat/stream-cli-agent",
      () => ({
        headers: { origin: evil, "content-type": "multipart/form-data; boundary=XyZ" },
        body: multipart("XyZ"),
      }),
      403,
    ],
    ["rebinding on /mcp", "POST /mcp", () => ({ ...JSON_BODY, headers: { ...JSON_BODY.headers, host: "evil.example" } }), 403],
    ["rebinding on the studio's page", "GET /", () => ({ headers: { host: "evil.example" } }), 403],
  ];
  it.each(rows.map(([what, line, req, status]) => ({ what, line, req, status })))(
    "$what → $status",
    async ({ line, req, status }) => {
      const r = await rawRequest(svc.port, line, req(svc.port));
      expect(r.status).toBe(status);
      if (status === 403) expect(json(r).code).toBe("FORBIDDEN_ORIGIN");
    },
  );
});

describe("a service on a public address, with a token and configured names", () => {
  let svc: { app: FastifyInstance; port: number };
  beforeAll(async () => {
    // Configured as bound to every address; the test reaches it on loopback with other Host names.
    svc = await listen({
      host: "0.0.0.0",
      token: TOKEN,
      corsOrigins: ["https://lab.example"],
      allowedHosts: ["atoms.lab.example"],
    });
  });
  afterAll(() => svc?.app.close());

  const preflight = (origin: string) => ({
    headers: {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "authorization, content-type",
    },
  });

  // [what, request line, request, status, Access-Control-Allow-Origin]
  const rows: Array<[string, string, RawRequest, number, string | undefined]> = [
    ["IP address Host", "GET /api/health", { headers: { ...BEARER, host: "192.168.1.5:8000" } }, 200, undefined],
    ["configured host name", "GET /api/health", { headers: { ...BEARER, host: "atoms.lab.example" } }, 200, undefined],
    ["host of a configured origin", "GET /api/health", { headers: { ...BEARER, host: "lab.example" } }, 200, undefined],
    ["unknown host name", "GET /api/health", { headers: { ...BEARER, host: "evil.example" } }, 403, undefined],
    [
      "configured origin",
      "GET /api/health",
      { headers: { ...BEARER, origin: "https://lab.example" } },
      200,
      "https://lab.example",
    ],
    [
      "foreign origin with the token",
      "GET /api/health",
      { headers: { ...BEARER, origin: "https://evil.example" } },
      403,
      undefined,
    ],
    [
      "preflight from a configured origin, before the token",
      "OPTIONS /api/health",
      preflight("https://lab.example"),
      204,
      "https://lab.example",
    ],
    ["preflight from a foreign origin", "OPTIONS /api/health", preflight("https://evil.example"), 403, undefined],
    ["a plain OPTIONS still needs the token", "OPTIONS /api/health", {}, 401, undefined],
  ];
  it.each(rows.map(([what, line, req, status, allowOrigin]) => ({ what, line, req, status, allowOrigin })))(
    "$what → $status",
    async ({ line, req, status, allowOrigin }) => {
      const r = await rawRequest(svc.port, line, req);
      expect(r.status).toBe(status);
      expect(r.headers["access-control-allow-origin"]).toBe(allowOrigin);
    },
  );
});

describe("wrong methods on a known path", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    ({ app } = await buildApp({ config: testConfig({ studioAutoBuild: false }) }));
    await app.ready();
  });
  afterAll(() => app?.close());

  // [method, path, Allow]
  const rows: Array<["GET" | "POST" | "PUT" | "DELETE" | "PATCH", string, string]> = [
    ["GET", "/api/structure-ops/add-atom", "POST"],
    ["DELETE", "/api/health", "GET, HEAD"],
    ["POST", "/api/openapi.json", "GET, HEAD"],
    ["PATCH", "/api/chat/stream-cli-agent", "POST"],
    ["POST", "/api/view/ws", "GET, HEAD"],
    ["PUT", "/mcp", "POST"],
    ["GET", "/mcp", "POST"],
  ];
  it.each(rows)("%s %s → 405, Allow: %s", async (method, url, allow) => {
    const r = await app.inject({ method, url });
    expect(r.statusCode).toBe(405);
    expect(r.headers.allow).toBe(allow);
    expect(r.json().code).toBe("METHOD_NOT_ALLOWED");
  });

  it("keeps 404 for paths that do not exist", async () => {
    const r = await app.inject({ method: "POST", url: "/api/no-such-route" });
    expect(r.statusCode).toBe(404);
    expect(r.json().code).toBe("NOT_FOUND");
  });
});

/** Wait for a socket's close code (or null when it is still open after `ms`). */
const closeCode = (ws: WebSocket, ms = 1500): Promise<number | null> =>
  new Promise((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) return resolve(-1);
    const t = setTimeout(() => resolve(null), ms);
    ws.once("close", (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });

describe("WebSocket messages are capped like bodies (close code 1009)", () => {
  let svc: { app: FastifyInstance; port: number };
  const LIMIT = 4096;
  beforeAll(async () => {
    svc = await listen({ bodyLimit: LIMIT });
  });
  afterAll(() => svc?.app.close());

  // [path, message size, close code (null: stays open)]
  const rows: Array<[string, number, number | null]> = [
    ["/api/view/ws", LIMIT * 2, 1009],
    ["/api/view/ws", LIMIT - 100, null],
    ["/api/optimize/ws", LIMIT * 2, 1009],
    ["/api/optimize/ws", 256 * 1024, 1009],
    ["/api/optimize/ws", LIMIT - 100, null],
  ];
  it.each(rows)("%s, a %i-byte message → %s", async (path, size, code) => {
    const ws = new WebSocket(`ws://127.0.0.1:${svc.port}${path}`);
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    const closed = closeCode(ws);
    ws.send(JSON.stringify({ action: "cancel", padding: "x".repeat(size - 40) }));
    expect(await closed).toBe(code);
    ws.terminate();
  });
});

describe("a viewer client id belongs to the connection that claimed it", () => {
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
  const selection = (n: number) => () => ({ ok: true, result: { selected_indices: [n], selected_atoms: [] } });
  const selectedBy = async (url: string): Promise<number> => (await (await fetch(url)).json()).selected_indices[0];

  it("issues a secret with the id and refuses the id to anyone without it", async () => {
    const s = await service();
    const owner = await fakeStudio(s.url, selection(1), { clientId: "lab" });
    closers.push(owner.close);
    expect(owner.clientId).toBe("lab");
    expect(owner.clientSecret).toMatch(/^[\w-]{32,}$/);
    // [who, secret, accepted]
    const rows: Array<[string, string | undefined, boolean]> = [
      ["no secret", undefined, false],
      ["a wrong secret", "x".repeat(43), false],
      ["the owner's secret", owner.clientSecret, true],
    ];
    for (const [who, secret, accepted] of rows) {
      const attempt = fakeStudio(s.url, selection(2), { clientId: "lab", ...(secret ? { clientSecret: secret } : {}) });
      if (!accepted) {
        await expect(attempt, who).rejects.toThrow(/4409/);
        expect(await selectedBy(`${s.url}/api/view/selection?client_id=lab`), who).toBe(1);
      } else {
        const again = await attempt;
        closers.push(again.close);
        expect(again.clientId).toBe("lab");
        expect(await selectedBy(`${s.url}/api/view/selection?client_id=lab`), who).toBe(2);
      }
    }
  });

  it("keeps the id reserved after its studio disconnects, for the studio to come back with its secret", async () => {
    const s = await service();
    const owner = await fakeStudio(s.url, selection(1), { clientId: "lab" });
    owner.close();
    await new Promise((r) => setTimeout(r, 100));
    await expect(fakeStudio(s.url, selection(2), { clientId: "lab" })).rejects.toThrow(/4409/);
    const back = await fakeStudio(s.url, selection(3), { clientId: "lab", clientSecret: owner.clientSecret });
    closers.push(back.close);
    expect(await selectedBy(`${s.url}/api/view/selection?client_id=lab`)).toBe(3);
  });

  it("gives a studio that names no id a fresh id and secret", async () => {
    const s = await service();
    const a = await fakeStudio(s.url, selection(1));
    const b = await fakeStudio(s.url, selection(2));
    closers.push(a.close, b.close);
    expect(a.clientId).not.toBe(b.clientId);
    expect(a.clientSecret).not.toBe(b.clientSecret);
  });

  it.skipIf(!hasRedis)("holds across service processes sharing Redis", async () => {
    const redis = await startRedis();
    try {
      const a = await service({ redisUrl: redis.url });
      const b = await service({ redisUrl: redis.url });
      const owner = await fakeStudio(a.url, selection(1), { clientId: "lab" });
      closers.push(owner.close);
      await expect(fakeStudio(b.url, selection(2), { clientId: "lab" })).rejects.toThrow(/4409/);
      expect(await selectedBy(`${b.url}/api/view/selection?client_id=lab`)).toBe(1);
      // The studio moves to the other process (load balancer) with its secret.
      owner.close();
      const moved = await fakeStudio(b.url, selection(3), { clientId: "lab", clientSecret: owner.clientSecret });
      closers.push(moved.close);
      await new Promise((r) => setTimeout(r, 100));
      expect(await selectedBy(`${a.url}/api/view/selection?client_id=lab`)).toBe(3);
    } finally {
      for (const c of closers.splice(0)) c();
      for (const s of running.splice(0)) await s.close();
      await redis.stop();
    }
  });

  it("answers structure-info from the owner, not from a page of another site", async () => {
    const s = await service();
    const owner = await fakeStudio(s.url, () => ({ ok: true, result: { structure: cuCell } }));
    closers.push(owner.close);
    const forged = new WebSocket(`${s.url.replace(/^http/, "ws")}/api/view/ws`, { origin: "https://evil.example" });
    const refused = await new Promise<number>((resolve) => {
      forged.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      forged.once("open", () => resolve(101));
    });
    forged.on("error", () => {});
    forged.terminate();
    expect(refused).toBe(403);
    const info = await (await fetch(`${s.url}/api/view/structure-info`)).json();
    expect(info.formula).toBe("Cu4");
  });
});

describe("claims of one process", () => {
  it("forget the oldest released claims first, never a connected one", async () => {
    const claims = new LocalClaims(60_000, 2);
    expect(await claims.claim("a", "secret-of-a-0000")).toBe(true);
    expect(await claims.claim("b", "secret-of-b-0000")).toBe(true);
    claims.release("b");
    expect(await claims.claim("c", "secret-of-c-0000")).toBe(true);
    // [id, secret, granted]: b was released and forgotten; a is connected and kept.
    const rows: Array<[string, string, boolean]> = [
      ["a", "secret-of-x-0000", false],
      ["b", "secret-of-x-0000", true],
      ["c", "secret-of-x-0000", false],
      ["a", "secret-of-a-0000", true],
    ];
    for (const [id, secret, granted] of rows) expect(await claims.claim(id, secret), `${id} ${secret}`).toBe(granted);
  });

  it("end when their time is up", async () => {
    const claims = new LocalClaims(50);
    await claims.claim("lab", "secret-of-lab-00");
    claims.release("lab");
    expect(await claims.claim("lab", "another-secret-0")).toBe(false);
    await new Promise((r) => setTimeout(r, 80));
    expect(await claims.claim("lab", "another-secret-0")).toBe(true);
  });
});

describe.skipIf(!hasChromium)("the studio keeps its client id with the secret, and gives up one that is taken", () => {
  let svc: RunningService;
  let browser: Browser;
  beforeAll(async () => {
    await ensureStudioBuilt();
    svc = await startService({});
    browser = await launchBrowser();
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  const clientIdOf = (page: Page) => page.evaluate(() => document.body.dataset.clientId);

  it("reloads into the same id; another browser asking for it gets a fresh one", async () => {
    const owner = await openStudio(browser, svc.url, { query: "client_id=lab" });
    expect(await clientIdOf(owner)).toBe("lab");
    await owner.reload();
    await owner.waitForSelector('body[data-relay="connected"]', { timeout: 60_000 });
    expect(await clientIdOf(owner)).toBe("lab");
    // Another browser profile (no secret) asks for the same id.
    const other = await openStudio(browser, svc.url, { query: "client_id=lab" });
    await other.waitForFunction(() => document.body.dataset.clientId && document.body.dataset.clientId !== "lab", null, {
      timeout: 30_000,
    });
    expect(await clientIdOf(other)).toMatch(/^[0-9a-f-]{36}$/);
    // Requests naming "lab" still reach the owner's page.
    const r = await fetch(`${svc.url}/api/view/selection?client_id=lab`);
    expect(r.status).toBe(200);
    await owner.context().close();
    await other.context().close();
  }, 180_000);
});
