import type { z } from "zod";
import { serviceError } from "../errors/codes.ts";
import type { Operation } from "./operation.ts";

/**
 * Validate an operation's input. A body of the wrong shape is 422 MALFORMED_REQUEST listing the
 * offending fields (decisions §3); the interface's domain conditions (empty lists, bad indices,
 * bad elements) are checked by the core and answer 400 with their own codes.
 */
export const parseInput = <I extends z.ZodType>(op: Operation<I>, raw: unknown): z.output<I> => {
  const r = op.input.safeParse(raw ?? {});
  if (r.success) return r.data;
  const fields = r.error.issues.map((i) => ({ path: i.path.map(String).join(".") || "(body)", message: i.message }));
  throw serviceError("MALFORMED_REQUEST", `Malformed request: ${fields.map((f) => `${f.path}: ${f.message}`).join("; ")}`, {
    fields,
  });
};
