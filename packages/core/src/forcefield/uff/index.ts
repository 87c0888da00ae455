/**
 * UFF for molecules, isomorphic (runs in the studio's Web Worker as well as in Node). Equal to
 * RDKit's UFF (same atom types, parameters, terms and cut-offs; see field.ts); bonds and orders are
 * perceived from the geometry when a structure has none (bonds.ts). Periodic structures are
 * refused: UFF here is for molecules.
 */
import { elementInfo } from "../../elements.ts";
import { AtomStudioError } from "../../errors.ts";
import type { Structure } from "../../structure.ts";
import { perceiveBonds } from "./bonds.ts";
import type { MolGraph } from "./chemistry.ts";
import { UffField, type UffOptions } from "./field.ts";
import { minimize } from "./minimize.ts";

export { perceiveBonds } from "./bonds.ts";
export type { Hybridization, MolGraph } from "./chemistry.ts";
export { perceiveChemistry } from "./chemistry.ts";
export { UffField, type UffOptions, type UffTermCounts } from "./field.ts";
export { type MinimizeOptions, type MinimizeStep, minimize } from "./minimize.ts";

/** 1 kcal/mol in eV (4.184 kJ/mol over the Faraday constant in kJ/(mol·V)). */
export const KCAL_PER_MOL_IN_EV = 4.184 / 96.48533212;

/** Atomic numbers of an ordered molecule; a disordered site cannot be typed. */
const atomicNumbers = (s: Structure): number[] => {
  const bad: number[] = [];
  const z = s.species.map((sp, i) => {
    const only = sp[0];
    if (sp.length !== 1 || !only || Math.abs(only.occu - 1) > 1e-8) {
      bad.push(i);
      return 0;
    }
    return elementInfo(only.element)?.Z ?? 0;
  });
  if (bad.length)
    throw new AtomStudioError("UNSUPPORTED_ATOM_TYPES", `UFF needs one element per site; disordered sites: ${bad.join(", ")}`, {
      atoms: bad,
    });
  return z;
};

/** The molecule's graph and its UFF field; bonds are perceived from the geometry. */
export const uffFieldFor = (s: Structure, options: UffOptions = {}): { graph: MolGraph; field: UffField } => {
  if (s.lattice)
    throw new AtomStudioError(
      "PERIODIC_NOT_SUPPORTED",
      "UFF here is for molecules; this structure is periodic. Use a server calculator (EMT, GFN-FF, MACE…) for crystals and slabs.",
    );
  if (s.length === 0) throw new AtomStudioError("INVALID_STRUCTURE", "The structure has no atoms");
  const graph = perceiveBonds(atomicNumbers(s), s.cart, s.charge);
  return { graph, field: new UffField(graph, s.cart, options) };
};

export interface UffStep {
  step: number;
  /** eV */
  energy: number;
  /** Largest force on a free atom, eV/Å. */
  fmax: number;
  structure: Structure;
  converged: boolean;
}

/** Per-site forces (eV/Å) from a gradient in kcal/mol/Å. */
export const forcesFromGradient = (g: Float64Array): number[][] => {
  const out: number[][] = [];
  for (let i = 0; i < g.length; i += 3)
    out.push([
      -(g[i] as number) * KCAL_PER_MOL_IN_EV,
      -(g[i + 1] as number) * KCAL_PER_MOL_IN_EV,
      -(g[i + 2] as number) * KCAL_PER_MOL_IN_EV,
    ]);
  return out;
};

/** Energy (eV), forces (eV/Å) and fmax of a molecule. */
export const uffEnergy = (s: Structure, options: UffOptions = {}) => {
  const { field } = uffFieldFor(s, options);
  const g = new Float64Array(s.cart.length);
  const e = field.energy(s.cart, g);
  const forces = forcesFromGradient(g);
  const fmax = Math.max(0, ...forces.map((f) => Math.hypot(...(f as [number, number, number]))));
  return { energy: e * KCAL_PER_MOL_IN_EV, energy_per_atom: (e * KCAL_PER_MOL_IN_EV) / s.length, forces, fmax };
};

/**
 * A step whose structure is built when first read (from its own copy of the coordinates, so it is
 * the step's whatever is read later): the studio's Worker reads one every 50 ms, and a Structure per
 * step was a third of the run's allocations.
 */
class RelaxStep implements UffStep {
  readonly step: number;
  readonly energy: number;
  readonly fmax: number;
  readonly converged: boolean;
  readonly #start: Structure;
  readonly #cart: Float64Array;
  #structure: Structure | undefined;

  constructor(step: number, energy: number, fmax: number, converged: boolean, start: Structure, cart: Float64Array) {
    this.step = step;
    this.energy = energy;
    this.fmax = fmax;
    this.converged = converged;
    this.#start = start;
    this.#cart = cart;
  }

  get structure(): Structure {
    this.#structure ??= this.#start.with({ cart: this.#cart });
    return this.#structure;
  }

  set structure(s: Structure) {
    this.#structure = s;
  }
}

/**
 * Relaxes a molecule with UFF, yielding one step per iteration (energy in eV, fmax in eV/Å);
 * frozen atoms never move. The last step's structure carries per-site `forces` (eV/Å) in its site properties.
 */
export function* relaxWithUff(
  s: Structure,
  opts: { fmax?: number; maxSteps?: number; frozen?: readonly number[] } & UffOptions = {},
): Generator<UffStep> {
  const { field } = uffFieldFor(s, opts);
  const fmaxTarget = opts.fmax ?? 0.05;
  const g = new Float64Array(s.cart.length);
  let last: UffStep | null = null;
  for (const step of minimize((x, grad) => field.energy(x, grad), s.cart, {
    gmax: fmaxTarget / KCAL_PER_MOL_IN_EV,
    maxSteps: opts.maxSteps ?? 200,
    frozen: opts.frozen ?? [],
  })) {
    last = new RelaxStep(step.step, step.energy * KCAL_PER_MOL_IN_EV, step.gmax * KCAL_PER_MOL_IN_EV, step.converged, s, step.x);
    yield last;
  }
  if (last) {
    field.energy(last.structure.cart, g);
    const forces = forcesFromGradient(g);
    for (const i of opts.frozen ?? []) forces[i] = [0, 0, 0];
    last.structure = last.structure.with({ siteProperties: s.siteProperties.map((p, i) => ({ ...p, forces: forces[i] })) });
  }
  return last;
}
