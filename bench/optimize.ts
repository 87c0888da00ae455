/**
 * Optimization benchmark through the service (run: `node --import tsx bench/optimize.ts`), against
 * the same work done in-process by ASE/CHGNet in the same run:
 *   - per-step time of EMT + BFGS on a 500-atom Cu cluster, streamed over the WebSocket, versus the
 *     same ASE loop in-process (target overhead <= 10 %)
 *   - warm single-point energy latency for CHGNet on a 64-atom cell, POST /api/optimize/energy,
 *     versus a direct in-process call (target <= 1.2x)
 *   - cold start: a fresh worker pool to the first EMT answer
 * CPU only unless ATOMSTUDIO_DEVICE=cuda is set (then CHGNet runs on the GPU in both paths).
 */
import { fccCluster, runPython } from "atomstudio-testkit";
import WebSocket from "ws";
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";
import { optimizeWsPlugin } from "../packages/server/src/optimize/ws.ts";

const STEPS = 40;
const cluster = fccCluster(5, { jitter: 0.05 });
const cell64 = (() => {
  const a = 4.2;
  const sites = [];
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 2; j++)
      for (let l = 0; l < 2; l++)
        for (const [x, y, z, el] of [
          [0, 0, 0, "Mg"],
          [0.5, 0.5, 0, "Mg"],
          [0.5, 0, 0.5, "Mg"],
          [0, 0.5, 0.5, "Mg"],
          [0.5, 0, 0, "O"],
          [0, 0.5, 0, "O"],
          [0, 0, 0.5, "O"],
          [0.5, 0.5, 0.5, "O"],
        ] as const)
          sites.push({ species: [{ element: el, occu: 1 }], abc: [(i + x) / 2, (j + y) / 2, (l + z) / 2] });
  return {
    "@class": "Structure",
    lattice: {
      matrix: [
        [2 * a, 0, 0],
        [0, 2 * a, 0],
        [0, 0, 2 * a],
      ],
    },
    sites,
  };
})();

const { app } = await buildApp({
  config: loadConfig({ host: "127.0.0.1", port: 0, logLevel: "error" }, {}),
  plugins: [optimizeWsPlugin],
});
const base = await app.listen({ host: "127.0.0.1", port: 0 });

const t0 = performance.now();
const first = await fetch(`${base}/api/optimize/energy`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({
    structure: {
      "@class": "Molecule",
      sites: [
        { species: "Cu", xyz: [0, 0, 0] },
        { species: "Cu", xyz: [0, 0, 2.5] },
      ],
    },
    calculator: "emt",
  }),
});
await first.json();
const coldMs = performance.now() - t0;

const stepTimes: number[] = await new Promise((resolve, reject) => {
  const ws = new WebSocket(`${base.replace("http", "ws")}/api/optimize/ws`);
  const stamps: number[] = [];
  ws.on("open", () =>
    ws.send(JSON.stringify({ action: "start", structure: cluster, calculator: "emt", fmax: 1e-9, max_steps: STEPS })),
  );
  ws.on("message", (raw) => {
    const m = JSON.parse(raw.toString());
    if (m.type === "step") stamps.push(performance.now());
    else if (m.type === "result" || m.type === "error") {
      ws.close();
      if (m.type === "error") reject(new Error(m.error));
      else resolve(stamps);
    }
  });
});
const serviceStepMs = (stepTimes.at(-1)! - stepTimes[0]!) / (stepTimes.length - 1);

const chgnetMs: number[] = [];
let chgnetError = "";
for (let i = 0; i < 12; i++) {
  const t = performance.now();
  const res = await fetch(`${base}/api/optimize/energy`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      structure: cell64,
      calculator: "chgnet",
      ...(process.env.ATOMSTUDIO_DEVICE ? { calculator_params: { device: process.env.ATOMSTUDIO_DEVICE } } : {}),
    }),
  });
  const body = (await res.json()) as { error?: string };
  if (res.status !== 200) {
    chgnetError = body.error ?? String(res.status);
    break;
  }
  if (i >= 2) chgnetMs.push(performance.now() - t); // first calls load the model
}
chgnetMs.sort((a, b) => a - b);
await app.close();

const direct = await runPython<{
  emt_step_s: number;
  emt_steps: number;
  chgnet_energy_s?: number;
  chgnet_load_s?: number;
  chgnet_error?: string;
}>(
  new URL("./optimize_direct.py", import.meta.url).pathname,
  { cluster, steps: STEPS, cell64, repeat: 10 },
  { timeoutMs: 900_000 },
);
const directStepMs = direct.emt_step_s * 1000;
console.log(`EMT + BFGS, 500-atom Cu cluster, ${stepTimes.length} steps over the WebSocket`);
console.log(
  `  service ${serviceStepMs.toFixed(2)} ms/step, ASE in-process ${directStepMs.toFixed(2)} ms/step, overhead ${((serviceStepMs / directStepMs - 1) * 100).toFixed(1)} %`,
);
if (chgnetMs.length && direct.chgnet_energy_s) {
  const svc = chgnetMs[Math.floor(chgnetMs.length / 2)] as number;
  const dir = direct.chgnet_energy_s * 1000;
  console.log(
    `CHGNet single point, 64-atom MgO cell (warm): service ${svc.toFixed(1)} ms, direct ${dir.toFixed(1)} ms, ratio ${(svc / dir).toFixed(2)}x`,
  );
  console.log(`  CHGNet model load in-process: ${(direct.chgnet_load_s ?? 0).toFixed(2)} s`);
} else console.log(`CHGNet: not measured (${chgnetError || direct.chgnet_error})`);
console.log(`cold start (new worker pool to first EMT energy): ${coldMs.toFixed(0)} ms`);
