/**
 * Labelled inputs with their validation message beside them: a reader returns the value or
 * null after marking the field invalid (`aria-invalid`) and writing why into the field's error
 * element (the one its `aria-describedby` names, announced by screen readers).
 */
import { isElement } from "atomstudio-core";

const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

const errorFor = (input: HTMLElement): HTMLElement | null => {
  const id = input.getAttribute("aria-describedby");
  return id ? document.getElementById(id) : null;
};

/** Clear every field of a group (the inputs that share one error element) before reading it again. */
export const clearErrors = (...ids: string[]): void => {
  for (const id of ids) {
    const input = byId<HTMLInputElement>(id);
    input.removeAttribute("aria-invalid");
    const err = errorFor(input);
    if (err) err.textContent = "";
  }
};

export const invalid = (id: string, message: string): null => {
  const input = byId<HTMLInputElement>(id);
  input.setAttribute("aria-invalid", "true");
  const err = errorFor(input);
  if (err) err.textContent = message;
  return null;
};

const fieldName = (id: string): string => {
  const label = byId<HTMLInputElement>(id).closest("label")?.querySelector("span")?.textContent;
  return label ?? id;
};

export interface NumberRule {
  integer?: boolean;
  min?: number;
  max?: number;
}

/** A finite number within the rule, or null with the message beside the field. */
export const readNumber = (id: string, rule: NumberRule = {}): number | null => {
  const raw = byId<HTMLInputElement>(id).value.trim();
  const name = fieldName(id);
  if (raw === "") return invalid(id, `${name}: enter a number`);
  const v = Number(raw);
  if (!Number.isFinite(v)) return invalid(id, `${name}: "${raw}" is not a number`);
  if (rule.integer && !Number.isInteger(v)) return invalid(id, `${name}: a whole number`);
  if (rule.min !== undefined && v < rule.min) return invalid(id, `${name}: at least ${rule.min}`);
  if (rule.max !== undefined && v > rule.max) return invalid(id, `${name}: at most ${rule.max}`);
  return v;
};

/** A vector of three numbers from fields `${prefix}-x|y|z`, or null. */
export const readVector = (prefix: string): [number, number, number] | null => {
  const v = ["x", "y", "z"].map((k) => readNumber(`${prefix}-${k}`));
  return v.every((x) => x !== null) ? (v as [number, number, number]) : null;
};

/** An element symbol (case as typed is normalised: "fe" → "Fe"), or null. */
export const readElement = (id: string): string | null => {
  const raw = byId<HTMLInputElement>(id).value.trim();
  if (!raw) return invalid(id, "Element: enter a symbol such as Fe, or pick one from the table");
  const sym = raw.charAt(0).toUpperCase() + raw.slice(1).toLowerCase();
  if (!isElement(sym)) return invalid(id, `Element: "${raw}" is not an element symbol`);
  byId<HTMLInputElement>(id).value = sym;
  return sym;
};
