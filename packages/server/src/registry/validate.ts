import type { z } from "zod";
import type { ServiceConfig } from "../config.ts";
import { serviceError } from "../errors/codes.ts";
import type { Operation } from "./operation.ts";

export type InputLimits = Pick<ServiceConfig, "maxAtoms" | "maxFrames" | "maxStructures" | "maxTotalAtoms">;

/** A structure dictionary (pymatgen or the viewer form): an object with a `sites` list. */
const sitesOf = (v: unknown): number | undefined => {
  const sites = (v as { sites?: unknown } | null)?.sites;
  return typeof v === "object" && v !== null && !Array.isArray(v) && Array.isArray(sites) ? sites.length : undefined;
};

const tooMany = (
  code: "TOO_MANY_ATOMS" | "TOO_MANY_FRAMES" | "TOO_MANY_STRUCTURES",
  message: string,
  details: Record<string, unknown>,
): never => {
  throw serviceError(code, message, details);
};

/**
 * The caps every input structure meets before any work (README "Security defaults"): atoms in
 * one structure, structures in one list (`frames` lists count as frames), atoms in all of them.
 * Structures are the request's fields (or list items) that hold a `sites` list: counting is
 * O(fields), nothing is parsed.
 */
export const checkInputLimits = (input: unknown, limits: InputLimits): void => {
  if (typeof input !== "object" || input === null) return;
  let total = 0;
  const one = (field: string, v: unknown): void => {
    const n = sitesOf(v);
    if (n === undefined) return;
    if (n > limits.maxAtoms)
      tooMany("TOO_MANY_ATOMS", `${field} has ${n} atoms, more than the limit of ${limits.maxAtoms}`, {
        field,
        n_atoms: n,
        limit: limits.maxAtoms,
      });
    total += n;
  };
  for (const [field, v] of Object.entries(input)) {
    if (!Array.isArray(v)) {
      one(field, v);
      continue;
    }
    if (!v.some((x) => sitesOf(x) !== undefined)) continue;
    const frames = field === "frames";
    const max = frames ? limits.maxFrames : limits.maxStructures;
    if (v.length > max)
      tooMany(
        frames ? "TOO_MANY_FRAMES" : "TOO_MANY_STRUCTURES",
        `${field} lists ${v.length} structures, more than the limit of ${max}`,
        {
          field,
          n_structures: v.length,
          limit: max,
        },
      );
    for (const [i, x] of v.entries()) one(`${field}[${i}]`, x);
  }
  if (total > limits.maxTotalAtoms)
    tooMany("TOO_MANY_ATOMS", `The request holds ${total} atoms in all, more than the limit of ${limits.maxTotalAtoms}`, {
      total_atoms: total,
      limit: limits.maxTotalAtoms,
    });
};

/**
 * Validate an operation's input. A body of the wrong shape is 422 MALFORMED_REQUEST listing the
 * offending fields (decisions §3); the interface's domain conditions (empty lists, bad indices,
 * bad elements) are checked by the core and answer 400 with their own codes. With `limits` (the
 * service's configuration), the input's structures are checked against the caps too.
 */
export const parseInput = <I extends z.ZodType>(op: Operation<I>, raw: unknown, limits?: InputLimits): z.output<I> => {
  const r = op.input.safeParse(raw ?? {});
  if (r.success) {
    if (limits) checkInputLimits(r.data, limits);
    return r.data;
  }
  const fields = r.error.issues.map((i) => ({ path: i.path.map(String).join(".") || "(body)", message: i.message }));
  throw serviceError("MALFORMED_REQUEST", `Malformed request: ${fields.map((f) => `${f.path}: ${f.message}`).join("; ")}`, {
    fields,
  });
};
