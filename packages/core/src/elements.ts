import { ELEMENT_ROWS } from "./elements-data.ts";
import { fail } from "./errors.ts";

export interface ElementInfo {
  readonly symbol: string;
  readonly Z: number;
  /** Atomic mass in amu, as pymatgen's periodic table gives it. */
  readonly mass: number;
  /** Pauling electronegativity; NaN where there is none (noble gases, heavy elements). */
  readonly X: number;
  /** Covalent radius in Angstrom (Cordero 2008, via ASE). */
  readonly covalentRadius: number;
}

export const ELEMENTS: readonly ElementInfo[] = ELEMENT_ROWS.map(([symbol, mass, X, covalentRadius], i) => ({
  symbol,
  Z: i + 1,
  mass,
  X,
  covalentRadius,
}));

const BY_SYMBOL = new Map(ELEMENTS.map((e) => [e.symbol, e]));

export const elementInfo = (symbol: string): ElementInfo | undefined => BY_SYMBOL.get(symbol);

export const isElement = (symbol: unknown): symbol is string => typeof symbol === "string" && BY_SYMBOL.has(symbol);

/** The element, or a 400 INVALID_ELEMENT naming the bad symbol. */
export const requireElement = (symbol: unknown, where = "element"): ElementInfo => {
  const info = typeof symbol === "string" ? BY_SYMBOL.get(symbol) : undefined;
  if (!info)
    fail("INVALID_ELEMENT", `Invalid element symbol ${JSON.stringify(symbol)} in ${where}`, { field: where, value: symbol });
  return info as ElementInfo;
};

/** Sort key of pymatgen's formulas: electronegativity (missing = +inf), then symbol. */
export const electronegativityOrder = (a: string, b: string): number => {
  const xa = BY_SYMBOL.get(a)?.X ?? Number.POSITIVE_INFINITY;
  const xb = BY_SYMBOL.get(b)?.X ?? Number.POSITIVE_INFINITY;
  const ka = Number.isNaN(xa) ? Number.POSITIVE_INFINITY : xa;
  const kb = Number.isNaN(xb) ? Number.POSITIVE_INFINITY : xb;
  if (ka !== kb) return ka < kb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
};
