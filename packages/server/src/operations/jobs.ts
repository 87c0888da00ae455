/**
 * `GET /api/jobs/{id}`: a calculator or analysis request's BullMQ job (jobs/calculator-jobs.ts,
 * jobs/analysis-jobs.ts; README "Workflows").
 */
import { z } from "zod";
import { jobStatus } from "../jobs/calculator-jobs.ts";
import { defineOperation } from "../registry/operation.ts";

const ErrorBody = z.object({ error: z.string(), code: z.string(), details: z.unknown().optional() });

export const JobStatusResponse = z.object({
  id: z.string(),
  operation: z
    .string()
    .describe("optimize_structure or energy; for an analysis job its method (bands, dos, cohp, build_defect, ...)"),
  queue: z.string().describe("calc-<calculator>, or analysis-<service id>"),
  state: z.string().describe("waiting, active, completed, failed, delayed, ..."),
  attempts: z.number().int().describe("attempts started"),
  progress: z.unknown().describe("the last progress an optimization reported ({step, energy, fmax}), or 0"),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  result: z
    .unknown()
    .describe(
      "the answer the request got, once completed; for an analysis job a summary {method, fields} (the answer itself was the HTTP response)",
    ),
  error: ErrorBody.nullable().describe("the ErrorResponse the request got, once failed"),
});

export const jobStatusOp = defineOperation({
  id: "job_status",
  method: "GET",
  path: "/api/jobs/:id",
  tag: "optimize",
  summary:
    "A calculator or analysis request's job (the X-AtomStudio-Job header of its answer, or the job_id of an optimization or energy answer): state, attempts, progress, timings, result or error",
  input: z.object({ id: z.string().max(80).describe("job_id of an answer, or its X-AtomStudio-Job header") }),
  output: JobStatusResponse,
  errors: [
    { code: "JOB_NOT_FOUND", when: "no job with this id (finished jobs are kept for a day)" },
    { code: "QUEUE_UNAVAILABLE", when: "the service has no Redis, or it cannot be reached" },
  ],
  handler: ({ id }, ctx) => jobStatus(ctx, id),
});

export const jobOps = [jobStatusOp];
