import { electronegativityOrder, elementInfo } from "./elements.ts";
import type { Lattice, Vec3 } from "./lattice.ts";

/** One species on a site with its occupancy (pymatgen's species dictionary). */
export interface SpeciesEntry {
  readonly element: string;
  readonly occu: number;
  /** Present only for oxidation-decorated species (pymatgen `Species`). */
  readonly oxidation_state?: number;
  readonly spin?: number | null;
}
export type SiteSpecies = readonly SpeciesEntry[];

export interface StructureInit {
  lattice: Lattice | null;
  species: readonly SiteSpecies[];
  /** Cartesian coordinates, x0 y0 z0 x1 y1 z1 …, Angstrom. */
  cart: Float64Array;
  labels?: readonly string[];
  siteProperties?: readonly Record<string, unknown>[];
  charge?: number;
  properties?: Record<string, unknown>;
  spinMultiplicity?: number | null;
}

/**
 * The structure type everything speaks: a crystal (with lattice) or a molecule (without).
 * Immutable by convention: operations return new instances and share untouched arrays.
 */
export class Structure {
  readonly lattice: Lattice | null;
  readonly species: readonly SiteSpecies[];
  readonly cart: Float64Array;
  readonly labels: readonly string[];
  readonly siteProperties: readonly Record<string, unknown>[];
  readonly charge: number;
  readonly properties: Record<string, unknown>;
  /** Molecules only; kept consistent with the electron count (see `consistentSpin`). */
  readonly spinMultiplicity: number | null;
  #frac: Float64Array | undefined;

  constructor(init: StructureInit) {
    const n = init.species.length;
    if (init.cart.length !== 3 * n) throw new Error(`cart has ${init.cart.length} numbers for ${n} sites`);
    this.lattice = init.lattice;
    this.species = init.species;
    this.cart = init.cart;
    this.labels = init.labels ?? init.species.map(speciesString);
    this.siteProperties = init.siteProperties ?? init.species.map(() => ({}));
    this.charge = init.charge ?? 0;
    this.properties = init.properties ?? {};
    this.spinMultiplicity = init.lattice ? null : consistentSpin(init.species, this.charge, init.spinMultiplicity ?? null);
  }

  get length(): number {
    return this.species.length;
  }

  get isMolecule(): boolean {
    return this.lattice === null;
  }

  position(i: number): Vec3 {
    const c = this.cart;
    return [c[3 * i] as number, c[3 * i + 1] as number, c[3 * i + 2] as number];
  }

  /** Fractional coordinates of every site (periodic structures only), computed once. */
  get frac(): Float64Array {
    if (!this.lattice) throw new Error("a molecule has no fractional coordinates");
    if (!this.#frac) this.#frac = cartToFrac(this.lattice, this.cart);
    return this.#frac;
  }

  /** A copy with some fields replaced; what is not named is shared. */
  with(changes: Partial<StructureInit>): Structure {
    return new Structure({
      lattice: this.lattice,
      species: this.species,
      cart: this.cart,
      labels: this.labels,
      siteProperties: this.siteProperties,
      charge: this.charge,
      properties: this.properties,
      spinMultiplicity: this.spinMultiplicity,
      ...changes,
    });
  }
}

export const cartToFrac = (lattice: Lattice, cart: Float64Array): Float64Array => {
  const m = lattice.inverse;
  const [m00, m01, m02] = m[0];
  const [m10, m11, m12] = m[1];
  const [m20, m21, m22] = m[2];
  const out = new Float64Array(cart.length);
  for (let i = 0; i < cart.length; i += 3) {
    const x = cart[i] as number,
      y = cart[i + 1] as number,
      z = cart[i + 2] as number;
    out[i] = x * m00 + y * m10 + z * m20;
    out[i + 1] = x * m01 + y * m11 + z * m21;
    out[i + 2] = x * m02 + y * m12 + z * m22;
  }
  return out;
};

export const fracToCart = (lattice: Lattice, frac: Float64Array): Float64Array => {
  const [[m00, m01, m02], [m10, m11, m12], [m20, m21, m22]] = lattice.matrix;
  const out = new Float64Array(frac.length);
  for (let i = 0; i < frac.length; i += 3) {
    const x = frac[i] as number,
      y = frac[i + 1] as number,
      z = frac[i + 2] as number;
    out[i] = x * m00 + y * m10 + z * m20;
    out[i + 1] = x * m01 + y * m11 + z * m21;
    out[i + 2] = x * m02 + y * m12 + z * m22;
  }
  return out;
};

const speciesName = (s: SpeciesEntry): string => {
  if (s.oxidation_state === undefined || s.oxidation_state === null) return s.element;
  const ox = s.oxidation_state;
  const mag = Math.abs(ox);
  const num = mag === 1 ? "" : Number.isInteger(mag) ? String(mag) : String(mag);
  return `${s.element}${num}${ox >= 0 ? "+" : "-"}`;
};

/** pymatgen's `Site.species_string`: "Fe", "Fe2+", or "Fe:0.5, Ni:0.25" for disordered sites. */
export const speciesString = (species: SiteSpecies): string => {
  const only = species[0];
  if (species.length === 1 && only && Math.abs(only.occu - 1) < 1e-8) return speciesName(only);
  return [...species]
    .sort((a, b) => electronegativityOrder(a.element, b.element))
    .map((s) => `${speciesName(s)}:${formatG3(s.occu)}`)
    .join(", ");
};

/** Python's `f"{x:.3}"` (three significant digits, general format) for occupancies in (0, 1]. */
const formatG3 = (x: number): string => {
  const s = x.toPrecision(3);
  return s.includes("e") ? s : s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, ".0") : `${s}.0`;
};

/** Electrons of the neutral atoms minus the charge. */
const electronCount = (species: readonly SiteSpecies[], charge: number): number => {
  let z = 0;
  for (const site of species) for (const s of site) z += (elementInfo(s.element)?.Z ?? 0) * s.occu;
  return z - charge;
};

/**
 * A spin multiplicity that pymatgen's `Molecule.from_dict` accepts. pymatgen keeps the old value
 * after an edit even when the electron parity changed, which its own loader then rejects; we
 * fall back to the default (1 for even, 2 for odd electron counts) instead.
 */
export const consistentSpin = (species: readonly SiteSpecies[], charge: number, spin: number | null): number => {
  const ne = Math.round(electronCount(species, charge));
  const fallback = ne % 2 === 0 ? 1 : 2;
  if (spin === null || !Number.isInteger(spin) || spin < 1) return fallback;
  return (ne + spin) % 2 === 1 ? spin : fallback;
};
