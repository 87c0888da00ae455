/**
 * Adsorption through the warm analysis worker (pymatgen's AdsorbateSiteFinder; README.md here).
 * Structures are read and checked by the core first (400 INVALID_STRUCTURE before any work), sent
 * in a compact form (lattice rows, one element per site, Cartesian positions) and come back the
 * same way, so the worker never parses the caller's JSON.
 */
import { fromDict, majorityElement, type Structure } from "atomstudio-core";
import { runAnalysis } from "../analysis/service.ts";
import type { ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";

/** Most atoms a slab may have for site finding and placement (symmetry analysis and Delaunay grow with it). */
export const ADSORPTION_MAX_ATOMS = 2000;
/** Most atoms in one adsorbate molecule. */
export const ADSORBATE_MAX_ATOMS = 200;
/** Most candidate sites `place-dual` compares pairwise. */
export const DUAL_MAX_SITES = 1000;
/** Most `neighbor_positions` for the multidentate alignment (a site has a handful; each is scanned 109 times per binding atom). */
export const NEIGHBOR_POSITIONS_MAX = 64;
/** Å: a neighbour position farther than this from the site (nearest image) is a mistake, not a surface atom around it. */
export const NEIGHBOR_MAX_DISTANCE = 10;
/** Å: no neighbour coordinate beyond this (past it, wrapping into the cell loses every digit). */
export const NEIGHBOR_MAX_COORDINATE = 1e5;

export interface Compact {
  lattice: number[][] | null;
  species: string[];
  cart: number[][];
  /** Fractional coordinates of a periodic structure, as the request gave them (`abc`) when it did. */
  frac?: number[][];
}

/**
 * The compact form of a read structure. For a periodic one the fractional coordinates travel too,
 * taken from the request's own `abc` when every site has it: pymatgen builds its structure from
 * `abc`, and the Delaunay triangulation of a square or rectangular surface breaks its ties on the
 * last bit, so the same bits give the same sites as pymatgen run on the same dictionary.
 */
export const compact = (s: Structure, raw?: unknown): Compact => {
  const cart: number[][] = [];
  for (let i = 0; i < s.length; i++)
    cart.push([s.cart[3 * i] as number, s.cart[3 * i + 1] as number, s.cart[3 * i + 2] as number]);
  const out: Compact = {
    lattice: s.lattice ? s.lattice.matrix.map((row) => [...row]) : null,
    // one rule for a disordered site's element everywhere (the core's majority species); placement is geometry
    species: s.species.map((sp) => majorityElement(sp, "X")),
    cart,
  };
  if (s.lattice) {
    const given = (raw as { sites?: Array<{ abc?: unknown }> } | undefined)?.sites?.map((site) => site.abc);
    const f = s.frac;
    out.frac =
      given?.length === s.length && given.every((a) => Array.isArray(a) && a.length === 3 && a.every(Number.isFinite))
        ? (given as number[][])
        : cart.map((_, i) => [f[3 * i] as number, f[3 * i + 1] as number, f[3 * i + 2] as number]);
  }
  return out;
};

/** Read a request structure with the core and cap it before any work. */
export const readStructure = (raw: unknown, field: string, max: number, opts: { periodic?: boolean } = {}): Structure => {
  const s = fromDict(raw);
  if (s.length === 0) throw serviceError("INVALID_STRUCTURE", `${field} has no atoms`, { field });
  if (s.length > max)
    throw serviceError("TOO_MANY_ATOMS", `${field} has ${s.length} atoms; adsorption takes at most ${max}`, {
      field,
      n_atoms: s.length,
      limit: max,
    });
  if (opts.periodic && !s.lattice)
    throw serviceError("MISSING_LATTICE", `${field} is a molecule; this needs a periodic slab (a structure with a lattice)`, {
      field,
    });
  return s;
};

export const runAdsorption = <T>(ctx: ServiceContext, method: string, params: Record<string, unknown>): Promise<T> =>
  runAnalysis<T>(ctx, method, {}, params);
