/**
 * Node parameters from an operation's JSON schema: which fields get a form control (numbers,
 * integers, booleans, choices, short strings, fixed-length number vectors such as Miller
 * indices), which stay in the JSON editor (objects, structures, free lists), reading a control's
 * text back into a value, and checking the whole parameter object against the schema (Ajv) with
 * messages that name the field. Parameters filled by an input (an upstream output) are left out
 * of both: the service fills them when the node runs.
 */
import Ajv, { type ErrorObject } from "ajv";
import type { JsonSchema } from "./catalog.ts";

export type FieldKind = "number" | "integer" | "boolean" | "enum" | "string" | "vector";

export interface FieldSpec {
  name: string;
  kind: FieldKind;
  required: boolean;
  description: string;
  default?: unknown;
  options?: string[];
  /** vector: the number of components and whether they are integers. */
  length?: number;
  integer?: boolean;
  minimum?: number;
  maximum?: number;
}

const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

const typeOf = (s: Record<string, unknown>): string | undefined => {
  const t = s.type;
  if (Array.isArray(t)) return t.find((x) => x !== "null") as string | undefined;
  return typeof t === "string" ? t : undefined;
};

const bound = (s: Record<string, unknown>, k: "minimum" | "maximum"): number | undefined =>
  typeof s[k] === "number" ? (s[k] as number) : undefined;

/** One form field per simple property; anything else (objects, structures, lists of objects) is JSON. */
export const formFields = (schema: JsonSchema, skip: readonly string[] = []): { fields: FieldSpec[]; json: string[] } => {
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const fields: FieldSpec[] = [];
  const json: string[] = [];
  for (const [name, raw] of Object.entries(asRecord(schema.properties))) {
    if (skip.includes(name)) continue;
    const s = asRecord(raw);
    const t = typeOf(s);
    const base = {
      name,
      required: required.has(name),
      description: String(s.description ?? ""),
      ...(s.default !== undefined ? { default: s.default } : {}),
    };
    const min = bound(s, "minimum");
    const max = bound(s, "maximum");
    const limits = { ...(min !== undefined ? { minimum: min } : {}), ...(max !== undefined ? { maximum: max } : {}) };
    if (Array.isArray(s.enum) && s.enum.every((x) => typeof x === "string"))
      fields.push({ ...base, kind: "enum", options: s.enum as string[] });
    else if (t === "boolean") fields.push({ ...base, kind: "boolean" });
    else if (t === "integer") fields.push({ ...base, kind: "integer", ...limits });
    else if (t === "number") fields.push({ ...base, kind: "number", ...limits });
    else if (t === "string") fields.push({ ...base, kind: "string" });
    else if (t === "array") {
      const items = asRecord(s.items);
      const it = typeOf(items);
      const n = s.minItems;
      if ((it === "number" || it === "integer") && typeof n === "number" && n === s.maxItems && n <= 6)
        fields.push({ ...base, kind: "vector", length: n, integer: it === "integer" });
      else json.push(name);
    } else json.push(name);
  }
  return { fields, json };
};

/** A control's text as the parameter's value: undefined for an empty optional field, or why not. */
export const readField = (f: FieldSpec, text: string, checked = false): { value: unknown } | { error: string } => {
  const t = text.trim();
  if (f.kind === "boolean") return { value: checked };
  if (t === "") return f.required && f.default === undefined ? { error: `${f.name}: required` } : { value: undefined };
  if (f.kind === "string" || f.kind === "enum") return { value: t };
  if (f.kind === "vector") {
    const parts = t.split(/[\s,]+/).filter(Boolean);
    const nums = parts.map(Number);
    if (parts.length !== f.length || nums.some((x) => !Number.isFinite(x) || (f.integer && !Number.isInteger(x))))
      return {
        error: `${f.name}: ${f.length} ${f.integer ? "whole numbers" : "numbers"}, e.g. ${Array(f.length).fill(1).join(" ")}`,
      };
    return { value: nums };
  }
  const x = Number(t);
  if (!Number.isFinite(x)) return { error: `${f.name}: a number` };
  if (f.kind === "integer" && !Number.isInteger(x)) return { error: `${f.name}: a whole number` };
  if (f.minimum !== undefined && x < f.minimum) return { error: `${f.name}: at least ${f.minimum}` };
  if (f.maximum !== undefined && x > f.maximum) return { error: `${f.name}: at most ${f.maximum}` };
  return { value: x };
};

/** The value as the control shows it. */
export const showField = (f: FieldSpec, value: unknown): string => {
  const v = value === undefined ? f.default : value;
  if (v === undefined || v === null) return "";
  return Array.isArray(v) ? v.join(" ") : String(v);
};

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
/** Compiled validators per schema and set of wired fields (forms check on every edit). */
const compiled = new WeakMap<object, Map<string, ReturnType<typeof ajv.compile> | null>>();

/** The schema the parameters must meet when `wired` parameters come from inputs: those are neither checked nor required. */
export const paramsSchema = (schema: JsonSchema, wired: readonly string[]): JsonSchema => {
  const props = { ...asRecord(schema.properties) };
  for (const w of wired) delete props[w];
  const required = ((schema.required as string[] | undefined) ?? []).filter((r) => !wired.includes(r));
  // The schema's anyOf/refinements mostly concern the wired fields (e.g. structure or structures); keep the simple part.
  return { type: "object", properties: props, required };
};

const describeError = (e: ErrorObject): string => {
  const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, ".") : "";
  if (e.keyword === "required") return `${(e.params as { missingProperty: string }).missingProperty}: required`;
  if (e.keyword === "enum") return `${where}: one of ${(e.params as { allowedValues: unknown[] }).allowedValues.join(", ")}`;
  return `${where || "parameters"}: ${e.message ?? e.keyword}`;
};

/** Messages for parameters that do not meet the operation's schema; empty when they do. */
export const checkParams = (schema: JsonSchema, params: Record<string, unknown>, wired: readonly string[]): string[] => {
  const bySchema = compiled.get(schema) ?? new Map<string, ReturnType<typeof ajv.compile> | null>();
  compiled.set(schema, bySchema);
  const key = [...wired].sort().join(",");
  if (!bySchema.has(key)) {
    try {
      bySchema.set(key, ajv.compile(paramsSchema(schema, wired)));
    } catch {
      // A schema Ajv cannot compile is checked by the service alone.
      bySchema.set(key, null);
    }
  }
  const validate = bySchema.get(key);
  if (!validate || validate(params)) return [];
  return [...new Set((validate.errors ?? []).map(describeError))];
};
