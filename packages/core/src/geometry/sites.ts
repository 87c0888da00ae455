/**
 * Site-level geometry shared by the builders, the info report and the studio: the majority
 * species of a (possibly disordered) site, and the symmetry-distinct sites of a crystal.
 */
import { electronegativityOrder } from "../elements.ts";
import type { SiteSpecies, SpeciesEntry, Structure } from "../structure.ts";
import { DEFAULT_SYMPREC, type SymmetryOptions, symmetryDataset } from "../symmetry.ts";

/**
 * The species that names a site: the one with the highest occupancy; on a tie (Cu0.5Au0.5) the
 * first in pymatgen's formula order (electronegativity, then symbol), so every view of the same
 * site names the same element whatever order the file listed the species in.
 */
export const majoritySpecies = (species: SiteSpecies): SpeciesEntry | undefined => {
  let best: SpeciesEntry | undefined;
  for (const e of species)
    if (!best || e.occu > best.occu || (e.occu === best.occu && electronegativityOrder(e.element, best.element) < 0)) best = e;
  return best;
};

/** The element of `majoritySpecies`, or `fallback` for a site without species. */
export const majorityElement = (species: SiteSpecies | undefined, fallback = ""): string =>
  majoritySpecies(species ?? [])?.element ?? fallback;

/** One class of symmetry-equivalent sites. */
export interface DistinctSite {
  /** The first site of the class in index order (pymatgen's `equivalent_indices[k][0]`). */
  index: number;
  /** Every member, ascending. */
  members: number[];
  /** Number of members in this cell. */
  multiplicity: number;
  /** Majority element of the representative site. */
  element: string;
}

/**
 * The symmetry-distinct sites of a crystal, as pymatgen's
 * `SpacegroupAnalyzer(s, symprec).get_symmetrized_structure().equivalent_indices`: sites are typed
 * by their full species (a disordered site is its own type), classes are ordered by their first
 * member. A molecule, or a cell whose symmetry cannot be found, gives every site its own class.
 */
export const symmetryDistinctSites = (s: Structure, opts: SymmetryOptions = {}): DistinctSite[] => {
  let orbits: readonly number[] | null = null;
  if (s.lattice && s.length > 0) {
    try {
      const d = symmetryDataset(s, { symprec: opts.symprec ?? DEFAULT_SYMPREC });
      // moyo's orbits are spglib's equivalent_atoms (each site mapped to the first of its class);
      // its Wyckoff letters are not reported: they follow moyo's origin choice, not spglib's
      if (d) orbits = d.orbits;
    } catch {
      orbits = null; // no consistent symmetry at this tolerance: every site is its own class
    }
  }
  const byRep = new Map<number, number[]>();
  for (let i = 0; i < s.length; i++) {
    const rep = orbits ? (orbits[i] as number) : i;
    const list = byRep.get(rep);
    if (list) list.push(i);
    else byRep.set(rep, [i]);
  }
  return [...byRep.values()]
    .map((members) => {
      const index = members[0] as number;
      return {
        index,
        members,
        multiplicity: members.length,
        element: majorityElement(s.species[index]),
      };
    })
    .sort((a, b) => a.index - b.index);
};
