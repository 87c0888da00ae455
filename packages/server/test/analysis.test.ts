/**
 * `/api/bands`, `/api/dos`, `/api/cohp` through HTTP (JSON and multipart) and MCP, with the real
 * analysis worker, against pymatgen run directly on the same shared files (the oracle). The full
 * value-by-value conformance runs in worker/tests/test_analysis_conformance.py; here: the service
 * path, the error rows, the caps, and the worker's environment.
 */
import { readFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { runPython, testdataPath } from "atomstudio-testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analysisEnvironment } from "../src/analysis/service.ts";
import { buildApp } from "../src/http/app.ts";
import { testConfig } from "./helpers.ts";
import { callTool, type RunningService, startService } from "./mcp-fixtures.ts";

const BANDS = "vasp/vasprun_Si_bands.xml.gz";
const KPOINTS = "vasp/KPOINTS_Si_bands";
const UNIFORM = "vasp/vasprun.uniform.xml.gz";
const COHPCAR = "lobster/NaCl/COHPCAR.lobster.gz";
const ICOHPLIST = "lobster/NaCl/ICOHPLIST.lobster.gz";
const CONTCAR = "lobster/NaCl/CONTCAR.gz";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field against the oracle
type Body = Record<string, any>;
const bytes = (rel: string): Buffer => readFileSync(testdataPath(rel));
const b64 = (buf: Buffer, filename?: string) => ({
  content: buf.toString("base64"),
  encoding: "base64",
  ...(filename ? { filename } : {}),
});
const file = (rel: string) => b64(bytes(rel), rel.split("/").pop());
const text = (s: string) => ({ content: s });

interface Oracle {
  bands: { efermi: number; gap: number; direct: boolean; transition: string; vbm: number; cbm: number; first_up: number[] };
  dos: { efermi: number; total_up: number[]; gap: number };
  icohp: Record<string, number>;
}

const ORACLE = `
import json, sys
from pymatgen.io.vasp.outputs import BSVasprun, Vasprun
from pymatgen.io.lobster import Icohplist
from pymatgen.electronic_structure.core import Spin
a = json.load(sys.stdin)
bs = BSVasprun(a["bands"], parse_potcar_file=False).get_band_structure(a["kpoints"], efermi="smart", line_mode=True)
g = bs.get_band_gap()
cdos = Vasprun(a["uniform"], parse_potcar_file=False).complete_dos
ic = Icohplist(filename=a["icohplist"])
print(json.dumps({
  "bands": {"efermi": bs.efermi, "gap": g["energy"], "direct": g["direct"], "transition": g["transition"],
            "vbm": bs.get_vbm()["energy"], "cbm": bs.get_cbm()["energy"], "first_up": bs.bands[Spin.up][0].tolist()},
  "dos": {"efermi": cdos.efermi, "total_up": cdos.densities[Spin.up].tolist(), "gap": cdos.get_gap()},
  "icohp": {k: v["icohp"][Spin.up] for k, v in ic.icohplist.items()},
}))
`;

describe("electronic-structure analysis", () => {
  let svc: RunningService;
  let oracle: Oracle;
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${svc.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Body };
  };

  beforeAll(async () => {
    [svc, oracle] = await Promise.all([
      startService(),
      runPython<Oracle>(ORACLE, {
        bands: testdataPath(BANDS),
        kpoints: testdataPath(KPOINTS),
        uniform: testdataPath(UNIFORM),
        icohplist: testdataPath(ICOHPLIST),
      }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
  });

  it("bands: gap, edges, eigenvalues and labelled ticks equal pymatgen's (gzipped vasprun as base64 JSON)", async () => {
    const { status, body } = await post("/api/bands", {
      vasprun: file(BANDS),
      kpoints: text(bytes(KPOINTS).toString()),
      emin: -100,
      emax: 100,
    });
    expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
    const o = oracle.bands;
    expect(body.efermi_ev).toBeCloseTo(o.efermi, 8);
    expect(body.band_gap.energy_ev).toBeCloseTo(o.gap, 8);
    expect([body.band_gap.direct, body.band_gap.transition]).toEqual([o.direct, o.transition]);
    expect(body.band_gap.vbm.energy_ev + body.efermi_ev).toBeCloseTo(o.vbm, 8);
    expect(body.band_gap.cbm.energy_ev + body.efermi_ev).toBeCloseTo(o.cbm, 8);
    for (const [k, e] of (body.bands.up[0] as number[]).entries())
      expect(e + body.efermi_ev).toBeCloseTo(o.first_up[k] as number, 8);
    expect(body.kpath.ticks.map((t: { label: string }) => t.label)).toEqual([
      "\\Gamma",
      "X",
      "W",
      "K",
      "\\Gamma",
      "L",
      "U",
      "W",
      "L",
      "K|U",
      "X",
    ]);
    expect([body.is_spin_polarized, body.nkpts, body.nbands]).toEqual([true, 160, 13]);
    expect(body.structure.sites).toHaveLength(2);
  });

  it("bands: the same answer from a binary multipart upload (several files, options as fields)", async () => {
    const form = new FormData();
    form.append("vasprun", new Blob([new Uint8Array(bytes(BANDS))]), "vasprun_Si_bands.xml.gz");
    form.append("kpoints", new Blob([new Uint8Array(bytes(KPOINTS))]), "KPOINTS");
    form.append("emin", "-100");
    form.append("params", JSON.stringify({ emax: 100, projections: [{ label: "Si s", elements: ["Si"], orbitals: ["s"] }] }));
    const res = await fetch(`${svc.url}/api/bands`, { method: "POST", body: form });
    const body = (await res.json()) as Body;
    expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
    expect(body.band_gap.energy_ev).toBeCloseTo(oracle.bands.gap, 8);
    expect(body.projections[0].label).toBe("Si s");
    expect(body.projections[0].up).toHaveLength(body.band_indices.length);
  });

  it("dos: total DOS equals pymatgen's; a bzip2 file is detected by its magic bytes", async () => {
    const { bzip2 } = await runPython<{ bzip2: string }>(
      "import base64,bz2,gzip,json,sys; p=json.load(sys.stdin); print(json.dumps({'bzip2': base64.b64encode(bz2.compress(gzip.open(p).read())).decode()}))",
      testdataPath(UNIFORM),
    );
    for (const vasprun of [file(UNIFORM), { content: bzip2, encoding: "base64", filename: "vasprun.xml" }]) {
      const { status, body } = await post("/api/dos", { vasprun, emin: -100, emax: 100 });
      expect(status).toBe(200);
      expect(body.efermi_ev).toBeCloseTo(oracle.dos.efermi, 8);
      expect(body.gap.energy_ev).toBeCloseTo(oracle.dos.gap, 8);
      expect(body.total.up).toHaveLength(oracle.dos.total_up.length);
      for (const [i, d] of (body.total.up as number[]).entries()) expect(d).toBeCloseTo(oracle.dos.total_up[i] as number, 8);
    }
  });

  it("cohp: every bond's ICOHP equals ICOHPLIST through pymatgen; -COHP is stated", async () => {
    const { status, body } = await post("/api/cohp", {
      cohpcar: file(COHPCAR),
      icohplist: file(ICOHPLIST),
      structure: file(CONTCAR),
      bonds: ["21"],
      summary: true,
    });
    expect(status, JSON.stringify(body).slice(0, 300)).toBe(200);
    expect(body.bonds).toHaveLength(50);
    for (const b of body.bonds) expect(b.icohp_ev).toBeCloseTo(oracle.icohp[b.label] as number, 8);
    expect(body.sign_convention).toMatch(/-COHP/);
    expect(body.series.map((s: { label: string }) => s.label)).toEqual(["21"]);
    expect(body.summary.condensed_bonding_analysis.formula).toBe("NaCl");
  });

  it("MCP: svc_bands, svc_dos and svc_cohp answer what the endpoints answer", async () => {
    const client = new Client({ name: "atomstudio-test", version: "0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`)));
    try {
      const args: Array<[string, string, Record<string, unknown>]> = [
        ["svc_bands", "/api/bands", { vasprun: file(BANDS), kpoints: text(bytes(KPOINTS).toString()) }],
        ["svc_dos", "/api/dos", { vasprun: file(UNIFORM), mode: "projected" }],
        ["svc_cohp", "/api/cohp", { cohpcar: file(COHPCAR), bonds: ["1"] }],
      ];
      for (const [tool, path, a] of args) {
        const [r, e] = await Promise.all([callTool(client, tool, a), post(path, a)]);
        expect(r.isError ?? false).toBe(false);
        // the HTTP route sends the worker's JSON text as is (-0.0 stays -0); MCP's JSON.stringify writes -0 as 0
        expect(r.structuredContent).toEqual(JSON.parse(JSON.stringify(e.body)));
      }
    } finally {
      await client.close();
    }
  });

  const other = "k-path of another run\n10\nLine-mode\nreciprocal\n0 0 0 ! G\n0.5 0 0 ! X\n\n0.5 0 0 ! X\n0.5 0.5 0 ! M\n";
  const truncated = bytes(BANDS).subarray(0, 3000);
  // [condition, path, status, code, body]
  const rows: Array<[string, string, number, string, () => unknown]> = [
    ["0-byte file", "/api/bands", 400, "INVALID_FILE", () => ({ vasprun: { content: "" } })],
    ["0-byte base64 file", "/api/dos", 400, "INVALID_FILE", () => ({ vasprun: { content: "", encoding: "base64" } })],
    ["invalid base64", "/api/dos", 400, "INVALID_FILE", () => ({ vasprun: { content: "@@not base64@@", encoding: "base64" } })],
    ["truncated gzip", "/api/bands", 400, "INVALID_FILE", () => ({ vasprun: b64(truncated) })],
    ["truncated XML", "/api/bands", 400, "INVALID_FILE", () => ({ vasprun: b64(gunzipSync(bytes(BANDS)).subarray(0, 200_000)) })],
    ["non-VASP XML", "/api/dos", 400, "INVALID_FILE", () => ({ vasprun: text("<?xml version='1.0'?><svg><g/></svg>") })],
    ["plain text as vasprun", "/api/bands", 400, "INVALID_FILE", () => ({ vasprun: text("hello\n") })],
    ["KPOINTS of another run", "/api/bands", 400, "STRUCTURE_MISMATCH", () => ({ vasprun: file(BANDS), kpoints: text(other) })],
    [
      "automatic KPOINTS",
      "/api/bands",
      400,
      "NO_KPATH_LABELS",
      () => ({ vasprun: file(BANDS), kpoints: text("auto\n0\nGamma\n4 4 4\n") }),
    ],
    [
      "projection of an absent element",
      "/api/bands",
      400,
      "UNKNOWN_ELEMENT",
      () => ({ vasprun: file(BANDS), projections: [{ elements: ["Fe"] }] }),
    ],
    ["unknown bond label", "/api/cohp", 400, "UNKNOWN_BOND_LABEL", () => ({ cohpcar: file(COHPCAR), bonds: ["999"] })],
    [
      "structure of another run",
      "/api/cohp",
      400,
      "STRUCTURE_MISMATCH",
      () => ({
        cohpcar: file(COHPCAR),
        structure: text("Si\n1\n0 2.7 2.7\n2.7 0 2.7\n2.7 2.7 0\nSi\n2\nd\n0 0 0\n.25 .25 .25\n"),
      }),
    ],
    ["ICOHPLIST as the COHPCAR", "/api/cohp", 400, "INVALID_FILE", () => ({ cohpcar: file(ICOHPLIST) })],
    ["summary without structure", "/api/cohp", 400, "MISSING_FILE", () => ({ cohpcar: file(COHPCAR), summary: true })],
    ["no vasprun", "/api/bands", 422, "MALFORMED_REQUEST", () => ({})],
    ["unknown efermi word", "/api/bands", 422, "MALFORMED_REQUEST", () => ({ vasprun: file(BANDS), efermi: "middle" })],
    ["unknown encoding", "/api/dos", 422, "MALFORMED_REQUEST", () => ({ vasprun: { content: "x", encoding: "hex" } })],
    [
      "too many projection groups",
      "/api/bands",
      422,
      "MALFORMED_REQUEST",
      () => ({ vasprun: file(BANDS), projections: Array(65).fill({}) }),
    ],
  ];
  it.each(rows)("%s: %s → %i %s", async (_c, path, status, code, body) => {
    const res = await post(path, body());
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(status);
    expect(res.body.code).toBe(code);
    expect(JSON.stringify(res.body)).not.toMatch(/Traceback|stderr/);
  });

  it("NO_PROJECTIONS: projected DOS of a run without LORBIT", async () => {
    const { plain } = await runPython<{ plain: string }>(
      "import gzip,json,sys; t=gzip.open(json.load(sys.stdin)).read().decode(); i=t.index('<partial>'); j=t.index('</partial>')+10; print(json.dumps({'plain': t[:i]+t[j:]}))",
      testdataPath(UNIFORM),
    );
    const res = await post("/api/dos", { vasprun: text(plain), mode: "projected" });
    expect([res.status, res.body.code]).toEqual([400, "NO_PROJECTIONS"]);
  });

  it("a replaced worker reads the files from the service's store again, and the answer is the same", async () => {
    const { app, ctx } = await buildApp({ config: testConfig() });
    try {
      const payload = { vasprun: file(UNIFORM), emin: -3, emax: 3 };
      const first = await app.inject({ method: "POST", url: "/api/dos", payload });
      expect(first.statusCode).toBe(200);
      const worker = ctx.services.analysisPool?.workers[0];
      worker?.kill();
      await worker?.exited;
      const again = await app.inject({ method: "POST", url: "/api/dos", payload });
      expect(again.statusCode, again.body.slice(0, 300)).toBe(200);
      expect(again.json().total).toEqual(first.json().total);
      expect(ctx.services.analysisPool?.workers[0]?.pid).not.toBe(worker?.pid);
    } finally {
      await app.close();
    }
  });

  it("a file that decompresses past the cap is 413 FILE_TOO_LARGE", async () => {
    const small = await startService({ analysisMaxFileBytes: 1_000_000 });
    try {
      const res = await fetch(`${small.url}/api/dos`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ vasprun: b64(gzipSync(Buffer.alloc(5_000_000))) }),
      });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { code: string }).code).toBe("FILE_TOO_LARGE");
    } finally {
      await small.close();
    }
  });

  it("without pymatgen the routes answer 503 ANALYSIS_UNAVAILABLE with the install command", async () => {
    const hidden = await startService({ environment: { ...process.env, ATOMSTUDIO_WORKER_HIDE_MODULES: "pymatgen" } });
    try {
      const res = await fetch(`${hidden.url}/api/dos`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ vasprun: file(UNIFORM) }),
      });
      const body = (await res.json()) as { code: string; error: string };
      expect([res.status, body.code]).toEqual([503, "ANALYSIS_UNAVAILABLE"]);
      expect(body.error).toMatch(/setup-python|pip install/);
    } finally {
      await hidden.close();
    }
  });

  it("the analysis worker runs without provider keys or the service token", async () => {
    const env = analysisEnvironment(
      testConfig({
        environment: { PATH: "/usr/bin", HOME: "/h", ATOMSTUDIO_TOKEN: "t", ANTHROPIC_API_KEY: "k", OPENAI_API_KEY: "k" },
      }),
    );
    expect(Object.keys(env).filter((k) => /TOKEN|KEY|SECRET/.test(k))).toEqual([]);
    // and the live process: its environment as the kernel holds it
    const { pidsEnv } = await runPython<{ pidsEnv: string[] }>(
      "import json,os,sys; pids=[p for p in os.listdir('/proc') if p.isdigit()]\nout=[]\nfor p in pids:\n  try:\n    c=open(f'/proc/{p}/cmdline','rb').read()\n    if b'atomstudio_worker.analysis' in c and str(os.getppid()) != p: out.append(open(f'/proc/{p}/environ','rb').read().decode(errors='replace'))\n  except OSError: pass\nprint(json.dumps({'pidsEnv': out}))",
      {},
    );
    expect(pidsEnv.length).toBeGreaterThan(0);
    for (const e of pidsEnv) expect(e).not.toMatch(/ATOMSTUDIO_TOKEN|_API_KEY=/);
  });
});

describe("multipart body cap (hardening: multipart had no total limit)", () => {
  let svc: RunningService;
  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(async () => {
    await svc?.close();
  });

  // [condition, files in MiB] — every file is under the cap, the body is not
  const rows: Array<[string, number[]]> = [
    ["two 40 MiB files (80 MiB body)", [40, 40]],
    ["five 16 MiB files", [16, 16, 16, 16, 16]],
  ];
  it.each(rows)("%s → 413 PAYLOAD_TOO_LARGE", async (_c, sizes) => {
    const form = new FormData();
    for (const [i, mib] of sizes.entries())
      form.append(i === 0 ? "file" : `extra${i}`, new Blob([new Uint8Array(mib * 1024 * 1024).fill(65)]), `f${i}`);
    const res = await fetch(`${svc.url}/api/structure/parse`, { method: "POST", body: form });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { code: string }).code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("a chunked body with no Content-Length is counted while read", async () => {
    const boundary = "----atomstudio";
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n`);
    const chunk = Buffer.alloc(8 * 1024 * 1024, 65);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        if (sent >= 80) return controller.close();
        sent += 8;
        controller.enqueue(chunk);
      },
    });
    const res = await fetch(`${svc.url}/api/structure/parse`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
  });
});
