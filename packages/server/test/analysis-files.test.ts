/**
 * How analysis files reach the worker: a multipart upload streams into the service's private
 * store (0700 folder, 0600 files, random names, moved under their sha256), the worker gets only
 * paths the service made, nothing is left behind; and a request past its deadline stops the work
 * (its worker is killed and replaced at once), so the next request is served right after the 504.
 * Real service, real analysis worker, real files.
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PYTHON, testdataPath } from "atomstudio-testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServiceConfig } from "../src/config.ts";
import type { ServiceContext } from "../src/context.ts";
import { buildApp } from "../src/http/app.ts";
import { UploadStore } from "../src/http/uploads.ts";
import { testConfig } from "./helpers.ts";

interface Running {
  url: string;
  ctx: ServiceContext;
  close: () => Promise<void>;
}
const start = async (over: Partial<ServiceConfig> = {}): Promise<Running> => {
  const { app, ctx } = await buildApp({ config: testConfig(over) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, ctx, close: () => app.close() };
};

const BANDS = "vasp/vasprun_Si_bands.xml.gz";
const KPOINTS = "vasp/KPOINTS_Si_bands";
const UNIFORM = "vasp/vasprun.uniform.xml.gz";
const bytes = (rel: string): Buffer => readFileSync(testdataPath(rel));
const mode = (path: string) => statSync(path).mode & 0o777;

const upload = (url: string, fields: Record<string, Buffer | string>) => {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields))
    if (typeof value === "string") form.append(name, value);
    else form.append(name, new Blob([new Uint8Array(value)]), name);
  return fetch(url, { method: "POST", body: form });
};

describe("analysis files: the private upload store", () => {
  let svc: Running;
  let root: string;
  beforeAll(async () => {
    svc = await start();
    const res = await upload(`${svc.url}/api/dos`, { vasprun: bytes(UNIFORM), emin: "-1", emax: "1" });
    expect(res.status).toBe(200);
    root = svc.ctx.services.uploads?.root as string;
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
  });

  it("the folder is 0700, a stored file 0600 under its sha256, no upload left behind", () => {
    expect(mode(root)).toBe(0o700);
    const entries = readdirSync(root);
    const stored = entries.filter((e) => /^[0-9a-f]{64}$/.test(e));
    expect(stored.length).toBeGreaterThan(0);
    for (const f of stored) {
      expect(lstatSync(join(root, f)).isFile()).toBe(true);
      expect(mode(join(root, f))).toBe(0o600);
    }
    expect(entries.filter((e) => e.startsWith("upload-"))).toEqual([]);
  });

  // [condition, body]: the client's own words never become a path the worker reads
  const rows: Array<[string, () => unknown, number, string | undefined]> = [
    [
      "a path next to the content is ignored",
      () => ({ vasprun: { content: bytes(UNIFORM).toString("base64"), encoding: "base64", path: "/etc/passwd" } }),
      200,
      undefined,
    ],
    ["a path instead of content is malformed", () => ({ vasprun: { path: "/etc/passwd" } }), 422, "MALFORMED_REQUEST"],
    [
      "an empty latin1 file (the multipart placeholder) without an upload",
      () => ({ vasprun: { content: "", encoding: "latin1" } }),
      400,
      "INVALID_FILE",
    ],
    [
      "a sha256 and path in the options are ignored",
      () => ({ vasprun: { content: "hello\n" }, files: { vasprun: { sha256: "0".repeat(64), path: "/etc/passwd" } } }),
      400,
      "INVALID_FILE",
    ],
  ];
  it.each(rows)("%s", async (_c, body, status, code) => {
    const res = await fetch(`${svc.url}/api/dos`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body()),
    });
    const answer = (await res.json()) as { code?: string };
    expect(res.status, JSON.stringify(answer).slice(0, 200)).toBe(status);
    if (code) expect(answer.code).toBe(code);
  });

  it("a multipart upload cut off by the body cap leaves no file", async () => {
    const small = await start({ bodyLimit: 2 * 1024 * 1024 });
    try {
      // chunked, no Content-Length: the file is being written when the cap cuts it off
      const boundary = "----atomstudio";
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="vasprun"; filename="v"\r\n\r\n`);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(head);
          if (sent >= 5) {
            controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
            return controller.close();
          }
          sent += 1;
          controller.enqueue(Buffer.alloc(1024 * 1024, 65));
        },
      });
      const res = await fetch(`${small.url}/api/dos`, {
        method: "POST",
        headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: "half",
      } as RequestInit);
      expect(res.status).toBe(413);
      const root = small.ctx.services.uploads?.root as string;
      expect(existsSync(root)).toBe(true);
      expect(readdirSync(root)).toEqual([]);
    } finally {
      await small.close();
    }
  });
});

describe("UploadStore", () => {
  const rows: Array<[string, number, number, number]> = [
    // [condition, files held, of which pinned, files kept]
    ["beyond keep, the oldest leave", 6, 0, 4],
    ["pinned files stay even beyond keep", 6, 6, 6],
  ];
  it.each(rows)("%s", async (_c, n, pinned, kept) => {
    const store = new UploadStore(mkdtempSync(join(tmpdir(), "atomstudio-test-")), 4);
    try {
      const held = [];
      for (let i = 0; i < n; i++) held.push(await store.hold(await store.write(Buffer.from(`file ${i}`))));
      for (const h of held.slice(pinned)) h.release();
      await new Promise((r) => setTimeout(r, 100)); // deletions are not awaited by release
      expect(readdirSync(store.root).length).toBe(kept);
      expect(mode(held[n - 1]?.path as string)).toBe(0o600);
    } finally {
      store.close();
    }
  });

  // [condition, size in bytes, files on disk once received (before hold)]
  const received: Array<[string, number, number]> = [
    ["a small upload stays in memory until held", 200 * 1024, 0],
    ["a large upload streams to disk while received", 3 * 1024 * 1024 + 5, 1],
  ];
  it.each(received)(
    "%s; held, it is one 0600 file under its sha256; the same content again writes nothing",
    async (_c, size, onDisk) => {
      const store = new UploadStore(mkdtempSync(join(tmpdir(), "atomstudio-test-")));
      try {
        const bytes = Buffer.alloc(size, 7);
        const chunks = async function* () {
          for (let i = 0; i < size; i += 64 * 1024) yield bytes.subarray(i, i + 64 * 1024);
        };
        const first = await store.receive(chunks());
        expect(readdirSync(store.root).length).toBe(onDisk);
        const held = await store.hold(first);
        expect(readdirSync(store.root)).toEqual([held.sha256]);
        expect(readFileSync(held.path).equals(bytes)).toBe(true);
        expect(mode(held.path)).toBe(0o600);
        const again = await store.hold(await store.receive(chunks()));
        expect(again.path).toBe(held.path);
        expect(readdirSync(store.root)).toEqual([held.sha256]);
      } finally {
        store.close();
      }
    },
  );

  it("the same content twice is one file", async () => {
    const store = new UploadStore(mkdtempSync(join(tmpdir(), "atomstudio-test-")));
    try {
      const a = await store.hold(await store.write(Buffer.from("same")));
      const b = await store.hold(
        await store.receive(
          (async function* () {
            yield Buffer.from("sa");
            yield Buffer.from("me");
          })(),
        ),
      );
      expect(b.path).toBe(a.path);
      expect(readdirSync(store.root)).toEqual([a.sha256]);
    } finally {
      store.close();
    }
  });
});

describe("analysis deadline: the work stops, the next request is served", () => {
  let svc: Running;
  let large: string;
  let deadlineMs: number;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "atomstudio-large-"));
    // about 100 MiB, projected: pymatgen parses it for about six times as long as a fresh worker
    // takes to start and answer the small file, whatever the machine's load
    execFileSync(PYTHON, [
      new URL("../../../bench/make_large_vasprun.py", import.meta.url).pathname,
      testdataPath(BANDS),
      testdataPath(KPOINTS),
      dir,
      "120",
    ]);
    large = join(dir, "vasprun.xml");
    // what a fresh worker takes (start, pymatgen imported, the small file answered) here and now
    const probe = await start();
    const t = Date.now();
    expect((await upload(`${probe.url}/api/bands`, { vasprun: bytes(BANDS), kpoints: bytes(KPOINTS) })).status).toBe(200);
    const freshMs = Date.now() - t;
    await probe.close();
    deadlineMs = Math.max(3000, Math.round(2.5 * freshMs));
    svc = await start({ analysisTimeoutMs: deadlineMs, bodyLimit: 256 * 1024 * 1024 });
    expect((await upload(`${svc.url}/api/bands`, { vasprun: bytes(BANDS) })).status).toBe(200);
  }, 300_000);
  afterAll(async () => {
    await svc?.close();
  });

  it("a parse past the deadline is 504, its worker is killed at once, and the next request answers 200", async () => {
    const parsing = svc.ctx.services.analysisPool?.workers[0];
    expect(parsing?.alive).toBe(true);
    const slow = await upload(`${svc.url}/api/bands`, {
      vasprun: readFileSync(large),
      params: JSON.stringify({ projections: [{ elements: ["Si"], orbitals: ["p"] }] }),
    });
    expect(slow.status).toBe(504);
    expect(((await slow.json()) as { code: string }).code).toBe("DEADLINE_EXCEEDED");
    // the worker that was parsing is gone within a second of the 504 (not left to finish, no grace period)
    const gone = await Promise.race([parsing?.exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 1000))]);
    expect(gone).toBe(true);
    expect(existsSync(`/proc/${parsing?.pid}`)).toBe(false);
    // and its replacement (started at once) answers the next request inside the same deadline
    const next = await upload(`${svc.url}/api/bands`, { vasprun: bytes(BANDS), kpoints: bytes(KPOINTS) });
    expect(next.status).toBe(200);
    expect(svc.ctx.services.analysisPool?.workers[0]?.pid).not.toBe(parsing?.pid);
  }, 300_000);
});
