/**
 * Ready-made workflows, one click away. The structure they start from is the studio's current
 * one when it is a crystal the template can use, else the template's own example.
 */
import type { WorkflowDraft, WorkflowNode } from "./graph.ts";

export interface Template {
  id: string;
  name: string;
  description: string;
  build(bulk: Record<string, unknown>): WorkflowDraft;
}

/**
 * Slab → supercell list → EMT relaxation of each → the lowest energy: the fan-out chain.
 * EMT (ASE) knows Al, Cu, Ag, Au, Ni, Pd, Pt (and H, C, N, O), hence the Cu fallback.
 */
export const SLAB_RELAX_SELECT: Template = {
  id: "slab-relax-select",
  name: "Slab → supercells → EMT relax each → lowest",
  description:
    "Cut a (111) slab of the current crystal, build its supercell list, relax every structure with EMT and keep the lowest energy",
  build: (bulk) => {
    const nodes: WorkflowNode[] = [
      {
        id: "slab",
        type: "slab",
        params: { structure: bulk, miller: [1, 1, 1], thickness: 3, vacuum: 8 },
        inputs: {},
      },
      {
        id: "supercells",
        type: "build_supercell_legacy",
        params: { scaling: "1x1x1" },
        inputs: { structure: "slab.structure" },
      },
      {
        id: "relax",
        type: "map",
        params: {
          operation: "optimize_structure",
          item_key: "structure",
          params: { calculator: "emt", fmax: 0.05, max_steps: 200 },
        },
        inputs: { items: "supercells.structures" },
      },
      {
        id: "lowest",
        type: "select",
        params: { by: "energy", order: "min" },
        inputs: { items: "relax.results" },
      },
    ];
    return { name: "slab → relax each (EMT) → lowest", nodes };
  },
};

export const TEMPLATES: readonly Template[] = [SLAB_RELAX_SELECT];

/** Elements ASE's EMT calculator has parameters for. */
export const EMT_ELEMENTS = new Set(["Al", "Cu", "Ag", "Au", "Ni", "Pd", "Pt", "H", "C", "N", "O"]);
