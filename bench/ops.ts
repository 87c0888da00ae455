/**
 * Benchmark of the editing and building endpoints (run: `npm run bench`, or
 * `node --import tsx bench/ops.ts`). For add-atom, delete-atoms, move-atoms and supercell at
 * 100, 1,000 and 10,000 atoms it measures, in the same run:
 *   service  — median time per HTTP request to the real endpoint (loopback, keep-alive)
 *   floor    — the same HTTP stack parsing a same-size request and serializing a same-size response
 *   pymatgen — from_dict + the same operation + as_dict, in-process Python
 * and prints pymatgen/service and service/floor. Then requests per second for add-atom on a
 * 100-atom structure under concurrent load from autocannon on loopback.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { runPython } from "atomstudio-testkit";
import autocannon from "autocannon";
import { Pool } from "undici";
import { generate } from "../packages/core/test/generate.ts";

const SIZES = [100, 1_000, 10_000];
const OPS = ["add-atom", "delete-atoms", "move-atoms", "supercell"] as const;
type Op = (typeof OPS)[number];

const server = spawn(process.execPath, ["--import", "tsx", new URL("./server.ts", import.meta.url).pathname], {
  stdio: ["ignore", "pipe", "inherit"],
});
const [portLine] = (await once(server.stdout, "data")) as [Buffer];
const base = `http://127.0.0.1:${Number(portLine.toString().trim())}`;
const pool = new Pool(base, { connections: 1, pipelining: 1 });

const post = async (path: string, body: string): Promise<{ ms: number; text: string }> => {
  const t = performance.now();
  const res = await pool.request({ method: "POST", path, body, headers: { "content-type": "application/json" } });
  const text = await res.body.text();
  const ms = performance.now() - t;
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${text.slice(0, 300)}`);
  return { ms, text };
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const bodyFor = (op: Op, structure: Record<string, unknown>, n: number): Record<string, unknown> => {
  const some = Array.from({ length: Math.max(1, Math.floor(n / 10)) }, (_, i) => (i * 7) % n);
  switch (op) {
    case "add-atom":
      return { structure, element: "O", position: [1.5, 2.5, 3.5] };
    case "delete-atoms":
      return { structure, indices: [...new Set(some)] };
    case "move-atoms":
      return { structure, indices: [...new Set(some)], displacement: [0.1, -0.2, 0.3] };
    case "supercell":
      return { structure, scaling: [1, 1, 1] };
  }
};

interface Row {
  op: Op;
  n: number;
  service: number;
  floor: number;
  pymatgen: number;
}
const rows: Row[] = [];
const pyCases: Array<{ key: string; op: Op; body: unknown; repeat: number }> = [];

for (const n of SIZES) {
  // Supercells start from a cell 1/8 the size, doubled along every axis, so the output has n atoms.
  const cell = generate({ n, periodic: true, seed: n });
  const smallCell = generate({ n: n / 8 < 1 ? 1 : Math.round(n / 8), periodic: true, seed: n + 1 });
  for (const op of OPS) {
    const body = op === "supercell" ? { structure: smallCell, scaling: [2, 2, 2] } : bodyFor(op, cell, n);
    const text = JSON.stringify(body);
    const key = `${op}:${n}`;
    const repeat = n >= 10_000 ? 15 : 40;
    const first = await post(`/api/structure-ops/${op}`.replace("structure-ops/supercell", "structure-build/supercell"), text);
    // The floor answers a response of exactly the service's size and shape.
    await post("/__bench/floor-response", `{"key":${JSON.stringify(key)},"body":${first.text}}`);
    const floorText = `{"__floor":${JSON.stringify(key)},${text.slice(1)}`;
    const path = op === "supercell" ? "/api/structure-build/supercell" : `/api/structure-ops/${op}`;
    const service: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < repeat; i++) {
      service.push((await post(path, text)).ms);
      floor.push((await post("/__bench/floor", floorText)).ms);
    }
    rows.push({ op, n, service: median(service), floor: median(floor), pymatgen: 0 });
    pyCases.push({ key, op, body, repeat: n >= 10_000 ? 5 : 20 });
  }
}

const py = await runPython<Record<string, number>>(new URL("./pymatgen_ops.py", import.meta.url).pathname, pyCases, {
  timeoutMs: 900_000,
});
for (const r of rows) r.pymatgen = (py[`${r.op}:${r.n}`] as number) * 1000;

const f = (x: number) => x.toFixed(2).padStart(9);
console.log("\nper request, median ms (service and floor over HTTP on loopback; pymatgen in-process)");
console.log(
  `${"operation".padEnd(14)}${"atoms".padStart(7)}${"service".padStart(10)}${"floor".padStart(10)}${"pymatgen".padStart(10)}  pymatgen/service  service/floor`,
);
for (const r of rows)
  console.log(
    `${r.op.padEnd(14)}${String(r.n).padStart(7)}${f(r.service)} ${f(r.floor)} ${f(r.pymatgen)}  ${(r.pymatgen / r.service).toFixed(1).padStart(14)}x  ${(r.service / r.floor).toFixed(2).padStart(12)}x`,
  );

// Concurrent load: add-atom on a 100-atom structure.
const loadBody = JSON.stringify(bodyFor("add-atom", generate({ n: 100, periodic: true, seed: 100 }), 100));
const result = await autocannon({
  url: `${base}/api/structure-ops/add-atom`,
  method: "POST",
  headers: { "content-type": "application/json" },
  body: loadBody,
  connections: 32,
  duration: 10,
});
console.log(
  `\nadd-atom, 100 atoms, 32 connections for 10 s (autocannon): ${Math.round(result.requests.average)} requests/s, ` +
    `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}`,
);
await pool.close();
server.kill();
