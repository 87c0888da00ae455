import { AMU_PER_A3_TO_G_PER_CM3, composition, formula, reducedFormula, weight } from "./composition.ts";
import type { Structure } from "./structure.ts";

export const structureFormula = (s: Structure): string => formula(composition(s.species));
export const structureReducedFormula = (s: Structure): string => reducedFormula(composition(s.species));

/** Density in g/cm^3 (pymatgen's `Structure.density`); null for molecules. */
export const density = (s: Structure): number | null =>
  s.lattice ? (weight(composition(s.species)) * AMU_PER_A3_TO_G_PER_CM3) / s.lattice.volume : null;
