/**
 * A UFF relaxation as the optimization WebSocket's messages (decisions §8): one `step` per
 * iteration (its `structure` only every STRUCTURE_INTERVAL_MS), then `result`, or `error` with a code. Runs wherever it is called: the studio's Web
 * Worker (uff-worker.ts) calls it off the page's thread.
 */
import { fromDict, isAtomStudioError, relaxWithUff, toDict } from "atomstudio-core";

export interface UffRequest {
  structure: unknown;
  /** eV/Å */
  fmax: number;
  max_steps: number;
  frozen_atoms: number[];
  optimize_cell?: boolean;
}

export type OptimizeMessage = { type: string; [k: string]: unknown };

const STRUCTURE_INTERVAL_MS = 50;

export const runUff = (req: UffRequest, post: (m: OptimizeMessage) => void): void => {
  try {
    if (req.optimize_cell) throw new Error("cell");
    const began = performance.now();
    const start = fromDict(req.structure);
    // The starting energy is step 0's: typing the molecule and building its field once, not twice.
    let initial = 0;
    let last: ReturnType<typeof relaxWithUff> extends Generator<infer T> ? T : never = undefined as never;
    // Every step is reported for the chart; the coordinates ride along at most every
    // STRUCTURE_INTERVAL_MS (a page redraws no faster), so a fast run is not slowed by copying them.
    let sentAt = Number.NEGATIVE_INFINITY;
    for (const step of relaxWithUff(start, { fmax: req.fmax, maxSteps: req.max_steps, frozen: req.frozen_atoms })) {
      last = step;
      if (step.step === 0) initial = step.energy;
      const now = performance.now();
      const withStructure = now - sentAt >= STRUCTURE_INTERVAL_MS;
      if (withStructure) sentAt = now;
      post({
        type: "step",
        step: step.step,
        energy: step.energy,
        fmax: step.fmax,
        ...(withStructure ? { structure: toDict(step.structure) } : {}),
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
      /** Time spent computing (typing, field, minimisation, messages), seconds. */
      compute_seconds: (performance.now() - began) / 1000,
    });
  } catch (e) {
    if (req.optimize_cell)
      post({ type: "error", code: "PERIODIC_NOT_SUPPORTED", error: "UFF relaxes molecules: there is no cell to relax" });
    else if (isAtomStudioError(e)) post({ type: "error", code: e.code, error: e.message, details: e.details });
    else post({ type: "error", code: "UFF_FAILED", error: (e as Error).message });
  }
};
