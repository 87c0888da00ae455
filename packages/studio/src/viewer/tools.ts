/**
 * Client-only viewer tools (interface: "Assistant tools", client-only list). Each has a JSON
 * Schema for its input and runs in the studio: `await viewerTools[name](input)`. The assistant
 * gives `viewerToolDefinitions` to the model; the studio's buttons call the same functions.
 *
 * A tool returns a small JSON object describing the new state; invalid input throws an Error
 * whose message starts with a code (`INVALID_INDEX: ...`), for the assistant's `Error: ` text.
 */
import { isElement, type Structure } from "atomstudio-core";
import type { ViewOptions } from "./options.ts";

export interface ViewerToolDefinition {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** What the tools act on; the studio provides it (`bindViewerTools`). */
export interface ViewerToolHost {
  view(): ViewOptions;
  setView(changes: Partial<ViewOptions>): void;
  resetCamera(): void;
  setRotation(deg: [number, number, number], zoom?: number): void;
  selection(): number[];
  setSelection(sites: number[]): void;
  structure(): Structure | null;
}

export type ViewerToolResult = Record<string, unknown>;
export type ViewerTool = (input?: Record<string, unknown>) => Promise<ViewerToolResult>;

const visibleSchema = (what: string) => ({
  type: "object",
  properties: { visible: { type: "boolean", description: `show (true) or hide (false) ${what}; omitted: toggle` } },
  additionalProperties: false,
});

const MODE = {
  type: "string",
  enum: ["replace", "add", "remove"],
  description: "replace the selection (default), add to it, or remove from it",
};

export const viewerToolDefinitions: ViewerToolDefinition[] = [
  {
    name: "toggle_atoms",
    description: "Show or hide the atoms (spheres) in the 3D viewer",
    input_schema: visibleSchema("atoms"),
  },
  { name: "toggle_bonds", description: "Show or hide the bonds (sticks) in the 3D viewer", input_schema: visibleSchema("bonds") },
  { name: "toggle_unit_cell", description: "Show or hide the unit cell outline", input_schema: visibleSchema("the unit cell") },
  {
    name: "toggle_labels",
    description: "Show or hide atom labels (element and site index; only selected atoms for structures over 500 atoms)",
    input_schema: visibleSchema("labels"),
  },
  {
    name: "toggle_force_vectors",
    description: "Show or hide force arrows from the sites' properties.forces (longest arrow 1.5 Angstrom)",
    input_schema: visibleSchema("force vectors"),
  },
  {
    name: "reset_camera",
    description: "Fit the structure in the view with no rotation",
    input_schema: { type: "object", properties: {}, additionalProperties: false },
  },
  {
    name: "set_rotation",
    description: "Rotate the view to absolute Euler angles in degrees (about x, then y, then z, from the reset view)",
    input_schema: {
      type: "object",
      properties: {
        x: { type: "number", description: "degrees about the screen's x axis" },
        y: { type: "number", description: "degrees about the screen's y axis" },
        z: { type: "number", description: "degrees about the screen's z axis" },
        zoom: { type: "number", exclusiveMinimum: 0, description: "zoom relative to the fitted view (1 = fit)" },
      },
      additionalProperties: false,
    },
  },
  {
    name: "select_atoms",
    description: "Select atoms by 0-based site index",
    input_schema: {
      type: "object",
      properties: { indices: { type: "array", items: { type: "integer", minimum: 0 } }, mode: MODE },
      required: ["indices"],
      additionalProperties: false,
    },
  },
  {
    name: "select_by_element",
    description: "Select every atom of an element",
    input_schema: {
      type: "object",
      properties: { element: { type: "string", description: "element symbol, e.g. O" }, mode: MODE },
      required: ["element"],
      additionalProperties: false,
    },
  },
  {
    name: "clear_selection",
    description: "Deselect every atom",
    input_schema: { type: "object", properties: {}, additionalProperties: false },
  },
  {
    name: "set_atom_radius",
    description: "Set the drawn atom size: a fixed radius in Angstrom for every atom, or a scale of the van der Waals radii",
    input_schema: {
      type: "object",
      properties: {
        radius: { type: "number", exclusiveMinimum: 0, maximum: 5, description: "Angstrom, same for every atom" },
        scale: { type: "number", exclusiveMinimum: 0, maximum: 2, description: "factor on van der Waals radii (default 0.3)" },
      },
      additionalProperties: false,
    },
  },
  {
    name: "set_bond_color",
    description: 'Colour every bond: a CSS colour ("#888888", "gray"), or "element" for colours by element',
    input_schema: {
      type: "object",
      properties: { color: { type: "string" } },
      required: ["color"],
      additionalProperties: false,
    },
  },
];

const toolError = (code: string, message: string): Error => Object.assign(new Error(`${code}: ${message}`), { code });

let host: ViewerToolHost | undefined;

/** Connect the tools to a studio (done once by the studio at start-up). */
export const bindViewerTools = (h: ViewerToolHost | undefined): void => {
  host = h;
};

const need = (): ViewerToolHost => {
  if (!host) throw toolError("NO_VIEWER", "the 3D viewer is not running");
  return host;
};

const toggle =
  (key: "showAtoms" | "showBonds" | "showCell" | "showLabels" | "showForces", out: string): ViewerTool =>
  async (input = {}) => {
    const h = need();
    const visible = typeof input.visible === "boolean" ? input.visible : !h.view()[key];
    h.setView({ [key]: visible });
    return { [out]: visible };
  };

const applyMode = (current: number[], picked: number[], mode: unknown): number[] => {
  if (mode === undefined || mode === "replace") return picked;
  if (mode === "add") return [...new Set([...current, ...picked])].sort((a, b) => a - b);
  if (mode === "remove") {
    const drop = new Set(picked);
    return current.filter((i) => !drop.has(i));
  }
  throw toolError("INVALID_MODE", `mode must be replace, add or remove, got ${JSON.stringify(mode)}`);
};

const selectionResult = (h: ViewerToolHost): ViewerToolResult => {
  const sel = h.selection();
  return { selected_indices: sel, n_selected: sel.length };
};

const isColor = (c: string): boolean => {
  if (typeof CSS !== "undefined" && typeof CSS.supports === "function") return CSS.supports("color", c);
  return /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(c) || /^[a-z]+$/i.test(c);
};

export const viewerTools: Record<string, ViewerTool> = {
  toggle_atoms: toggle("showAtoms", "atoms_visible"),
  toggle_bonds: toggle("showBonds", "bonds_visible"),
  toggle_unit_cell: toggle("showCell", "unit_cell_visible"),
  toggle_labels: toggle("showLabels", "labels_visible"),
  toggle_force_vectors: async (input = {}) => {
    const h = need();
    const r = await toggle("showForces", "force_vectors_visible")(input);
    const s = h.structure();
    const n = s ? s.siteProperties.filter((p) => Array.isArray((p as { forces?: unknown }).forces)).length : 0;
    return { ...r, n_sites_with_forces: n };
  },
  reset_camera: async () => {
    need().resetCamera();
    return { camera: "reset" };
  },
  set_rotation: async (input = {}) => {
    const h = need();
    const deg = ["x", "y", "z"].map((k) => (input[k] === undefined ? 0 : Number(input[k]))) as [number, number, number];
    if (deg.some((d) => !Number.isFinite(d))) throw toolError("INVALID_ROTATION", "x, y and z must be numbers (degrees)");
    const zoom = input.zoom === undefined ? undefined : Number(input.zoom);
    if (zoom !== undefined && !(zoom > 0)) throw toolError("INVALID_ZOOM", "zoom must be a positive number");
    h.setRotation(deg, zoom);
    return { rotation: deg, ...(zoom !== undefined ? { zoom } : {}) };
  },
  select_atoms: async (input = {}) => {
    const h = need();
    const s = h.structure();
    const indices = input.indices;
    if (!Array.isArray(indices) || !indices.every((i) => Number.isInteger(i)))
      throw toolError("INVALID_INDEX", "indices must be an array of integers");
    const n = s?.length ?? 0;
    const bad = (indices as number[]).filter((i) => i < 0 || i >= n);
    if (bad.length) throw toolError("INVALID_INDEX", `indices out of range 0..${n - 1}: ${bad.join(", ")}`);
    h.setSelection(
      applyMode(
        h.selection(),
        [...new Set(indices as number[])].sort((a, b) => a - b),
        input.mode,
      ),
    );
    return selectionResult(h);
  },
  select_by_element: async (input = {}) => {
    const h = need();
    const el = input.element;
    if (!isElement(el)) throw toolError("INVALID_ELEMENT", `${JSON.stringify(el)} is not an element symbol`);
    const s = h.structure();
    const picked: number[] = [];
    s?.species.forEach((sp, i) => {
      if (sp.some((e) => e.element === el)) picked.push(i);
    });
    h.setSelection(applyMode(h.selection(), picked, input.mode));
    return selectionResult(h);
  },
  clear_selection: async () => {
    const h = need();
    h.setSelection([]);
    return selectionResult(h);
  },
  set_atom_radius: async (input = {}) => {
    const h = need();
    const { radius, scale } = input as { radius?: unknown; scale?: unknown };
    if (radius !== undefined) {
      if (typeof radius !== "number" || !(radius > 0 && radius <= 5))
        throw toolError("INVALID_RADIUS", "radius must be in (0, 5] Angstrom");
      h.setView({ atomRadius: radius });
      return { radius };
    }
    const sc = scale === undefined ? 0.3 : scale;
    if (typeof sc !== "number" || !(sc > 0 && sc <= 2)) throw toolError("INVALID_RADIUS", "scale must be in (0, 2]");
    h.setView({ atomRadius: null, atomScale: sc });
    return { scale: sc };
  },
  set_bond_color: async (input = {}) => {
    const h = need();
    const c = input.color;
    if (typeof c !== "string" || !c) throw toolError("INVALID_COLOR", "color must be a CSS colour or 'element'");
    if (c === "element" || c === "default") {
      h.setView({ bondColor: null });
      return { bond_color: "element" };
    }
    if (!isColor(c)) throw toolError("INVALID_COLOR", `${JSON.stringify(c)} is not a CSS colour`);
    h.setView({ bondColor: c });
    return { bond_color: c };
  },
};
