/**
 * Benchmark of POST /api/bands (run: `node --import tsx bench/analysis.ts [--skip-large]`). On the
 * shared vasprun_Si_bands.xml.gz and on a generated line-mode vasprun of about 60 MiB (720
 * k-points, 200 bands, projected; bench/make_large_vasprun.py), it measures in the same run:
 *   pymatgen — in-process Python doing the same work (bench/pymatgen_bands.py says exactly what:
 *              BSVasprun with projections, no POTCAR; the smart E_F; gap, edges, bands, one
 *              projection, the structure), in a long-lived process as the worker is (import not
 *              timed; warmed on the same file as the worker), called right before each request
 *              (bench/reference.ts), on the same byte-different copy
 *   first    — a request through the service (curl -F multipart upload, warm worker) on bytes it has not
 *              seen (each round uses a byte-different copy, so nothing is cached)
 *   repeat   — the same files again with another energy window (parsed objects cached by sha256)
 * and prints each round, then medians, first/pymatgen (target ≤ 1.3) and first/repeat (target ≥ 10). BENCH_RUNS
 * rounds per file (default 5); the rounds interleave pymatgen and the service.
 * With `--redis` the service has a job queue on a real redis-server (every request a BullMQ job,
 * jobs/analysis-jobs.ts), and at the end the queue's cost is measured alone: BENCH_OVERHEAD_RUNS
 * (default 30) repeat requests of the Si case, alternating between that service and one without
 * Redis, medians and their difference.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gunzipSync, gzipSync } from "node:zlib";
import { PYTHON, testdataPath } from "atomstudio-testkit";
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";
import { workflowPlugin } from "../packages/server/src/workflow/plugin.ts";
import { startRedis } from "../packages/studio/test/support.ts";
import { startReference } from "./reference.ts";

const execFileAsync = promisify(execFile);
const skipLarge = process.argv.includes("--skip-large");
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const dir = join(tmpdir(), "atomstudio-bench-analysis");
mkdirSync(dir, { recursive: true });

const large = join(dir, "large");
if (!skipLarge && !existsSync(join(large, "vasprun.xml"))) {
  console.log("generating the large vasprun (once) ...");
  execFileSync(
    PYTHON,
    [
      new URL("./make_large_vasprun.py", import.meta.url).pathname,
      testdataPath("vasp/vasprun_Si_bands.xml.gz"),
      testdataPath("vasp/KPOINTS_Si_bands"),
      large,
    ],
    { stdio: "inherit" },
  );
}

/** Byte-different copies of the same file (a different gzip header, or trailing whitespace). */
const variants = (name: string, source: Buffer, gz: boolean): string[] =>
  Array.from({ length: RUNS }, (_, i) => {
    const path = join(dir, `${name}-${i}${gz ? ".xml.gz" : ".xml"}`);
    if (!existsSync(path)) {
      const plain = gz ? gunzipSync(source) : source;
      const body = Buffer.concat([plain, Buffer.from("\n".repeat(i + 1))]);
      writeFileSync(path, gz ? gzipSync(body) : body);
    }
    return path;
  });

const cases: Array<{ key: string; files: string[]; kpoints: string }> = [
  {
    key: "Si bands (121 KB gz)",
    files: variants("si", readFileSync(testdataPath("vasp/vasprun_Si_bands.xml.gz")), true),
    kpoints: testdataPath("vasp/KPOINTS_Si_bands"),
  },
];
if (!skipLarge)
  cases.push({
    key: "large (62 MiB, 720 k x 200 bands, projected)",
    files: variants("large", readFileSync(join(large, "vasprun.xml")), false),
    kpoints: join(large, "KPOINTS"),
  });

const withRedis = process.argv.includes("--redis");
const redis = withRedis ? await startRedis() : undefined;
const serve = async (queueUrl?: string) => {
  const config = loadConfig(
    { host: "127.0.0.1", port: 0, logLevel: "error", bodyLimit: 256 * 1024 * 1024, queueUrl, queueCalculators: false },
    {},
  );
  const { app } = await buildApp({ config, plugins: queueUrl ? [workflowPlugin()] : [] });
  return { app, base: await app.listen({ host: "127.0.0.1", port: 0 }) };
};
const { app, base } = await serve(redis?.url);
console.log(withRedis ? "service with a job queue (redis-server): every request a BullMQ job" : "service without Redis");

/** One request as a user sends it: curl in its own process, so the client's work is not timed in the service's event loop. */
const request = async (vasprun: string, kpoints: string, emax: number, to = base): Promise<number> => {
  const params = JSON.stringify({ emin: -emax, emax, projections: [{ label: "Si p", elements: ["Si"], orbitals: ["p"] }] });
  const { stdout } = await execFileAsync("curl", [
    "-sS",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code} %{time_total}",
    "-F",
    `vasprun=@${vasprun}`,
    "-F",
    `kpoints=@${kpoints}`,
    "-F",
    `params=${params}`,
    `${to}/api/bands`,
  ]);
  const [status, seconds] = stdout.trim().split(" ");
  if (status !== "200") throw new Error(`HTTP ${status} for ${vasprun}`);
  return Number(seconds);
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

// warm the worker and the reference alike (process up, pymatgen imported, one parse done) on a file the cases do not use
const reference = startReference(new URL("./pymatgen_bands.py", import.meta.url).pathname);
const warmFile = { vasprun: testdataPath("vasp/vasprun_Si_bands.xml.gz"), kpoints: testdataPath("vasp/KPOINTS_Si_bands") };
await reference.call(warmFile);
await request(warmFile.vasprun, warmFile.kpoints, 5);

console.log("case | pymatgen s | first s | repeat s | first/pymatgen | first/repeat");
for (const c of cases) {
  // interleaved, one byte-different copy per round, so load on the machine hits both alike
  const pymatgen: number[] = [];
  const first: number[] = [];
  const repeat: number[] = [];
  for (const f of c.files) {
    // one reference call, then one request: both after the same short idle, under the same load
    pymatgen.push((await reference.call<{ seconds: number }>({ vasprun: f, kpoints: c.kpoints })).seconds);
    first.push(await request(f, c.kpoints, 10));
    repeat.push(await request(f, c.kpoints, 4));
    // each round too: one slow round in every run was how a full garbage collection in the worker showed
    const [p, fs, r] = [pymatgen, first, repeat].map((xs) => xs[xs.length - 1] as number) as [number, number, number];
    console.log(
      `  round ${first.length}: pymatgen ${p.toFixed(3)} s, first ${fs.toFixed(3)} s (${(fs / p).toFixed(2)}), repeat ${r.toFixed(3)} s`,
    );
  }
  const [p, fm, rm] = [median(pymatgen), median(first), median(repeat)];
  console.log(
    `${c.key} | ${p.toFixed(3)} | ${fm.toFixed(3)} | ${rm.toFixed(3)} | ${(fm / p).toFixed(2)} | ${(fm / rm).toFixed(1)}`,
  );
}
if (redis) {
  // the queue alone: the same cached request, alternating between the two services
  const plain = await serve();
  const si = cases[0] as (typeof cases)[number];
  const f = si.files[0] as string;
  await request(f, si.kpoints, 4, plain.base);
  const times: Record<"direct" | "queue", number[]> = { direct: [], queue: [] };
  for (let i = 0; i < Number(process.env.BENCH_OVERHEAD_RUNS ?? 30); i++) {
    times.direct.push(await request(f, si.kpoints, 4, plain.base));
    times.queue.push(await request(f, si.kpoints, 4));
  }
  const [d, q] = [median(times.direct) * 1000, median(times.queue) * 1000];
  console.log(
    `queue overhead (Si repeat, ${times.direct.length} alternating requests): direct ${d.toFixed(1)} ms, queue ${q.toFixed(1)} ms, +${(q - d).toFixed(1)} ms`,
  );
  await plain.app.close();
}
await reference.close();
await app.close();
await redis?.stop();
