/**
 * UFF in the studio against RDKit's UFF (native C++), on the same 100-atom molecule from the same
 * start, in the same run (run: `node --import tsx bench/uff.ts [--repeat 5]`).
 *
 * The molecule is the pentapeptide Tyr-Phe-Leu-Lys-Val (100 atoms with hydrogens), embedded by
 * RDKit and displaced at random (seeded, 0.05 Å per coordinate: small enough that the studio's
 * bonds perceived from the bare XYZ are RDKit's, so both relax the same molecule). RDKit relaxes it
 * with its BFGS at its default tolerances (field set-up and minimisation timed in-process); the
 * largest per-atom gradient it stops at becomes the studio's fmax, so both stop equally close to the
 * minimum. Each of the `repeat` rounds times RDKit (the median of three runs) and then the studio, so
 * that a machine whose load drifts weighs on both alike; a ratio is the median of the rounds' ratios.
 *
 * The studio runs in headless Chromium, through its Optimize panel, and is timed twice:
 * - minimised (the headline, what "minimised in the browser" means): from the Relax click, which
 *   starts the Web Worker, to the result message on the page: typing the molecule, building the
 *   field, minimising, and every step posted to the page. The studio keeps the Worker of a finished
 *   run for the next one, so the first round starts a fresh Worker (its code loaded and compiled
 *   cold, printed apart) and the later rounds reuse it, as a user's second relaxation does;
 * - round trip: from the Relax click to the result redrawn in the viewer. It adds the final redraw,
 *   which with software WebGL (no GPU here) takes 0.3–1.3 s on a loaded machine and says nothing
 *   about UFF.
 * Both are printed with their ratio to RDKit, and so are the Worker's own computing time and the
 * same Worker script run bare from the page in a fresh Worker each round (no panel, nothing redrawn
 * while it runs): a cold start in every round.
 */
import { runPython } from "atomstudio-testkit";
import { KCAL_PER_MOL_IN_EV } from "../packages/core/src/forcefield/uff/index.ts";
import { ensureStudioBuilt, hasChromium, launchBrowser, openStudio, startService } from "../packages/studio/test/support.ts";

const repeat = Number(process.argv[process.argv.indexOf("--repeat") + 1]) || 5;
if (!hasChromium) throw new Error("the UFF benchmark needs Chromium (scripts/setup-system)");

const RDKIT = `
import json, sys, time
import numpy as np
from rdkit import Chem, RDLogger
from rdkit.Chem import AllChem, rdForceFieldHelpers
from rdkit.Chem import rdtrajectory  # noqa: F401  (registers the Snapshot type MinimizeTrajectory returns)
RDLogger.DisableLog("rdApp.*")
req = json.load(sys.stdin)
mol = Chem.AddHs(Chem.MolFromSmiles(req["smiles"]))
AllChem.EmbedMolecule(mol, randomSeed=3)
start = np.array(mol.GetConformer().GetPositions()) + np.random.default_rng(3).normal(scale=0.05, size=(mol.GetNumAtoms(), 3))
times = []
for _ in range(req["repeat"]):
    m = Chem.Mol(mol)
    conf = m.GetConformer()
    for i, p in enumerate(start):
        conf.SetAtomPosition(i, p.tolist())
    t = time.perf_counter()
    ff = rdForceFieldHelpers.UFFGetMoleculeForceField(m)
    ff.Initialize()
    left = ff.Minimize(maxIts=100000)
    times.append(time.perf_counter() - t)
g = np.array(ff.CalcGrad()).reshape(-1, 3)
# Iterations, counted apart from the timed runs: one trajectory snapshot per iteration.
counted = Chem.Mol(mol)
for i, p in enumerate(start):
    counted.GetConformer().SetAtomPosition(i, p.tolist())
counting_ff = rdForceFieldHelpers.UFFGetMoleculeForceField(counted)
counting_ff.Initialize()
iterations = len(counting_ff.MinimizeTrajectory(1, maxIts=100000)[1])
xyz = f"{m.GetNumAtoms()}\\nTyr-Phe-Leu-Lys-Val\\n" + "".join(
    f"{a.GetSymbol()} {p[0]:.10f} {p[1]:.10f} {p[2]:.10f}\\n" for a, p in zip(m.GetAtoms(), start))
print(json.dumps({"xyz": xyz, "n": m.GetNumAtoms(), "seconds": times, "converged": left == 0, "iterations": iterations,
                  "energy": ff.CalcEnergy(), "gmax": float(np.linalg.norm(g, axis=1).max())}))
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

type RdkitRun = {
  xyz: string;
  n: number;
  seconds: number[];
  converged: boolean;
  iterations: number;
  energy: number;
  gmax: number;
};
const runRdkit = (runs: number) =>
  runPython<RdkitRun>(
    RDKIT,
    {
      smiles: "CC(C)C[C@H](NC(=O)[C@@H](Cc1ccccc1)NC(=O)[C@@H](N)Cc1ccc(O)cc1)C(=O)N[C@@H](CCCCN)C(=O)N[C@@H](C(C)C)C(=O)O",
      repeat: runs,
    },
    { timeoutMs: 600_000 },
  );
const rdkit = await runRdkit(1);
const fmax = rdkit.gmax * KCAL_PER_MOL_IN_EV;

await ensureStudioBuilt();
const svc = await startService();
const browser = await launchBrowser();
const page = await openStudio(browser, svc.url, { width: 1280, height: 800 });
await page.waitForFunction(() => !!document.querySelector("#opt-calculator option[value=uff]:not([disabled])"));
await page.selectOption("#opt-calculator", "uff");
await page.fill("#opt-fmax", String(fmax));
await page.fill("#opt-steps", "100000");

type StudioRun = { seconds: number; worker: number; compute: number; steps: number; energy: number; result: string };
const studio: StudioRun[] = [];
const rdkitRounds: number[] = [];
const bare: number[] = [];
/** The studio's UFF Worker script, known once the panel has run it. */
let workerScript = "";
/** The start structure, loaded synchronously (a file input reads it asynchronously). */
const loadStart = () => page.evaluate((xyz) => window.atomstudio?.openFile(xyz, "peptide.xyz"), rdkit.xyz);
for (let r = 0; r < repeat; r++) {
  rdkitRounds.push(median((await runRdkit(3)).seconds));
  await loadStart();
  studio.push(
    await page.evaluate(
      () =>
        new Promise<StudioRun>((resolve) => {
          const panel = document.querySelector<HTMLElement>(".optimize-panel") as HTMLElement;
          panel.dataset.result = "";
          panel.dataset.computeSeconds = "";
          const t = performance.now();
          const watch = new MutationObserver(() => {
            if (!panel.dataset.result) return;
            watch.disconnect();
            resolve({
              seconds: (performance.now() - t) / 1000,
              worker: Number(panel.dataset.workerSeconds),
              compute: Number(panel.dataset.computeSeconds),
              steps: Number(panel.dataset.steps),
              energy: Number(panel.dataset.energy),
              result: panel.dataset.result,
            });
          });
          watch.observe(panel, { attributes: true });
          document.querySelector<HTMLButtonElement>("#opt-run")?.click();
        }),
    ),
  );
  // The same minimisation in a fresh bare Web Worker (the studio's own UFF Worker script), with
  // nothing on the page: a cold start with no redraw competing for the cores. From the same start:
  // the panel's run left the relaxed molecule loaded.
  await loadStart();
  workerScript ||= await page.evaluate(
    () => performance.getEntriesByType("resource").find((e) => /uff-worker[^/]*\.js$/.test(e.name))?.name as string,
  );
  bare.push(
    await page.evaluate(
      ({ script, fmax }) =>
        new Promise<number>((resolve, reject) => {
          const structure = window.atomstudio?.getStructure();
          const t = performance.now();
          const worker = new Worker(script, { type: "module" });
          worker.onmessage = (ev: MessageEvent<{ type: string; messages?: { type: string }[] }>) => {
            const messages = ev.data.type === "batch" ? (ev.data.messages ?? []) : [ev.data];
            for (const m of messages) {
              if (m.type === "result") {
                worker.terminate();
                resolve((performance.now() - t) / 1000);
              } else if (m.type === "error") reject(new Error(JSON.stringify(m)));
            }
          };
          worker.postMessage({ structure, fmax, max_steps: 100000, frozen_atoms: [] });
        }),
      { script: workerScript, fmax },
    ),
  );
}
await browser.close();
await svc.close();

const roundTrip = median(studio.map((x) => x.seconds));
const minimised = median(studio.map((x) => x.worker));
const computing = median(studio.map((x) => x.compute));
const rd = median(rdkitRounds);
const last = studio.at(-1) as (typeof studio)[number];
const ms = (seconds: number) => `${(seconds * 1000).toFixed(1)} ms`.padStart(10);
/** The median over the rounds of a studio figure over that round's RDKit figure. */
const ratio = (seconds: number[]) => `${median(seconds.map((s, r) => s / (rdkitRounds[r] as number))).toFixed(2)}x RDKit`;
console.log(`UFF, ${rdkit.n}-atom molecule (Tyr-Phe-Leu-Lys-Val), median of ${repeat} rounds (RDKit: of three runs in each)`);
console.log(
  `  RDKit (C++, in-process)                             ${ms(rd)}                ${rdkit.iterations} iterations, stops at max |grad| ${rdkit.gmax.toExponential(2)} kcal/mol/Å, E = ${rdkit.energy.toFixed(4)} kcal/mol`,
);
console.log(
  `  studio minimised (Relax click to result message)    ${ms(minimised)}   ${ratio(studio.map((x) => x.worker))}   ${last.result} in ${last.steps - 1} steps, E = ${(last.energy / KCAL_PER_MOL_IN_EV).toFixed(4)} kcal/mol`,
);
const first = studio[0] as StudioRun;
console.log(
  `    the first round alone (a fresh Worker)            ${ms(first.worker)}   ${(first.worker / (rdkitRounds[0] as number)).toFixed(2)}x RDKit`,
);
console.log(`    of which the Worker computing                     ${ms(computing)}   ${ratio(studio.map((x) => x.compute))}`);
console.log(`  a fresh bare Worker (no panel, no redraws)          ${ms(median(bare))}   ${ratio(bare)}`);
console.log(`  studio round trip (Relax click to result redrawn)   ${ms(roundTrip)}   ${ratio(studio.map((x) => x.seconds))}`);
