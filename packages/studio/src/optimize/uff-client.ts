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

export const runUffInWorker = (request: UffRequest, onMessage: (m: OptimizeMessage) => void = () => {}): UffRun => {
  const worker = new Worker(new URL("./uff-worker.ts", import.meta.url), { type: "module" });
  let lastStructure: unknown = null;
  let finished = false;
  let settle: (m: OptimizeMessage) => void = () => {};
  const done = new Promise<OptimizeMessage>((resolve) => {
    settle = (m) => {
      finished = true;
      worker.terminate();
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
