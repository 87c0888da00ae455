/** The studio's state (undo/redo, selection) and the viewer tools on a stand-in host (no WebGL). */
import { deleteAtoms, fromDict, type Structure } from "atomstudio-core";
import { afterEach, describe, expect, it } from "vitest";
import { StudioStore } from "../src/store.ts";
import { DEFAULT_VIEW, type ViewOptions } from "../src/viewer/options.ts";
import { bindViewerTools, type ViewerToolHost, viewerTools } from "../src/viewer/tools.ts";

const nacl = () =>
  fromDict({
    lattice: {
      matrix: [
        [5.64, 0, 0],
        [0, 5.64, 0],
        [0, 0, 5.64],
      ],
    },
    sites: [
      ["Na", [0, 0, 0]],
      ["Na", [0.5, 0.5, 0]],
      ["Cl", [0.5, 0, 0]],
      ["Cl", [0, 0.5, 0]],
    ].map(([element, abc]) => ({
      species: [{ element, occu: 1 }],
      abc,
      properties: element === "Na" ? { forces: [0.1, 0, 0] } : {},
    })),
  });

describe("studio store", () => {
  it("undoes and redoes structure changes, and a new edit clears redo", () => {
    const store = new StudioStore();
    const kinds: string[] = [];
    store.subscribe((c) => kinds.push(c.kind));
    const a = nacl();
    store.set(a, { name: "NaCl" });
    const b = deleteAtoms(a, [0]).structure;
    store.set(b, { keepView: true });
    expect(store.structure).toBe(b);
    expect(store.undo()).toBe(true);
    expect(store.structure).toBe(a);
    expect(store.redo()).toBe(true);
    expect(store.structure).toBe(b);
    store.undo();
    store.set(deleteAtoms(a, [1]).structure, { keepView: true });
    expect(store.canRedo).toBe(false);
    store.undo();
    store.undo();
    expect(store.structure).toBeNull();
    expect(store.undo()).toBe(false);
    expect(kinds).toContain("structure");
  });

  it("keeps selections to valid site indices; an edit keeps what still exists, a new structure clears it", () => {
    const store = new StudioStore();
    store.set(nacl());
    store.select([3, 1, 1, 7, -1]);
    expect(store.selection).toEqual([1, 3]);
    store.set(deleteAtoms(store.structure as Structure, [0]).structure, { keepView: true });
    expect(store.selection).toEqual([1]);
    store.set(nacl());
    expect(store.selection).toEqual([]);
  });
});

describe("viewer tools on a host", () => {
  let view: ViewOptions;
  let selection: number[];
  let rotation: number[] | null;
  let resets: number;
  const structure = nacl();
  const host: ViewerToolHost = {
    view: () => view,
    setView: (c) => {
      view = { ...view, ...c };
    },
    resetCamera: () => {
      resets++;
    },
    setRotation: (deg) => {
      rotation = deg;
    },
    selection: () => selection,
    setSelection: (s) => {
      selection = s;
    },
    structure: () => structure,
  };
  const fresh = () => {
    view = { ...DEFAULT_VIEW };
    selection = [];
    rotation = null;
    resets = 0;
    bindViewerTools(host);
  };
  afterEach(() => bindViewerTools(undefined));

  it("toggles, or sets when visible is given", async () => {
    fresh();
    expect(await viewerTools.toggle_atoms!()).toEqual({ atoms_visible: false });
    expect(await viewerTools.toggle_atoms!()).toEqual({ atoms_visible: true });
    expect(await viewerTools.toggle_bonds!({ visible: false })).toEqual({ bonds_visible: false });
    expect(await viewerTools.toggle_bonds!({ visible: false })).toEqual({ bonds_visible: false });
    expect(await viewerTools.toggle_unit_cell!()).toEqual({ unit_cell_visible: false });
    expect(await viewerTools.toggle_labels!()).toEqual({ labels_visible: true });
    expect(await viewerTools.toggle_force_vectors!()).toEqual({ force_vectors_visible: true, n_sites_with_forces: 2 });
    expect(view).toMatchObject({ showAtoms: true, showBonds: false, showCell: false, showLabels: true, showForces: true });
  });

  it("selects by index and element with replace, add and remove", async () => {
    fresh();
    expect(await viewerTools.select_atoms!({ indices: [2, 0, 2] })).toEqual({ selected_indices: [0, 2], n_selected: 2 });
    await viewerTools.select_by_element!({ element: "Na", mode: "add" });
    expect(selection).toEqual([0, 1, 2]);
    await viewerTools.select_atoms!({ indices: [0], mode: "remove" });
    expect(selection).toEqual([1, 2]);
    await viewerTools.select_by_element!({ element: "Cl" });
    expect(selection).toEqual([2, 3]);
    expect(await viewerTools.clear_selection!()).toEqual({ selected_indices: [], n_selected: 0 });
    await expect(viewerTools.select_atoms!({ indices: [4] })).rejects.toThrow(/^INVALID_INDEX/);
    await expect(viewerTools.select_by_element!({ element: "Xx" })).rejects.toThrow(/^INVALID_ELEMENT/);
    await expect(viewerTools.select_atoms!({ indices: [1], mode: "toggle" })).rejects.toThrow(/^INVALID_MODE/);
  });

  it("sets camera, radius and bond colour, rejecting bad values", async () => {
    fresh();
    await viewerTools.set_rotation!({ x: 10, z: -5 });
    expect(rotation).toEqual([10, 0, -5]);
    await viewerTools.reset_camera!();
    expect(resets).toBe(1);
    await viewerTools.set_atom_radius!({ radius: 0.7 });
    expect(view.atomRadius).toBe(0.7);
    await viewerTools.set_atom_radius!({ scale: 0.5 });
    expect(view).toMatchObject({ atomRadius: null, atomScale: 0.5 });
    await expect(viewerTools.set_atom_radius!({ radius: -1 })).rejects.toThrow(/^INVALID_RADIUS/);
    await viewerTools.set_bond_color!({ color: "#ff0000" });
    expect(view.bondColor).toBe("#ff0000");
    await viewerTools.set_bond_color!({ color: "element" });
    expect(view.bondColor).toBeNull();
    await expect(viewerTools.set_bond_color!({ color: "not a colour!" })).rejects.toThrow(/^INVALID_COLOR/);
  });

  it("says the viewer is not running when no studio is bound", async () => {
    bindViewerTools(undefined);
    await expect(viewerTools.toggle_atoms!()).rejects.toThrow(/^NO_VIEWER/);
  });
});
