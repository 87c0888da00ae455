import { electronegativityOrder, elementInfo } from "./elements.ts";
import type { SiteSpecies } from "./structure.ts";

/** Element amounts (occupancy-weighted), insertion order preserved. */
export type Composition = Map<string, number>;

const AMOUNT_TOLERANCE = 1e-8;

export const composition = (species: readonly SiteSpecies[]): Composition => {
  const out: Composition = new Map();
  for (const site of species) for (const s of site) out.set(s.element, (out.get(s.element) ?? 0) + s.occu);
  for (const [el, amt] of out) if (Math.abs(amt) <= AMOUNT_TOLERANCE) out.delete(el);
  return out;
};

/** Python's `round(x, 8)` printed the way `str()` prints it. */
const pyRound8 = (x: number): string => {
  const r = Number(x.toFixed(8));
  return Number.isInteger(r) ? `${r}.0` : String(r);
};

/** pymatgen's `formula_double_format`. */
const amountString = (amt: number, ignoreOnes: boolean): string => {
  if (ignoreOnes && Math.abs(amt - 1) <= 1e-8) return "";
  const r = Math.round(amt);
  // Python rounds half to even; only matters at exact .5, which `isclose` below excludes anyway.
  if (Math.abs(amt - r) <= 1e-8) return String(r);
  return pyRound8(amt);
};

const sortedSymbols = (comp: Composition): string[] => [...comp.keys()].sort(electronegativityOrder);

/** pymatgen's `Composition.formula`, e.g. "Li4 Fe4 P4 O16". */
export const formula = (comp: Composition): string =>
  sortedSymbols(comp)
    .map((s) => `${s}${amountString(comp.get(s) as number, false)}`)
    .join(" ");

const gcd = (a: number, b: number): number => {
  let x = Math.abs(a);
  let y = Math.abs(b);
  while (y) [x, y] = [y, x % y];
  return x;
};

const electronegativity = (s: string): number => elementInfo(s)?.X ?? Number.NaN;

/** pymatgen's `reduce_formula`: gcd reduction, electronegativity order, polyanion grouping. */
const reduceFormula = (amounts: Map<string, number>): [string, number] => {
  let syms = [...amounts.keys()].sort(electronegativityOrder);
  syms = syms.filter((s) => Math.abs(amounts.get(s) as number) > AMOUNT_TOLERANCE);
  const values = [...amounts.values()];
  let factor = 1;
  if (values.every((v) => Number.isInteger(v))) factor = Math.abs(values.reduce((g, v) => gcd(g, v), 0));
  const polyanions: string[] = [];
  const last = syms[syms.length - 1];
  const second = syms[syms.length - 2];
  // NaN electronegativities compare false here, as they do in Python.
  if (syms.length >= 3 && last && second && electronegativity(last) - electronegativity(second) < 1.65) {
    const poly = new Map([
      [second, (amounts.get(second) as number) / factor],
      [last, (amounts.get(last) as number) / factor],
    ]);
    const [polyForm, polyFactor] = reduceFormula(poly);
    if (polyFactor !== 1) polyanions.push(`(${polyForm})${polyFactor}`);
  }
  if (polyanions.length) syms = syms.slice(0, syms.length - 2);
  const parts = syms.map((s) => `${s}${amountString((amounts.get(s) as number) / factor, true)}`);
  return [parts.join("") + polyanions.join(""), factor];
};

const SPECIAL_FORMULAS: Record<string, string> = {
  LiO: "Li2O2",
  NaO: "Na2O2",
  KO: "K2O2",
  HO: "H2O2",
  CsO: "Cs2O2",
  RbO: "Rb2O2",
  O: "O2",
  N: "N2",
  F: "F2",
  Cl: "Cl2",
  H: "H2",
};

/** pymatgen's `Composition.reduced_formula`, e.g. "LiFePO4", "O2", "Ca2AlNbO6". */
export const reducedFormula = (comp: Composition): string => {
  if (comp.size === 0) return "";
  const allInt = [...comp.values()].every((v) => Math.abs(v - Math.round(v)) < AMOUNT_TOLERANCE);
  if (!allInt) return formula(comp).replaceAll(" ", "");
  const rounded = new Map([...comp].map(([k, v]) => [k, Math.round(v)]));
  const [f] = reduceFormula(rounded);
  return SPECIAL_FORMULAS[f] ?? f;
};

/** Total mass in amu. */
export const weight = (comp: Composition): number => {
  let w = 0;
  for (const [el, amt] of comp) w += amt * (elementInfo(el)?.mass ?? 0);
  return w;
};

/** amu per cubic Angstrom to g/cm^3 (CODATA 2022 atomic mass unit, as pymatgen via SciPy uses). */
export const AMU_PER_A3_TO_G_PER_CM3 = 1.66053906892;
