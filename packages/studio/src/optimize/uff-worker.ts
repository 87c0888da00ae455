/**
 * The studio's UFF calculator: a Web Worker running atomstudio-core's UFF (equal to RDKit's) so a
 * molecule is relaxed without a server round trip, posting the optimization WebSocket's messages
 * (uff-run.ts). Steps are posted in batches ({type: "batch", messages}) at most every
 * BATCH_INTERVAL_MS: one message per step would cost more than the step. Cancelling is the page
 * terminating the worker.
 */
import { type OptimizeMessage, runUff, type UffRequest } from "./uff-run.ts";

const BATCH_INTERVAL_MS = 30;

self.onmessage = (ev: MessageEvent<UffRequest>) => {
  const worker = self as unknown as Worker;
  let batch: OptimizeMessage[] = [];
  let sentAt = performance.now();
  const flush = () => {
    if (batch.length) worker.postMessage({ type: "batch", messages: batch });
    batch = [];
    sentAt = performance.now();
  };
  runUff(ev.data, (m) => {
    batch.push(m);
    if (m.type !== "step" || performance.now() - sentAt >= BATCH_INTERVAL_MS) flush();
  });
  flush();
};
