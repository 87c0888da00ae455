/**
 * The studio's UFF calculator: a Web Worker running atomstudio-core's UFF (equal to RDKit's) so a
 * molecule is relaxed without a server round trip, posting the optimization WebSocket's messages
 * (uff-run.ts). Cancelling is the page terminating the worker.
 */
import { runUff, type UffRequest } from "./uff-run.ts";

self.onmessage = (ev: MessageEvent<UffRequest>) => runUff(ev.data, (m) => (self as unknown as Worker).postMessage(m));
