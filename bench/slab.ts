/**
 * Slab generation: the core's `generateSlabs` (all terminations, what `slab` computes) against
 * pymatgen's `SlabGenerator.get_slabs()` on the same inputs, in the same run.
 *
 *   node --import tsx bench/slab.ts [--repeats N]
 *
 * Times are the best of N runs for pymatgen (default 1) and of max(5, N) for the core after ten
 * warm-ups, as CPU time (user + system) of
 * each process, which stays meaningful on a shared, loaded machine; wall-clock times are printed
 * beside them. The ratio is pymatgen / core CPU time.
 */
import { runPython, TESTDATA } from "atomstudio-testkit";
import { fromDict, generateSlabs, initSymmetry, type SlabOptions } from "../packages/core/src/index.ts";

interface BenchCase {
  name: string;
  bulk: string;
  miller: number[];
  thickness: number;
  vacuum: number;
  primitive: boolean;
  symmetrize: boolean;
}

const CASES: BenchCase[] = [
  {
    name: "Cu fcc (111), 6 planes",
    bulk: "Cu_fcc",
    miller: [1, 1, 1],
    thickness: 6,
    vacuum: 15,
    primitive: true,
    symmetrize: false,
  },
  {
    name: "Cu fcc (321), 8.5 A",
    bulk: "Cu_fcc",
    miller: [3, 2, 1],
    thickness: 8.5,
    vacuum: 15,
    primitive: true,
    symmetrize: false,
  },
  {
    name: "Mg hcp (210), 4 planes",
    bulk: "Mg_hcp",
    miller: [2, 1, 0],
    thickness: 4,
    vacuum: 15,
    primitive: true,
    symmetrize: false,
  },
  {
    name: "TiO2 rutile (110), 8.5 A",
    bulk: "TiO2_rutile",
    miller: [1, 1, 0],
    thickness: 8.5,
    vacuum: 15,
    primitive: true,
    symmetrize: false,
  },
  {
    name: "SrTiO3 (111), 4 planes, symmetrize",
    bulk: "SrTiO3_perovskite",
    miller: [1, 1, 1],
    thickness: 4,
    vacuum: 15,
    primitive: true,
    symmetrize: true,
  },
  {
    name: "LiFePO4 (28 atoms) (010), 2 planes",
    bulk: "LiFePO4_olivine",
    miller: [0, 1, 0],
    thickness: 2,
    vacuum: 15,
    primitive: true,
    symmetrize: false,
  },
  {
    name: "LiFePO4 (28 atoms) (211), 5.5 A",
    bulk: "LiFePO4_olivine",
    miller: [2, 1, 1],
    thickness: 5.5,
    vacuum: 15,
    primitive: false,
    symmetrize: false,
  },
  {
    name: "MgAl2O4 spinel (56 atoms) (211), 1 plane",
    bulk: "MgAl2O4_spinel",
    miller: [2, 1, 1],
    thickness: 1,
    vacuum: 15,
    primitive: false,
    symmetrize: false,
  },
];

// pymatgen takes minutes on the large cases: one run by default; the core always gets 3.
const repeatsArg = process.argv.indexOf("--repeats");
const repeats = repeatsArg > 0 ? Number(process.argv[repeatsArg + 1]) : 1;
const coreRepeats = Math.max(5, repeats);
// The JIT settles after a few runs (process CPU time also counts compiler and GC threads).
const WARMUP = 10;
const oracle = new URL("../packages/core/test/oracle/slab_bench.py", import.meta.url).pathname;

await initSymmetry();
const py = await runPython<{
  bulks: Record<string, unknown>;
  results: { name: string; seconds: number; cpu_seconds: number; n_terminations: number; n_sites: number }[];
}>(oracle, { testdata: TESTDATA, repeats, cases: CASES }, { timeoutMs: 3_600_000 });

const rows: string[][] = [
  ["case", "atoms", "terms", "core cpu ms", "pymatgen cpu ms", "ratio", "core wall ms", "pymatgen wall ms", "wall ratio"],
];
let coreTotal = 0;
let coreWallTotal = 0;
let pyWallTotal = 0;
let pyTotal = 0;
for (const c of CASES) {
  const bulk = fromDict(py.bulks[c.bulk]);
  const opts: SlabOptions = {
    miller: c.miller,
    thickness: c.thickness,
    vacuum: c.vacuum,
    primitive: c.primitive,
    symmetrize: c.symmetrize,
  };
  let cells = generateSlabs(bulk, opts);
  for (let w = 1; w < WARMUP; w++) cells = generateSlabs(bulk, opts);
  let best = Number.POSITIVE_INFINITY;
  let bestWall = Number.POSITIVE_INFINITY;
  for (let r = 0; r < coreRepeats; r++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    cells = generateSlabs(bulk, opts);
    const cpu = process.cpuUsage(c0);
    best = Math.min(best, (cpu.user + cpu.system) / 1000);
    bestWall = Math.min(bestWall, performance.now() - t0);
  }
  const ref = py.results.find((r) => r.name === c.name);
  const pyMs = (ref?.cpu_seconds ?? Number.NaN) * 1000;
  const pyWallMs = (ref?.seconds ?? Number.NaN) * 1000;
  coreTotal += best;
  pyTotal += pyMs;
  const agree =
    ref && ref.n_terminations === cells.length && ref.n_sites === (cells[0]?.species.length ?? 0) ? "" : " (differs!)";
  rows.push([
    c.name,
    String(cells[0]?.species.length ?? 0),
    `${cells.length}${agree}`,
    best.toFixed(1),
    pyMs.toFixed(1),
    `${(pyMs / best).toFixed(1)}x`,
    bestWall.toFixed(1),
    pyWallMs.toFixed(1),
    `${(pyWallMs / bestWall).toFixed(1)}x`,
  ]);
  coreWallTotal += bestWall;
  pyWallTotal += pyWallMs;
}
rows.push([
  "total",
  "",
  "",
  coreTotal.toFixed(1),
  pyTotal.toFixed(1),
  `${(pyTotal / coreTotal).toFixed(1)}x`,
  coreWallTotal.toFixed(1),
  pyWallTotal.toFixed(1),
  `${(pyWallTotal / coreWallTotal).toFixed(1)}x`,
]);
const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
for (const r of rows) console.log(r.map((x, i) => (i === 0 ? x.padEnd(widths[i] ?? 0) : x.padStart(widths[i] ?? 0))).join("  "));
