/**
 * Benchmark of the /api/heterostructure routes (run: `node --import tsx bench/heterostructure.ts`).
 * In the same run, for graphene on Cu(111), MoS2 on WS2 and graphite on Cu(111) (bulk mode):
 *   pymatgen — in-process Python doing the same work from the same dictionaries
 *              (bench/pymatgen_hetero.py, a long-lived process like the warm worker; imports not
 *              timed, one warm-up call first), one call right before each request (bench/reference.ts)
 *   service  — a request through HTTP to the warm analysis worker (JSON in and out, strains and
 *              integer transformations per match included)
 * and prints medians and service/pymatgen (target ≤ 1.3). BENCH_RUNS rounds (default 9).
 */
import { runPython } from "atomstudio-testkit";
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";
import { startReference } from "./reference.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 9);

const INPUTS = `
import json
from pymatgen.core import Lattice, Structure
from pymatgen.core.surface import SlabGenerator
def tmd(m, a, dz, c=20.0):
    return Structure(Lattice.hexagonal(a, c), [m, "S", "S"], [[1/3, 2/3, .5], [2/3, 1/3, .5 + dz / c], [2/3, 1/3, .5 - dz / c]])
cu = Structure.from_spacegroup("Fm-3m", Lattice.cubic(3.615), ["Cu"], [[0, 0, 0]])
cu111 = Structure.from_sites(SlabGenerator(cu, (1, 1, 1), 6, 15, center_slab=True, primitive=True).get_slab().sites)
gr = Structure(Lattice.hexagonal(2.46, 20.0), ["C", "C"], [[1/3, 2/3, .5], [2/3, 1/3, .5]])
graphite = Structure(Lattice.hexagonal(2.46, 6.7), ["C"] * 4, [[0, 0, .25], [0, 0, .75], [1/3, 2/3, .25], [2/3, 1/3, .75]])
print(json.dumps({k: v.as_dict() for k, v in dict(cu=cu, cu111=cu111, graphene=gr, graphite=graphite, mos2=tmd("Mo", 3.16, 1.58), ws2=tmd("W", 3.153, 1.57)).items()}))
`;

type S = Record<string, unknown>;
const inputs = await runPython<Record<string, S>>(INPUTS, {});
const bulk = { mode: "bulk", substrate_miller: [1, 1, 1], film_miller: [0, 0, 1], max_area: 100, max_results: 200 };

const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "error" }, {});
const { app } = await buildApp({ config, plugins: [] });
await app.listen({ host: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const post = async (path: string, body: unknown): Promise<S> => {
  const res = await fetch(`${base}/api/heterostructure/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const out = (await res.json()) as S;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
  return out;
};

const bulkSearch = await post("search", { substrate: inputs.cu, film: inputs.graphite, params: bulk });
const firstBulk = (bulkSearch.matches as S[]).find((m) => m.match_id === 0);
const cases: Record<string, () => Promise<unknown>> = {
  "search slab graphene/Cu(111)": () =>
    post("search", { substrate: inputs.cu111, film: inputs.graphene, params: { mode: "slab", max_area: 100, max_results: 200 } }),
  "search slab MoS2/WS2": () =>
    post("search", { substrate: inputs.ws2, film: inputs.mos2, params: { mode: "slab", max_area: 30, max_results: 200 } }),
  "search bulk graphite/Cu(111)": () => post("search", { substrate: inputs.cu, film: inputs.graphite, params: bulk }),
  "build bulk graphite/Cu(111)": () =>
    post("build", { substrate: inputs.cu, film: inputs.graphite, match: firstBulk, search_params: bulk }),
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const reference = startReference(new URL("./pymatgen_hetero.py", import.meta.url).pathname);
await reference.call({ inputs });
const service: Record<string, number[]> = {};
const pymatgen: Record<string, number[]> = {};
for (const [name, fn] of Object.entries(cases)) {
  // warm-up of both (the worker's imports and pymatgen's lazy ones)
  await fn();
  await reference.call({ case: name });
  service[name] = [];
  pymatgen[name] = [];
}
for (let round = 0; round < RUNS; round++) {
  // interleaved call by call: one pymatgen run, then one request, after the same short idle
  for (const [name, fn] of Object.entries(cases)) {
    pymatgen[name]?.push((await reference.call<{ seconds: number }>({ case: name })).seconds);
    const t = performance.now();
    await fn();
    service[name]?.push((performance.now() - t) / 1000);
  }
}
await reference.close();
await app.close();

console.log(`heterostructure routes, ${RUNS} rounds, medians (ms)`);
console.log("case".padEnd(34), "pymatgen".padStart(10), "service".padStart(10), "service/pymatgen".padStart(18));
for (const name of Object.keys(cases)) {
  const p = median(pymatgen[name] ?? [Number.NaN]) * 1000;
  const s = median(service[name] ?? [Number.NaN]) * 1000;
  console.log(name.padEnd(34), p.toFixed(1).padStart(10), s.toFixed(1).padStart(10), (s / p).toFixed(2).padStart(18));
}
