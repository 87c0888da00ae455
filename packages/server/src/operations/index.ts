/** Every operation of the service. Adding an operation here gives it a route, OpenAPI entry and tools. */
import type { Operation } from "../registry/operation.ts";
import { healthOp } from "./health.ts";
import { structureBuild } from "./structure-build.ts";
import { structureOps } from "./structure-ops.ts";

export const operations: Operation[] = [healthOp, ...structureOps, ...structureBuild] as unknown as Operation[];
