/**
 * Trajectory benchmark (run: `node --import tsx --expose-gc bench/md.ts [atoms] [frames]`,
 * default 10,000 × 1,000). A generated water-like trajectory (LAMMPS dump, random walk in a
 * 30 Å-per-1,000-atoms cubic cell) is, in the same run:
 *   read into the core (readTrajectory on the file's text) vs MDAnalysis reading it into memory;
 *   analysed through the service (POST /api/md/rdf, /rmsd, /hbonds, /clustering with the file)
 *   vs MDAnalysis loading it and running InterRDF, NoJump+RMSD, HydrogenBondAnalysis, and
 *   DistanceMatrix + scikit-learn AgglomerativeClustering (and HDBSCAN) in-process;
 * and the memory of the loaded trajectory is compared with its raw coordinates (F×N×3×8 bytes).
 * Ratios are service/MDAnalysis (below 1: faster than MDAnalysis).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readTrajectory } from "atomstudio-core";
import { generateTrajectory, runPython, toLammpsDump } from "atomstudio-testkit";
import { Pool } from "undici";

const nAtoms = Number(process.argv[2] ?? 10_000);
const nFrames = Number(process.argv[3] ?? 1_000);
const side = 30 * Math.cbrt(nAtoms / 1000);
const rMax = 6;
const nBins = 200;
const clusterStep = Math.max(1, Math.ceil(nFrames / 100));

const dir = mkdtempSync(join(tmpdir(), "atomstudio-md-bench-"));
const path = join(dir, "bench.lammpstrj");
{
  // Written frame by frame's worth at once is too big for one string at full size: write in blocks.
  const block = 50;
  let first = true;
  for (let f0 = 0; f0 < nFrames; f0 += block) {
    const g = generateTrajectory({
      nAtoms,
      nFrames: Math.min(block, nFrames - f0),
      cell: [side, 0, 0, 0, side, 0, 0, 0, side],
      seed: 1 + f0,
      step: 0.003,
    });
    writeFileSync(path, toLammpsDump(g), { flag: first ? "w" : "a" });
    first = false;
  }
}
const text = readFileSync(path, "utf8");
console.log(`trajectory: ${nAtoms} atoms × ${nFrames} frames, ${(text.length / 1e6).toFixed(0)} MB of LAMMPS dump`);

// ---- reading into the core, and memory
(globalThis as { gc?: () => void }).gc?.();
const heap0 = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
const t = performance.now();
const { trajectory } = readTrajectory(text, { filename: "bench.lammpstrj", limits: { maxAtomFrames: 1e9, maxFrames: 1e7 } });
const readS = (performance.now() - t) / 1000;
console.log(`read into the core: ${readS.toFixed(2)} s`);
(globalThis as { gc?: () => void }).gc?.();
const heap1 = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
const raw = nFrames * nAtoms * 3 * 8;

// ---- the service
const server = spawn(process.execPath, ["--import", "tsx", new URL("./md-server.ts", import.meta.url).pathname], {
  stdio: ["ignore", "pipe", "inherit"],
});
const [portLine] = (await once(server.stdout, "data")) as [Buffer];
const base = `http://127.0.0.1:${Number(portLine.toString().trim())}`;
const file = { content: text, filename: "bench.lammpstrj" };
const types = { "1": "O", "2": "H" };
const pool = new Pool(base, { connections: 1 });
const call = async (route: string, body: Record<string, unknown>): Promise<number> => {
  // The request body is built before the clock starts: a client holds its file's bytes already.
  const payload = Buffer.from(JSON.stringify({ trajectory: file, lammps_types: types, ...body }));
  const t0 = performance.now();
  const res = await pool.request({
    method: "POST",
    path: `/api/md/${route}`,
    body: payload,
    headers: { "content-type": "application/json" },
  });
  const out = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${route}: ${out.slice(0, 300)}`);
  const seconds = (performance.now() - t0) / 1000;
  // Printed as it comes: the whole run takes long at full size.
  console.log(`service ${route}${body.method ? ` (${body.method})` : ""}: ${seconds.toFixed(2)} s`);
  return seconds;
};
// The analysis worker is a warm process (pymatgen and scikit-learn imported once at its start):
// start it with a small HDBSCAN call before the clock runs, as a running service has it.
{
  const tiny = generateTrajectory({ nAtoms: 3, nFrames: 10, cell: [5, 0, 0, 0, 5, 0, 0, 0, 5], seed: 1 });
  const res = await pool.request({
    method: "POST",
    path: "/api/md/clustering",
    body: JSON.stringify({ trajectory: { content: toLammpsDump(tiny), filename: "tiny.lammpstrj" }, method: "hdbscan" }),
    headers: { "content-type": "application/json" },
  });
  if (res.statusCode !== 200) throw new Error(`warm-up: ${await res.body.text()}`);
  await res.body.dump();
}
const service = {
  rdf: await call("rdf", { selection_a: { elements: ["O"] }, r_max_ang: rMax, n_bins: nBins }),
  rmsd: await call("rmsd", {}),
  hbonds: await call("hbonds", { max_listed: 0 }),
  clustering: await call("clustering", { frames_range: { step: clusterStep }, n_clusters: 3 }),
  hdbscan: await call("clustering", { frames_range: { step: clusterStep }, method: "hdbscan", min_cluster_size: 5 }),
};
await pool.close();
server.kill();

const ref = await runPython<Record<string, number>>(
  new URL("./md_reference.py", import.meta.url).pathname,
  {
    path,
    r_max: rMax,
    n_bins: nBins,
    cluster_step: clusterStep,
  },
  { timeoutMs: 4 * 3600_000 },
); // MDAnalysis takes tens of minutes at 10,000 × 1,000 on shared cores

const row = (name: string, ours: number, theirs: number) =>
  console.log(
    `${name.padEnd(28)} ours ${ours.toFixed(2).padStart(8)} s   MDAnalysis ${theirs.toFixed(2).padStart(8)} s   ratio ${(ours / theirs).toFixed(2)}`,
  );
row("read into memory", readS, ref.read as number);
for (const k of ["rdf", "rmsd", "hbonds", "clustering", "hdbscan"] as const)
  row(`${k} (service, with upload)`, service[k], ref[k] as number);
console.log(
  `memory: trajectory arrays ${(trajectory.byteLength / raw).toFixed(3)}× raw coordinates; heap+buffers grew ${((heap1 - heap0) / raw).toFixed(3)}× raw (${(raw / 1e6).toFixed(0)} MB raw); MDAnalysis in memory ${((ref.read_bytes as number) / raw).toFixed(3)}× (float32)`,
);
