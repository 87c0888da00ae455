/**
 * Benchmark of /api/adsorption/sites and /place (run: `node --import tsx bench/adsorption.ts`). On
 * Pt(111), Cu(100), rutile TiO2(110), stepped Pt(211) (the conformance slabs) and a 4×4 Pt(111)
 * slab, it measures in the same run, interleaved:
 *   pymatgen — in-process AdsorbateSiteFinder doing the same work from the same dictionary
 *              (bench/adsorption_reference.py, a long-lived process like the worker; import not
 *              timed), one call right before each service request (bench/reference.ts)
 *   service  — the HTTP request (sites: through the warm analysis worker; place: the compute pool)
 *   core     — placement by the core's placeAdsorbate in process (what the compute task runs)
 * and prints medians, service/pymatgen for sites (worker target ≤ 1.3) and pymatgen/core for
 * placement (core target ≥ 10). BENCH_RUNS rounds (default 15).
 */
import { fromDict, placeAdsorbate, type Vec3 } from "atomstudio-core";
import { runPython } from "atomstudio-testkit";
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";
import { startReference } from "./reference.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
type Dict = Record<string, unknown> & { sites: Array<{ xyz: number[] }>; lattice: { matrix: number[][] } };
const CO = {
  sites: [
    { species: [{ element: "C", occu: 1 }], xyz: [0, 0, 0] },
    { species: [{ element: "O", occu: 1 }], xyz: [0, 0, 1.128] },
  ],
};

const oracle = new URL("../packages/server/test/oracle/adsorption_oracle.py", import.meta.url).pathname;
const slabs: Record<string, Dict> = {};
for (const [name, o] of Object.entries(await runPython<Record<string, { slab: Dict }>>(oracle, { slabs: true })))
  slabs[name] = o.slab;
slabs["Pt(111) 4×4"] = await runPython<Dict>(
  "import json,sys; from pymatgen.core import Structure; s=Structure.from_dict(json.load(sys.stdin)); s.make_supercell([4,4,1]); print(json.dumps(s.as_dict()))",
  slabs["Pt(111)"],
);

const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "error" }, {});
const { app } = await buildApp({ config, plugins: [] });
await app.listen({ host: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const post = async (path: string, body: unknown): Promise<{ ms: number; body: Record<string, unknown> }> => {
  const t = performance.now();
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const out = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(JSON.stringify(out).slice(0, 300));
  return { ms: performance.now() - t, body: out };
};
// warm the worker (process start and pymatgen import are not a request's cost)
await post("/api/adsorption/sites", { structure: slabs["Pt(111)"] });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};
const times: Record<
  string,
  { sites: number[]; place: number[]; core: number[]; pySites: number[]; pyPlace: number[]; n: number }
> = {};
for (const name of Object.keys(slabs)) times[name] = { sites: [], place: [], core: [], pySites: [], pyPlace: [], n: 0 };
const co = fromDict(CO);
/** Mean of 50 in-process placements with the 1.5 Å clearance check (each from the dictionary, as the task starts), ms. */
const corePlace = (slab: Dict, site: number[], normal: number[]): number => {
  const reps = 50;
  const t = performance.now();
  for (let k = 0; k < reps; k++)
    placeAdsorbate(fromDict(slab), co, { binding: [0], site: site as Vec3, normal: normal as Vec3, clearance: 1.5 });
  return (performance.now() - t) / reps;
};
// warm the JIT on every slab first (the service's compute threads are warm too)
for (const slab of Object.values(slabs)) corePlace(slab, [0, 0, 40], [0, 0, 1]);
const reference = startReference(new URL("./adsorption_reference.py", import.meta.url).pathname);
await reference.call({ slabs, runs: 1 }); // warm, as the worker was warmed above
for (let round = 0; round < RUNS; round++) {
  for (const [name, slab] of Object.entries(slabs)) {
    const t = times[name]!;
    // one reference call, then one request: both after the same short idle, under the same load
    const py = await reference.call<Record<string, { sites_ms: number; place_ms: number; n_sites: number }>>({
      slabs: { [name]: slab },
      runs: 1,
    });
    t.pySites.push(py[name]!.sites_ms);
    t.pyPlace.push(py[name]!.place_ms);
    const s = await post("/api/adsorption/sites", { structure: slab });
    t.sites.push(s.ms);
    const sites = s.body.sites as Array<{ position: number[]; normal: number[] }>;
    t.n = sites.length;
    if (t.n !== py[name]!.n_sites) throw new Error(`${name}: ${t.n} sites, pymatgen ${py[name]!.n_sites}`);
    const p = await post("/api/adsorption/place", {
      slab,
      adsorbate: CO,
      site_position: sites[0]!.position,
      site_normal: sites[0]!.normal,
    });
    t.place.push(p.ms);
    t.core.push(corePlace(slab, sites[0]!.position, sites[0]!.normal));
  }
}
await reference.close();
await app.close();

console.log(`adsorption: medians of ${RUNS} rounds (ms); sites through the warm analysis worker, place through the compute pool`);
console.log("slab                 atoms sites | sites: pymatgen service svc/pmg | place: pymatgen    core pmg/core service");
for (const [name, t] of Object.entries(times)) {
  const [ps, ss, pp, cp, sp] = [median(t.pySites), median(t.sites), median(t.pyPlace), median(t.core), median(t.place)];
  console.log(
    `${name.padEnd(20)} ${String(slabs[name]!.sites.length).padStart(5)} ${String(t.n).padStart(5)} | ` +
      `${ps.toFixed(1).padStart(14)} ${ss.toFixed(1).padStart(7)} ${(ss / ps).toFixed(2).padStart(7)} | ` +
      `${pp.toFixed(2).padStart(14)} ${cp.toFixed(3).padStart(7)} ${(pp / cp).toFixed(1).padStart(8)} ${sp.toFixed(1).padStart(7)}`,
  );
}
