/**
 * Atom editing: add, delete, replace and move sites. Pure functions on `Structure`, shared by
 * the service and the studio, so both give identical results. Semantics follow pymatgen's
 * `append`, `remove_sites`, `replace` and `translate_sites(..., to_unit_cell=False)`: positions
 * stay where the user put them, nothing is wrapped into the cell.
 */
import { fail } from "../errors.ts";
import type { Vec3 } from "../lattice.ts";
import { speciesOf } from "../pymatgen.ts";
import type { SiteSpecies, Structure } from "../structure.ts";

export interface NewAtom {
  element: string;
  xyz: Vec3;
}

export const checkIndex = (s: Structure, index: number, field = "index"): void => {
  if (!Number.isInteger(index) || index < 0 || index >= s.length)
    fail("INVALID_INDEX", `Index ${index} is out of bounds for a structure with ${s.length} sites`, {
      field,
      index,
      n_atoms: s.length,
    });
};

/** Distinct indices, each checked; order of first appearance. */
export const checkIndices = (s: Structure, indices: readonly number[], field = "indices"): number[] => {
  if (indices.length === 0) fail("EMPTY_INDICES", `${field} must contain at least one index`, { field });
  const bad = indices.filter((i) => !Number.isInteger(i) || i < 0 || i >= s.length);
  if (bad.length)
    fail("INVALID_INDEX", `Indices out of bounds for a structure with ${s.length} sites: ${bad.slice(0, 10).join(", ")}`, {
      field,
      invalid_indices: bad,
      n_atoms: s.length,
    });
  return [...new Set(indices)];
};

export const addAtoms = (s: Structure, atoms: readonly NewAtom[]): { structure: Structure; addedIndices: number[] } => {
  if (atoms.length === 0) fail("EMPTY_ATOMS", "atoms must contain at least one atom", { field: "atoms" });
  // Validate every atom before changing anything: one bad symbol rejects the whole request.
  const newSpecies: SiteSpecies[] = atoms.map((a, i) => {
    try {
      return speciesOf(a.element);
    } catch {
      return fail("INVALID_ELEMENT", `Invalid element symbol ${JSON.stringify(a.element)} in atoms[${i}]`, {
        field: `atoms[${i}].element`,
        value: a.element,
      });
    }
  });
  const n = s.length;
  const cart = new Float64Array(3 * (n + atoms.length));
  cart.set(s.cart);
  for (const [i, a] of atoms.entries()) cart.set(a.xyz, 3 * (n + i));
  const structure = s.with({
    species: [...s.species, ...newSpecies],
    cart,
    labels: [...s.labels, ...atoms.map((a) => a.element)],
    siteProperties: [...s.siteProperties, ...atoms.map(() => ({}))],
  });
  return { structure, addedIndices: atoms.map((_, i) => n + i) };
};

export const addAtom = (s: Structure, element: string, position: Vec3): { structure: Structure; addedIndex: number } => {
  speciesOf(element);
  const { structure, addedIndices } = addAtoms(s, [{ element, xyz: position }]);
  return { structure, addedIndex: addedIndices[0] as number };
};

export const deleteAtoms = (s: Structure, indices: readonly number[]): { structure: Structure; deletedCount: number } => {
  const unique = checkIndices(s, indices);
  const drop = new Uint8Array(s.length);
  for (const i of unique) drop[i] = 1;
  const keep = s.length - unique.length;
  const cart = new Float64Array(3 * keep);
  const species: SiteSpecies[] = [];
  const labels: string[] = [];
  const props: Record<string, unknown>[] = [];
  let k = 0;
  for (let i = 0; i < s.length; i++) {
    if (drop[i]) continue;
    cart[3 * k] = s.cart[3 * i] as number;
    cart[3 * k + 1] = s.cart[3 * i + 1] as number;
    cart[3 * k + 2] = s.cart[3 * i + 2] as number;
    species.push(s.species[i] as SiteSpecies);
    labels.push(s.labels[i] as string);
    props.push(s.siteProperties[i] as Record<string, unknown>);
    k++;
  }
  return { structure: s.with({ species, cart, labels, siteProperties: props }), deletedCount: unique.length };
};

/** pymatgen's `replace`: same position, new species; label becomes the element, site properties are reset. */
export const replaceAtom = (s: Structure, index: number, newElement: string): { structure: Structure; oldElement: string } => {
  checkIndex(s, index);
  let sp: SiteSpecies;
  try {
    sp = speciesOf(newElement);
  } catch {
    return fail("INVALID_ELEMENT", `Invalid element symbol ${JSON.stringify(newElement)} in new_element`, {
      field: "new_element",
      value: newElement,
    });
  }
  const old = s.species[index] as SiteSpecies;
  const oldElement = old.length === 1 ? (old[0]?.element as string) : (s.labels[index] as string);
  const species = [...s.species];
  species[index] = sp;
  const labels = [...s.labels];
  labels[index] = newElement;
  const props = [...s.siteProperties];
  props[index] = {};
  return { structure: s.with({ species, labels, siteProperties: props }), oldElement };
};

export const moveAtom = (s: Structure, index: number, newPosition: Vec3): { structure: Structure; oldPosition: Vec3 } => {
  checkIndex(s, index);
  const oldPosition = s.position(index);
  const cart = s.cart.slice();
  cart.set(newPosition, 3 * index);
  return { structure: s.with({ cart }), oldPosition };
};

/** Shift every listed site (each once, even if listed twice) by the same Cartesian vector. */
export const moveAtoms = (
  s: Structure,
  indices: readonly number[],
  displacement: Vec3,
): { structure: Structure; movedCount: number } => {
  const unique = checkIndices(s, indices);
  const cart = s.cart.slice();
  const [dx, dy, dz] = displacement;
  for (const i of unique) {
    cart[3 * i] = (cart[3 * i] as number) + dx;
    cart[3 * i + 1] = (cart[3 * i + 1] as number) + dy;
    cart[3 * i + 2] = (cart[3 * i + 2] as number) + dz;
  }
  return { structure: s.with({ cart }), movedCount: unique.length };
};
