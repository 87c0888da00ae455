/**
 * A light periodic cell in fractional coordinates, the working form of the slab machinery:
 * cheaper to reshape than `Structure` and closer to how pymatgen's algorithms index sites.
 */
import type { Mat3 } from "../lattice.ts";
import type { SiteSpecies } from "../structure.ts";
import { speciesString } from "../structure.ts";

export interface Cell {
  /** Rows are the lattice vectors. */
  m: Mat3;
  species: SiteSpecies[];
  /** Fractional coordinates, 3 per site. */
  frac: Float64Array;
  labels: string[];
  props: Record<string, unknown>[];
}

export const cellSize = (c: Cell): number => c.species.length;

/** A copy with the sites of `keep` (indices, in that order). */
export const pickSites = (c: Cell, keep: readonly number[]): Cell => {
  const frac = new Float64Array(3 * keep.length);
  keep.forEach((i, k) => {
    frac[3 * k] = c.frac[3 * i] as number;
    frac[3 * k + 1] = c.frac[3 * i + 1] as number;
    frac[3 * k + 2] = c.frac[3 * i + 2] as number;
  });
  return {
    m: c.m,
    species: keep.map((i) => c.species[i] as SiteSpecies),
    frac,
    labels: keep.map((i) => c.labels[i] as string),
    props: keep.map((i) => c.props[i] as Record<string, unknown>),
  };
};

/** pymatgen's `species_string` of every site, cached per species array. */
export const speciesStrings = (c: Cell): string[] => {
  const cache = new Map<SiteSpecies, string>();
  return c.species.map((sp) => {
    let s = cache.get(sp);
    if (s === undefined) {
      s = speciesString(sp);
      cache.set(sp, s);
    }
    return s;
  });
};
