/**
 * Runs UFF in a Web Worker (uff-worker.ts) and reports the same messages the optimization
 * WebSocket sends, so the panel and the assistant treat browser and server calculators alike.
 */
import type { OptimizeMessage, UffRequest } from "./uff-run.ts";

export type { OptimizeMessage, UffRequest } from "./uff-run.ts";

export interface UffRun {
  /** Resolves with the final message: result, error or cancelled. */
  done: Promise<OptimizeMessage>;
  cancel(): void;
}

/**
 * The Worker of the last run that ended with a result, kept for the next run. A fresh Worker is a
 * fresh V8 isolate: its minimiser starts cold and is optimised while it runs (on the benchmark's
 * 100-atom peptide a fresh Worker took about 290 ms, one kept from an earlier run about 160 ms).
 * A cancelled or failed run's Worker is terminated, never kept.
 */
let idleWorker: Worker | null = null;

export const runUffInWorker = (request: UffRequest, onMessage: (m: OptimizeMessage) => void = () => {}): UffRun => {
  const worker = idleWorker ?? new Worker(new URL("./uff-worker.ts", import.meta.url), { type: "module" });
  idleWorker = null;
  let lastStructure: unknown = null;
  let finished = false;
  let settle: (m: OptimizeMessage) => void = () => {};
  const done = new Promise<OptimizeMessage>((resolve) => {
    settle = (m) => {
      finished = true;
      // A result leaves the Worker idle (runUff has posted its last message): keep it for the next
      // run unless another run's Worker is kept already.
      if (m.type === "result" && idleWorker === null) idleWorker = worker;
      else worker.terminate();
      resolve(m);
    };
  });
  worker.onmessage = (ev: MessageEvent<OptimizeMessage>) => {
    const messages = ev.data.type === "batch" ? (ev.data.messages as OptimizeMessage[]) : [ev.data];
    for (const m of messages) {
      if (finished) return;
      if (m.type === "step" && m.structure) lastStructure = m.structure;
      onMessage(m);
      if (m.type === "result" || m.type === "error") settle(m);
    }
  };
  worker.onerror = (ev) => {
    const m = { type: "error", code: "UFF_FAILED", error: ev.message || "the UFF worker failed" };
    onMessage(m);
    settle(m);
  };
  worker.postMessage(request);
  return {
    done,
    cancel: () => {
      if (finished) return;
      // The worker computes without pausing; stopping it is terminating it. The structure stays at the last step shown.
      const m = { type: "cancelled", structure: lastStructure };
      onMessage(m);
      settle(m);
    },
  };
};
