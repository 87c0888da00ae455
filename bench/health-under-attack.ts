/**
 * `/api/health` latency before and during an attack of CPU-heavy requests at their caps (README
 * "Security defaults", packages/server/src/compute/README.md): Cu(10 9 7) slabs (Miller index at
 * the cap, about 16 s of work each), symmetry of a 4,096-atom near-periodic cell (30 s and more
 * in moyo), and CIFs whose symmetry expansion stops at the atom cap (9,984 atoms) or is refused
 * (the 16 KB bomb). The service runs as `atomstudio serve` in its own process; the attack keeps
 * `--concurrency` requests in flight while health is sampled every 20 ms.
 *
 *   node --import tsx bench/health-under-attack.ts [--seconds 20] [--concurrency 6]
 */
import { parseArgs } from "node:util";
import { fromDict, supercell, toDict } from "../packages/core/src/index.ts";
import { cifBomb, fccCell, startServeProcess } from "../packages/testkit/src/index.ts";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "20" }, concurrency: { type: "string", default: "6" } },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);

const cu = fromDict(fccCell());

const nearPeriodic = () => {
  const big = supercell(supercell(cu, [8, 8, 8]), [2, 1, 1]);
  let seed = 1;
  for (let i = 0; i < big.cart.length; i++) {
    seed = (seed * 16807) % 2147483647;
    big.cart[i] = (big.cart[i] as number) + 0.012 * (seed / 2147483647 - 0.5);
  }
  return toDict(big);
};

const ATTACKS: Array<{ name: string; path: string; body: string }> = [
  {
    name: "slab Cu(10 9 7)",
    path: "/api/structure-build/slab",
    body: JSON.stringify({ structure: toDict(cu), miller: [10, 9, 7], thickness: 3 }),
  },
  {
    name: "symmetry, 4,096 near-periodic atoms",
    path: "/api/structure/info",
    body: JSON.stringify({ structure: nearPeriodic() }),
  },
  {
    name: "CIF expanded to 9,984 atoms",
    path: "/api/structure/parse",
    body: JSON.stringify({ content: cifBomb(192, 52), filename: "x.cif" }),
  },
  {
    name: "CIF bomb, 16 KB",
    path: "/api/structure/parse",
    body: JSON.stringify({ content: cifBomb(400, 400), filename: "x.cif" }),
  },
];

const start = () => startServeProcess({}, { stderr: "inherit" });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sampleHealth = async (url: string, seconds: number): Promise<number[]> => {
  const out: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const t = performance.now();
    const res = await fetch(`${url}/api/health`);
    await res.arrayBuffer();
    out.push(performance.now() - t);
    await sleep(20);
  }
  return out;
};

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};
const row = (label: string, xs: number[]) =>
  `| ${label} | ${xs.length} | ${pct(xs, 50).toFixed(1)} | ${pct(xs, 99).toFixed(1)} | ${Math.max(...xs).toFixed(1)} |`;

const svc = await start();
try {
  // Warm: the first compute request starts the threads.
  await fetch(`${svc.url}/api/structure/info`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ structure: toDict(cu) }),
  });
  const before = await sampleHealth(svc.url, Math.min(5, SECONDS));

  let stop = false;
  const outcomes = new Map<string, Map<number, number>>();
  const attacker = async (k: number) => {
    for (let i = k; !stop; i++) {
      const a = ATTACKS[i % ATTACKS.length] as (typeof ATTACKS)[number];
      let status = 0;
      try {
        const res = await fetch(`${svc.url}${a.path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: a.body,
        });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = 0;
      }
      const m = outcomes.get(a.name) ?? new Map<number, number>();
      m.set(status, (m.get(status) ?? 0) + 1);
      outcomes.set(a.name, m);
    }
  };
  const attackers = Array.from({ length: CONCURRENCY }, (_, k) => attacker(k));
  await sleep(500);
  const during = await sampleHealth(svc.url, SECONDS);
  stop = true;

  console.log(`/api/health latency, ms (${CONCURRENCY} heavy requests in flight during the attack)\n`);
  console.log("| phase | samples | p50 | p99 | max |\n|---|---|---|---|---|");
  console.log(row("before the attack", before));
  console.log(row("during the attack", during));
  console.log(
    `\nratio during/before: p50 ${(pct(during, 50) / pct(before, 50)).toFixed(2)}x, p99 ${(pct(during, 99) / pct(before, 99)).toFixed(2)}x`,
  );
  // The requests still in flight end within the compute deadline (30 s by default).
  await Promise.race([Promise.all(attackers), sleep(90_000)]);
  console.log("\nattack requests (status: count; 504 = stopped at the deadline, 400 = refused by a cap):");
  for (const [name, m] of outcomes) console.log(`  ${name}: ${[...m].map(([s, n]) => `${s}: ${n}`).join(", ")}`);
} finally {
  svc.stop();
}
process.exit(0);
