/** What the viewer draws and how (no WebGL here: tools and tests import it freely). */
export interface ViewOptions {
  showAtoms: boolean;
  showBonds: boolean;
  showCell: boolean;
  showLabels: boolean;
  showForces: boolean;
  /** Sphere scale relative to 3Dmol's van der Waals radii. */
  atomScale: number;
  /** Fixed sphere radius in Angstrom for every atom; null: scaled van der Waals radii. */
  atomRadius: number | null;
  /** Stick colour; null: coloured by element. */
  bondColor: string | null;
  bondRadius: number;
  background: string;
}

export const DEFAULT_VIEW: ViewOptions = {
  showAtoms: true,
  showBonds: true,
  showCell: true,
  showLabels: false,
  showForces: false,
  atomScale: 0.3,
  atomRadius: null,
  bondColor: null,
  bondRadius: 0.12,
  background: "#ffffff",
};
