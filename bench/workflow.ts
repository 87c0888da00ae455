/**
 * Benchmark of the job queue and the workflow orchestrator (run: `node --import tsx bench/workflow.ts`),
 * on a real redis-server (loopback, no persistence) and real Python `atomstudio-worker --queue`
 * processes, measured in the same run:
 *
 *   overhead   — a chain of 60 no-op steps (a 1x1x1 supercell of one atom) run as a workflow: the
 *                time between one node finishing and the next finishing, against calling the
 *                operation directly (validated input + handler) in this process. Median and p99.
 *   throughput — 1,000 small EMT single points (4 Cu atoms) put on the `calc-emt` queue and taken
 *                by 1, 2 and 4 Python workers, against the same 1,000 single points computed in
 *                one Python process directly (bench/workflow_direct.py, the reference).
 *   recovery   — a worker SIGKILLed while it runs a long job: seconds until the job runs again on
 *                the other worker (lock ATOMSTUDIO_QUEUE_LOCK_S, here BENCH_LOCK_S, default 2 s).
 *
 * BENCH_JOBS (default 1000), BENCH_WORKERS (default "1,2,4").
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { PYTHON } from "atomstudio-testkit";
import { Queue, QueueEvents } from "bullmq";
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";
import { QUEUE_PREFIX } from "../packages/server/src/jobs/queue.ts";
import { operations } from "../packages/server/src/operations/index.ts";
import { parseInput } from "../packages/server/src/registry/validate.ts";
import { workflowPlugin } from "../packages/server/src/workflow/plugin.ts";
import { startRedis } from "../packages/studio/test/support.ts";

const REPO = new URL("..", import.meta.url).pathname;
const JOBS = Number(process.env.BENCH_JOBS ?? 1000);
const WORKERS = (process.env.BENCH_WORKERS ?? "1,2,4").split(",").map(Number);
const LOCK_S = Number(process.env.BENCH_LOCK_S ?? 2);

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
};
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

const cu1 = {
  "@class": "Structure",
  lattice: {
    matrix: [
      [0, 1.8, 1.8],
      [1.8, 0, 1.8],
      [1.8, 1.8, 0],
    ],
  },
  sites: [{ species: [{ element: "Cu", occu: 1 }], abc: [0, 0, 0] }],
};
const cu4 = (a: number) => ({
  "@class": "Structure",
  lattice: {
    matrix: [
      [a, 0, 0],
      [0, a, 0],
      [0, 0, a],
    ],
  },
  sites: [
    [0, 0, 0],
    [0.5, 0.5, 0],
    [0.5, 0, 0.5],
    [0, 0.5, 0.5],
  ].map((abc) => ({ species: [{ element: "Cu", occu: 1 }], abc })),
});

const redis = await startRedis();
const children: ChildProcess[] = [];
const cleanup = async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await redis.stop();
};

const pyWorker = (): Promise<{ child: ChildProcess; started: string[] }> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      PYTHON,
      ["-m", "atomstudio_worker", "--queue", "--redis-url", redis.url, "--calculators", "emt", "--lock-s", String(LOCK_S)],
      {
        env: { ...process.env, PYTHONPATH: join(REPO, "worker/src"), OMP_NUM_THREADS: "1", ATOMSTUDIO_WORKER_LOG_LEVEL: "INFO" },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    children.push(child);
    const started: string[] = [];
    child.once("exit", (code) => reject(new Error(`worker exited with ${code}`)));
    createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (line) => {
      const job = / job (\S+): /.exec(line);
      if (job) started.push(job[1] as string);
      if (line.includes("taking jobs for")) resolve({ child, started });
    });
  });

try {
  // -- overhead ------------------------------------------------------------------------------
  const config = loadConfig(
    { host: "127.0.0.1", port: 0, logLevel: "silent", queueUrl: redis.url, queueCalculators: false, queueLockMs: LOCK_S * 1000 },
    {},
  );
  const { app, ctx } = await buildApp({ config, plugins: [workflowPlugin()] });
  await app.ready();
  const supercell = operations.find((o) => o.id === "supercell") as (typeof operations)[number];
  const direct: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    await supercell.handler(parseInput(supercell, { structure: cu1, scaling: [1, 1, 1] }, config), ctx);
    direct.push(performance.now() - t);
  }
  const wf = ctx.services.workflows as NonNullable<typeof ctx.services.workflows>;
  const chain = {
    name: "no-op chain",
    nodes: Array.from({ length: 60 }, (_, i) => ({
      id: `n${i}`,
      type: "supercell",
      params: { scaling: [1, 1, 1], ...(i === 0 ? { structure: cu1 } : {}) },
      inputs: i === 0 ? {} : { structure: `n${i - 1}.structure` },
      retries: undefined,
    })),
  };
  const gaps: number[] = [];
  for (let round = 0; round < 5; round++) {
    const { id } = await wf.create(chain as never);
    const { run_id } = await wf.run({ workflow_id: id } as never, undefined);
    let st = await wf.status(run_id);
    while (st.run?.status === "queued" || st.run?.status === "running") {
      await new Promise((r) => setTimeout(r, 50));
      st = await wf.status(run_id);
    }
    const ends = (st.run?.nodes ?? []).map((n) => Date.parse(n.finished_at as string));
    for (let i = 1; i < ends.length; i++) gaps.push((ends[i] as number) - (ends[i - 1] as number));
  }
  await app.close();
  const dMed = quantile(direct, 0.5);
  const qMed = quantile(gaps, 0.5);
  console.log(
    `overhead per node (no-op supercell, ${gaps.length} nodes): queue median ${fmt(qMed)}, p99 ${fmt(quantile(gaps, 0.99))}; ` +
      `direct call median ${fmt(dMed)}, p99 ${fmt(quantile(direct, 0.99))}; added per node ≈ ${fmt(qMed - dMed)}`,
  );

  // -- throughput ----------------------------------------------------------------------------
  const directOut = execFileSync(PYTHON, [join(REPO, "bench/workflow_direct.py"), String(JOBS)], {
    env: { ...process.env, PYTHONPATH: join(REPO, "worker/src"), OMP_NUM_THREADS: "1" },
  }).toString();
  const directS = Number(/seconds=(\S+)/.exec(directOut)?.[1]);
  console.log(
    `reference: ${JOBS} EMT single points in one Python process directly: ${directS.toFixed(2)} s (${(JOBS / directS).toFixed(0)} jobs/s)`,
  );
  const connection = { host: "127.0.0.1", port: Number(new URL(redis.url).port) };
  const queue = new Queue("calc-emt", { connection, prefix: QUEUE_PREFIX });
  const events = new QueueEvents("calc-emt", { connection, prefix: QUEUE_PREFIX });
  await events.waitUntilReady();
  for (const n of WORKERS) {
    const workers = await Promise.all(Array.from({ length: n }, () => pyWorker()));
    await queue.obliterate({ force: true });
    let done = 0;
    const allDone = new Promise<void>((resolve) => {
      const on = () => {
        done++;
        if (done === JOBS) resolve();
      };
      events.on("completed", on);
      events.on("failed", on);
    });
    const t = performance.now();
    await queue.addBulk(
      Array.from({ length: JOBS }, (_, i) => ({
        name: "energy",
        data: {
          run_id: "bench",
          node_id: "e",
          item: i,
          operation: "energy",
          input: { structure: cu4(3.5 + (i % 50) * 0.004), calculator: "emt", frozen_atoms: [] },
        },
        opts: { jobId: `bench${n}:e:${i}`, removeOnComplete: true },
      })),
    );
    await allDone;
    const s = (performance.now() - t) / 1000;
    events.removeAllListeners("completed");
    events.removeAllListeners("failed");
    const counts = workers.map((w) => w.started.length);
    console.log(
      `throughput, ${n} worker${n > 1 ? "s" : ""}: ${JOBS} jobs in ${s.toFixed(2)} s = ${(JOBS / s).toFixed(0)} jobs/s ` +
        `(${(directS / s).toFixed(2)}x the direct loop; jobs per worker ${counts.join(", ")})`,
    );
    for (const w of workers) {
      const exited = new Promise((r) => w.child.once("exit", r));
      w.child.kill("SIGTERM");
      await exited;
    }
  }

  // -- recovery ------------------------------------------------------------------------------
  const [a, b] = await Promise.all([pyWorker(), pyWorker()]);
  const rattled = cu4(3.7);
  rattled.sites[0] = { species: [{ element: "Cu", occu: 1 }], abc: [0.08, 0.02, 0] };
  await queue.add(
    "optimize",
    {
      run_id: "bench",
      node_id: "long",
      item: 0,
      operation: "optimize_structure",
      input: { structure: rattled, calculator: "emt", optimizer: "bfgs", fmax: 1e-7, max_steps: 4000, frozen_atoms: [] },
    },
    { jobId: "bench:long:0" },
  );
  const wait = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setTimeout(r, 20));
  };
  await wait(() => a.started.length + b.started.length > 0);
  const [victim, survivor] = a.started.length ? [a, b] : [b, a];
  victim.child.kill("SIGKILL");
  const killed = performance.now();
  await wait(() => survivor.started.length > 0);
  console.log(
    `recovery: the job ran again on the other worker ${((performance.now() - killed) / 1000).toFixed(2)} s after the SIGKILL (job lock ${LOCK_S} s)`,
  );
  await queue.close();
  await events.close();
} finally {
  await cleanup();
}
process.exit(0);
