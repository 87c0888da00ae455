/**
 * Building: supercells and merging two structures. Supercells follow pymatgen's
 * `Structure.__mul__` exactly: sites grouped by original site, lattice points in a-b-c order,
 * coordinates wrapped into the new cell along periodic axes, duplicate labels suffixed _1.._n.
 */
import { fail } from "../errors.ts";
import type { Lattice, Mat3, Vec3 } from "../lattice.ts";
import { type SiteSpecies, Structure } from "../structure.ts";

/** Largest structure a supercell or slab may produce (interface limit). */
export const MAX_GENERATED_ATOMS = 10_000;
export const MAX_SCALING = 10;

export const checkAtomLimit = (n: number, what: string): void => {
  if (n > MAX_GENERATED_ATOMS)
    fail("TOO_MANY_ATOMS", `${what} would have ${n} atoms, more than the limit of ${MAX_GENERATED_ATOMS}`, {
      n_atoms: n,
      limit: MAX_GENERATED_ATOMS,
    });
};

export const requireLattice = (s: Structure, what: string): Lattice => {
  if (!s.lattice) return fail("MISSING_LATTICE", `${what} needs a periodic structure with a lattice; this is a molecule`);
  return s.lattice;
};

/** pymatgen's `relabel_sites(ignore_uniq=True)`: labels used more than once become label_1, label_2, … */
export const relabelDuplicates = (labels: readonly string[]): string[] => {
  const count = new Map<string, number>();
  for (const l of labels) count.set(l, (count.get(l) ?? 0) + 1);
  const seen = new Map<string, number>();
  return labels.map((l) => {
    if ((count.get(l) as number) < 2) return l;
    const k = (seen.get(l) ?? 0) + 1;
    seen.set(l, k);
    return `${l}_${k}`;
  });
};

export const supercell = (s: Structure, scaling: readonly number[]): Structure => {
  const lattice = requireLattice(s, "A supercell");
  if (scaling.length !== 3 || scaling.some((f) => !Number.isInteger(f) || f < 1 || f > MAX_SCALING))
    fail("INVALID_SCALING", `Scaling factors must be 3 integers from 1 to ${MAX_SCALING}, got [${scaling.join(", ")}]`, {
      scaling,
      min: 1,
      max: MAX_SCALING,
    });
  const [na, nb, nc] = scaling as [number, number, number];
  const images = na * nb * nc;
  checkAtomLimit(s.length * images, "The supercell");
  const scale: Mat3 = [
    [na, 0, 0],
    [0, nb, 0],
    [0, 0, nc],
  ];
  const newLattice = lattice.scaled(scale);
  const m = lattice.matrix;
  // Cartesian translation of every lattice point inside the supercell, in pymatgen's order.
  const shifts: Vec3[] = [];
  for (let a = 0; a < na; a++)
    for (let b = 0; b < nb; b++)
      for (let c = 0; c < nc; c++)
        shifts.push([
          a * m[0][0] + b * m[1][0] + c * m[2][0],
          a * m[0][1] + b * m[1][1] + c * m[2][1],
          a * m[0][2] + b * m[1][2] + c * m[2][2],
        ]);
  const n = s.length;
  const total = n * images;
  const cart = new Float64Array(3 * total);
  const species: SiteSpecies[] = new Array(total);
  const labels: string[] = new Array(total);
  const props: Record<string, unknown>[] = new Array(total);
  const inv = newLattice.inverse;
  const nm = newLattice.matrix;
  const pbc = newLattice.pbc;
  const f: Vec3 = [0, 0, 0];
  let k = 0;
  for (let i = 0; i < n; i++) {
    const x0 = s.cart[3 * i] as number,
      y0 = s.cart[3 * i + 1] as number,
      z0 = s.cart[3 * i + 2] as number;
    for (const t of shifts) {
      const x = x0 + t[0],
        y = y0 + t[1],
        z = z0 + t[2];
      for (let j = 0; j < 3; j++) {
        const v = x * (inv[0][j] as number) + y * (inv[1][j] as number) + z * (inv[2][j] as number);
        // Python's modulo (numpy.mod): result in [0, 1) except that -1e-17 maps to 1.0, as in pymatgen.
        f[j] = pbc[j] ? v - Math.floor(v) : v;
      }
      cart[3 * k] = f[0] * nm[0][0] + f[1] * nm[1][0] + f[2] * nm[2][0];
      cart[3 * k + 1] = f[0] * nm[0][1] + f[1] * nm[1][1] + f[2] * nm[2][1];
      cart[3 * k + 2] = f[0] * nm[0][2] + f[1] * nm[1][2] + f[2] * nm[2][2];
      species[k] = s.species[i] as SiteSpecies;
      labels[k] = s.labels[i] as string;
      props[k] = s.siteProperties[i] as Record<string, unknown>;
      k++;
    }
  }
  return new Structure({
    lattice: newLattice,
    species,
    cart,
    labels: relabelDuplicates(labels),
    siteProperties: props,
    charge: s.charge * images,
    properties: s.properties,
  });
};

export const MERGE_MODES = ["preserve_lattice", "to_molecule"] as const;
export type MergeMode = (typeof MERGE_MODES)[number];

/** Unweighted geometric centre of the Cartesian coordinates. */
export const geometricCentre = (s: Structure): Vec3 => {
  const c: Vec3 = [0, 0, 0];
  for (let i = 0; i < s.length; i++) {
    c[0] += s.cart[3 * i] as number;
    c[1] += s.cart[3 * i + 1] as number;
    c[2] += s.cart[3 * i + 2] as number;
  }
  return c.map((v) => v / Math.max(1, s.length)) as Vec3;
};

/**
 * Place `incoming` with its geometric centre at `position` and add it to `base`.
 * `preserve_lattice` keeps the base lattice (if it has one); `to_molecule` drops it.
 */
export const merge = (base: Structure, incoming: Structure, position: Vec3, mode: string = "preserve_lattice"): Structure => {
  if (!(MERGE_MODES as readonly string[]).includes(mode))
    fail("INVALID_MODE", `mode must be one of ${MERGE_MODES.join(", ")}, got ${JSON.stringify(mode)}`, {
      mode,
      allowed: MERGE_MODES,
    });
  if (base.length === 0 && incoming.length === 0) fail("EMPTY_STRUCTURES", "Both base and incoming structures are empty");
  const centre = geometricCentre(incoming);
  const shift = [position[0] - centre[0], position[1] - centre[1], position[2] - centre[2]];
  const nb = base.length;
  const cart = new Float64Array(3 * (nb + incoming.length));
  cart.set(base.cart);
  for (let i = 0; i < incoming.length; i++)
    for (let j = 0; j < 3; j++) cart[3 * (nb + i) + j] = (incoming.cart[3 * i + j] as number) + (shift[j] as number);
  const lattice = mode === "preserve_lattice" ? base.lattice : null;
  return new Structure({
    lattice,
    species: [...base.species, ...incoming.species],
    cart,
    labels: [...base.labels, ...incoming.labels],
    siteProperties: [...base.siteProperties, ...incoming.siteProperties],
    charge: base.charge + incoming.charge,
    properties: { ...incoming.properties, ...base.properties },
    spinMultiplicity: null,
  });
};
