import { z } from "zod";
import { defineOperation } from "../registry/operation.ts";
import { VERSION } from "../version.ts";

const started = Date.now();

export const healthOp = defineOperation({
  id: "health",
  method: "GET",
  path: "/api/health",
  tag: "service",
  summary: "Liveness and version",
  input: z.object({}),
  output: z.object({ status: z.literal("ok"), version: z.string(), uptime_s: z.number() }),
  handler: () => ({ status: "ok" as const, version: VERSION, uptime_s: (Date.now() - started) / 1000 }),
});
