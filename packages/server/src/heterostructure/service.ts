/**
 * Heterostructures through the warm analysis worker (methods `hetero_*` in
 * worker/src/atomstudio_worker/analysis/methods): the structures are read and checked here by the
 * core (400 INVALID_STRUCTURE, MISSING_LATTICE), ranges are checked here with coded 400s before any
 * work, and pymatgen (ZSL, CoherentInterfaceBuilder, spglib) does the rest in a process that has
 * imported it once. See README.md next to this file.
 */
import { fromDict, toDict } from "atomstudio-core";
import { runAnalysis } from "../analysis/service.ts";
import type { ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";

/** A periodic structure as pymatgen's dictionary, after the core has read and checked it. */
export const periodicDict = (raw: unknown, field: string): Record<string, unknown> => {
  const s = fromDict(raw);
  if (s.lattice === null)
    throw serviceError("MISSING_LATTICE", `${field} has no lattice: a heterostructure needs periodic slabs or crystals`, {
      field,
    });
  if (s.length === 0) throw serviceError("EMPTY_STRUCTURES", `${field} has no atoms`, { field });
  return toDict(s) as unknown as Record<string, unknown>;
};

/** A number within its documented range, else 400 OUT_OF_RANGE naming the field. */
export const inRange = (value: number, field: string, min: number, max: number, integer = false): number => {
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value)))
    throw serviceError("OUT_OF_RANGE", `${field} is ${value}; it must be ${integer ? "an integer " : ""}from ${min} to ${max}`, {
      field,
      value,
      min,
      max,
    });
  return value;
};

export const runHetero = <T>(ctx: ServiceContext, method: string, params: Record<string, unknown>): Promise<T> =>
  runAnalysis<T>(ctx, method, {}, { ...params, deadline_s: ctx.config.analysisTimeoutMs / 1000 });
