/** Every operation of the service. Adding an operation here gives it a route, OpenAPI entry and tools. */
import type { Operation } from "../registry/operation.ts";
import { adsorptionOps } from "./adsorption.ts";
import { analysisOps } from "./analysis.ts";
import { buildOps } from "./build.ts";
import { chatOps } from "./chat.ts";
import { healthOp } from "./health.ts";
import { heterostructureOps } from "./heterostructure.ts";
import { jobOps } from "./jobs.ts";
import { mdOps } from "./md.ts";
import { optimizeOps } from "./optimize.ts";
import { structureAnalysis } from "./structure-analysis.ts";
import { structureBuild } from "./structure-build.ts";
import { structureIo } from "./structure-io.ts";
import { structureOps } from "./structure-ops.ts";
import { viewerOps } from "./viewer.ts";
import { workflowOps } from "./workflow.ts";

export const operations: Operation[] = [
  healthOp,
  ...structureOps,
  ...structureBuild,
  ...structureAnalysis,
  ...structureIo,
  ...optimizeOps,
  ...viewerOps,
  ...chatOps,
  ...analysisOps,
  ...mdOps,
  ...workflowOps,
  ...heterostructureOps,
  ...adsorptionOps,
  ...buildOps,
  ...jobOps,
] as unknown as Operation[];
