/**
 * The studio's UFF calculator: a Web Worker running atomstudio-core's UFF (equal to RDKit's) so a
 * molecule is relaxed without a server round trip. It speaks the optimization WebSocket's messages
 * (decisions §8): one `step` per iteration, then `result`, or `error` with a code. Cancelling is
 * the page terminating the worker.
 */
import { fromDict, isAtomStudioError, relaxWithUff, toDict, uffEnergy } from "atomstudio-core";

export interface UffStartMessage {
  action: "start";
  structure: unknown;
  fmax: number;
  max_steps: number;
  frozen_atoms: number[];
  optimize_cell?: boolean;
}

const post = (m: Record<string, unknown>) => (self as unknown as Worker).postMessage(m);

self.onmessage = (ev: MessageEvent<UffStartMessage>) => {
  const req = ev.data;
  try {
    if (req.optimize_cell)
      post({ type: "error", code: "PERIODIC_NOT_SUPPORTED", error: "UFF relaxes molecules: there is no cell to relax" });
    else run(req);
  } catch (e) {
    if (isAtomStudioError(e)) post({ type: "error", code: e.code, error: e.message, details: e.details });
    else post({ type: "error", code: "UFF_FAILED", error: (e as Error).message });
  }
};

const run = (req: UffStartMessage) => {
  const start = fromDict(req.structure);
  const initial = uffEnergy(start).energy;
  let last: ReturnType<typeof relaxWithUff> extends Generator<infer T> ? T : never = undefined as never;
  for (const step of relaxWithUff(start, { fmax: req.fmax, maxSteps: req.max_steps, frozen: req.frozen_atoms })) {
    last = step;
    post({
      type: "step",
      step: step.step,
      energy: step.energy,
      fmax: step.fmax,
      structure: toDict(step.structure),
      converged: step.converged,
    });
  }
  post({
    type: "result",
    structure: toDict(last.structure),
    converged: last.converged,
    steps: last.step,
    initial_energy: initial,
    energy: last.energy,
    fmax: last.fmax,
    message: last.converged ? `converged: fmax below ${req.fmax} eV/Å` : `not converged after ${last.step} steps`,
  });
};
