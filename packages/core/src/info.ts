/**
 * The viewer's structure summary (interface: StructureInfoResult), computed with the same core
 * code in the browser and on the service.
 */
import { density, structureFormula, structureReducedFormula } from "./analysis.ts";
import { composition } from "./composition.ts";
import { electronegativityOrder } from "./elements.ts";
import { majorityElement } from "./geometry/sites.ts";
import { latticeDict } from "./pymatgen.ts";
import type { Structure } from "./structure.ts";
import { type SymmetryInfo, symmetryInfo } from "./symmetry.ts";

export interface LatticeInfo {
  a: number;
  b: number;
  c: number;
  alpha: number;
  beta: number;
  gamma: number;
  volume: number;
  matrix: number[][];
}

export interface SiteInfo {
  index: number;
  element: string;
  xyz: number[];
  abc: number[];
  label: string;
}

export interface StructureInfoResult {
  formula: string;
  reduced_formula: string;
  n_atoms: number;
  elements: string[];
  element_counts: Record<string, number>;
  has_lattice: boolean;
  lattice: LatticeInfo | null;
  symmetry: SymmetryInfo | null;
  sites: SiteInfo[];
  density: number | null;
  is_molecule: boolean;
}

/**
 * The element of a site: the only element of an ordered site, the majority element of a
 * disordered one (ties broken by electronegativity order, as pymatgen lists species).
 */
const siteElement = (s: Structure, i: number): string => majorityElement(s.species[i]);

/**
 * Summary of a structure. `element_counts` are occupancy-weighted amounts (integers for ordered
 * structures); `elements` are in pymatgen's formula order (electronegativity). `abc` for a
 * molecule is empty. Symmetry needs `initSymmetry()` to have completed.
 */
export const structureInfo = (s: Structure): StructureInfoResult => {
  const comp = composition(s.species);
  const elements = [...comp.keys()].sort(electronegativityOrder);
  const element_counts: Record<string, number> = {};
  for (const el of elements) {
    const amt = comp.get(el) as number;
    element_counts[el] = Math.abs(amt - Math.round(amt)) < 1e-8 ? Math.round(amt) : amt;
  }
  let lattice: LatticeInfo | null = null;
  if (s.lattice) {
    const d = latticeDict(s.lattice);
    lattice = { a: d.a, b: d.b, c: d.c, alpha: d.alpha, beta: d.beta, gamma: d.gamma, volume: d.volume, matrix: d.matrix };
  }
  const frac = s.lattice ? s.frac : null;
  const sites: SiteInfo[] = new Array(s.length);
  for (let i = 0; i < s.length; i++) {
    sites[i] = {
      index: i,
      element: siteElement(s, i),
      xyz: [s.cart[3 * i] as number, s.cart[3 * i + 1] as number, s.cart[3 * i + 2] as number],
      abc: frac ? [frac[3 * i] as number, frac[3 * i + 1] as number, frac[3 * i + 2] as number] : [],
      label: s.labels[i] as string,
    };
  }
  return {
    formula: structureFormula(s),
    reduced_formula: structureReducedFormula(s),
    n_atoms: s.length,
    elements,
    element_counts,
    has_lattice: s.lattice !== null,
    lattice,
    symmetry: s.lattice ? symmetryInfo(s) : null,
    sites,
    density: density(s),
    is_molecule: s.isMolecule,
  };
};
