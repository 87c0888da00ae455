/**
 * What the job queue adds to an HTTP calculator request (run: `node --import tsx bench/calculator-jobs.ts`):
 * the same small EMT single point (4 Cu atoms) and a short BFGS relaxation sent to a service
 * without Redis (the direct worker pool, the reference) and to one with a real redis-server
 * (every request a BullMQ job run by the same pool), one request at a time, measured in the same
 * run. Prints median and p99 per request and the ratio queue / direct. BENCH_REQUESTS (default 100).
 */
import { fccCluster } from "atomstudio-testkit";
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";
import { calcQueue } from "../packages/server/src/jobs/queue.ts";
import { optimizeWsPlugin } from "../packages/server/src/optimize/ws.ts";
import { workflowPlugin } from "../packages/server/src/workflow/plugin.ts";
import { startRedis } from "../packages/studio/test/support.ts";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100);
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] as number;

const redis = await startRedis();
const config = (over: Record<string, unknown>) =>
  loadConfig({ host: "127.0.0.1", port: 0, logLevel: "silent", workers: 1, ...over }, {});
const direct = await buildApp({ config: config({}), plugins: [optimizeWsPlugin] });
const queued = await buildApp({ config: config({ queueUrl: redis.url }), plugins: [workflowPlugin(), optimizeWsPlugin] });
const bases = {
  direct: await direct.app.listen({ port: 0, host: "127.0.0.1" }),
  queue: await queued.app.listen({ port: 0, host: "127.0.0.1" }),
};
while (!((await queued.ctx.services.queue?.queue(calcQueue("emt")).getWorkersCount()) ?? 0))
  await new Promise((r) => setTimeout(r, 50));

const cluster = fccCluster(1, { jitter: 0.1 });
const cases: Array<[string, string, unknown]> = [
  ["energy", "/api/optimize/energy", { structure: cluster, calculator: "emt" }],
  ["relax", "/api/optimize/structure", { structure: cluster, calculator: "emt", fmax: 0.05 }],
];
for (const [name, path, body] of cases) {
  const times: Record<string, number[]> = { direct: [], queue: [] };
  for (let i = 0; i < REQUESTS + 5; i++)
    for (const mode of ["direct", "queue"] as const) {
      const t = performance.now();
      const res = await fetch(bases[mode] + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await res.json();
      if (res.status !== 200) throw new Error(`${mode} ${path}: ${res.status}`);
      if (i >= 5) times[mode]?.push(performance.now() - t); // the first few warm both up
    }
  const [d, q] = [times.direct as number[], times.queue as number[]];
  console.log(
    `${name}: direct median ${quantile(d, 0.5).toFixed(2)} ms p99 ${quantile(d, 0.99).toFixed(2)} ms; ` +
      `queue median ${quantile(q, 0.5).toFixed(2)} ms p99 ${quantile(q, 0.99).toFixed(2)} ms; ` +
      `ratio ${(quantile(q, 0.5) / quantile(d, 0.5)).toFixed(2)}x, +${(quantile(q, 0.5) - quantile(d, 0.5)).toFixed(2)} ms`,
  );
}
await direct.app.close();
await queued.app.close();
await redis.stop();
