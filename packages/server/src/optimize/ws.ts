/**
 * GET /api/optimize/ws (decisions §8). Client: `{action: "start", ...envelope}` or
 * `{action: "cancel"}`. Service: `{type: "queued", position}` while waiting for a worker, one
 * `{type: "step", step, energy, fmax, structure, converged}` per step, then exactly one of
 * `{type: "result", ...}`, `{type: "cancelled", ...}`, `{type: "error", error, code}`.
 * Closing the socket cancels the run. With a queue the run is a BullMQ job whose progress carries
 * every step (workflow/README.md "Calculator requests as jobs"); the messages are the same.
 */
import { isAtomStudioError } from "atomstudio-core";
import type { FastifyInstance } from "fastify";
import type { ServiceContext } from "../context.ts";
import { errorResponse } from "../http/errors.ts";
import { ensureWebSocket } from "../http/websocket.ts";
import { queueFor, startCalculatorJob } from "../jobs/calculator-jobs.ts";
import { checkInputLimits } from "../registry/validate.ts";
import { calculatorPool, checkEnvelope, OptimizeEnvelope, workerParams } from "./service.ts";

export const optimizeWsPlugin = async (app: FastifyInstance, ctx: ServiceContext): Promise<void> => {
  await ensureWebSocket(app, ctx.config);
  app.get("/api/optimize/ws", { websocket: true }, (socket) => {
    let running: { cancel: () => void } | undefined;
    let cancelled = false;
    const send = (msg: unknown) => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(msg));
    };
    const sendError = (e: unknown) => {
      const [, body] = errorResponse(e, "ws");
      send({ type: "error", ...body });
    };
    socket.on("message", (raw: Buffer) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(raw.toString());
        if (typeof msg !== "object" || msg === null || Array.isArray(msg)) throw new Error("not an object");
      } catch {
        return send({ type: "error", error: "Message is not a JSON object", code: "MALFORMED_REQUEST" });
      }
      if (msg.action === "cancel") {
        if (!running) return send({ type: "error", error: "No optimization is running", code: "NOT_RUNNING" });
        cancelled = true;
        return running.cancel();
      }
      if (msg.action !== "start")
        return send({
          type: "error",
          error: `Unknown action ${JSON.stringify(msg.action)}; use start or cancel`,
          code: "MALFORMED_REQUEST",
        });
      if (running)
        return send({ type: "error", error: "An optimization is already running on this socket", code: "ALREADY_RUNNING" });
      const { action: _a, ...envelope } = msg;
      const parsed = OptimizeEnvelope.safeParse(envelope);
      if (!parsed.success)
        return send({
          type: "error",
          error: `Malformed start message: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(message)"}: ${i.message}`).join("; ")}`,
          code: "MALFORMED_REQUEST",
        });
      cancelled = false;
      const start = parsed.data;
      let params: ReturnType<typeof workerParams>;
      try {
        checkInputLimits(start, ctx.config);
        checkEnvelope(start, ctx.config);
        params = workerParams(start);
      } catch (e) {
        return sendError(e);
      }
      const onQueued = (position: number) => send({ type: "queued", position });
      const onStep = (data: unknown) => send({ type: "step", ...(data as object) });
      // a cancel (or the socket closing) while the job is being queued applies once it is
      let cancelBeforeStart = false;
      running = { cancel: () => (cancelBeforeStart = true) };
      const settle = (result: Promise<object>) =>
        result
          .then(
            (r) => send({ type: cancelled ? "cancelled" : "result", ...r }),
            (e) =>
              cancelled && isAtomStudioError(e) && e.code === "CANCELLED"
                ? send({ type: "cancelled", message: e.message })
                : sendError(e),
          )
          .finally(() => {
            running = undefined;
          });
      void (async () => {
        // a BullMQ job relaying every step when a queue takes this calculator, else the local pool
        const queues = await queueFor(ctx, start.calculator);
        const job = queues
          ? await startCalculatorJob<object>(ctx, queues, "optimize_structure", start.calculator, params, { onStep, onQueued })
          : calculatorPool(ctx).run<object>("optimize", params, {
              onQueued,
              onEvent: (event, data) => {
                if (event === "step") onStep(data);
              },
            });
        running = job;
        if (cancelBeforeStart) job.cancel();
        await settle(job.result);
      })().catch((e) => {
        running = undefined;
        sendError(e);
      });
    });
    socket.on("close", () => running?.cancel());
  });
};
