/**
 * The studio's core object: state (store), 3D viewer, viewer tools and the relay's command
 * handlers, plus `api`, the object other parts of the studio (the assistant panel) and tests
 * use. Editing goes through the isomorphic core, the same functions the service runs.
 */
import {
  type AnyStructureDict,
  fromDict,
  majorityElement,
  parseStructureFile,
  type Structure,
  toDict,
  writeStructureFile,
} from "atomstudio-core";
import { type CommandHandler, RelayClient, type RelayOptions } from "./relay.ts";
import { StudioStore } from "./store.ts";
import {
  bindViewerTools,
  type ViewerTool,
  type ViewerToolDefinition,
  viewerToolDefinitions,
  viewerTools,
} from "./viewer/tools.ts";
import { type CaptureOptions, type CaptureResult, MolViewer } from "./viewer/viewer3d.ts";

export interface SelectedAtom {
  index: number;
  element: string;
  xyz: number[];
  label: string;
}

export interface SelectionResult {
  selected_indices: number[];
  n_selected: number;
  selected_atoms: SelectedAtom[];
  has_selection: boolean;
}

export interface ScreenshotOptions extends Partial<CaptureOptions> {}

/** What the assistant panel (and anything else) may use. Also on `window.atomstudio`. */
export interface StudioApi {
  /** The current structure as a pymatgen dictionary, or null. */
  getStructure(): AnyStructureDict | null;
  /** Replace the current structure (undoable). `keepView`: keep the camera (an edit of the same structure). */
  setStructure(dict: unknown, opts?: { name?: string; keepView?: boolean }): void;
  /** Read a structure file (any format the core reads) and show it. */
  openFile(content: string, filename?: string): void;
  getSelection(): SelectionResult;
  setSelection(indices: number[]): void;
  /** Client-only viewer tools: `await viewerTools[name](input)`. */
  viewerTools: Record<string, ViewerTool>;
  viewerToolDefinitions: ViewerToolDefinition[];
  /** Render the view; defaults: the viewer's current size, png. */
  takeScreenshot(opts?: ScreenshotOptions): Promise<CaptureResult & { size_bytes: number }>;
  undo(): boolean;
  redo(): boolean;
  /** Listen to structure and selection changes; returns the unsubscribe function. */
  onChange(fn: (kind: "structure" | "selection") => void): () => void;
  /** This studio's relay client id (null until connected). */
  clientId(): string | null;
}

const elementOf = (s: Structure, i: number): string => majorityElement(s.species[i]);

export const selectionOf = (s: Structure | null, indices: readonly number[]): SelectionResult => {
  const atoms = s
    ? indices.map((i) => ({
        index: i,
        element: elementOf(s, i),
        xyz: [s.cart[3 * i] as number, s.cart[3 * i + 1] as number, s.cart[3 * i + 2] as number],
        label: s.labels[i] as string,
      }))
    : [];
  return { selected_indices: [...indices], n_selected: indices.length, selected_atoms: atoms, has_selection: indices.length > 0 };
};

const base64Bytes = (b64: string): number =>
  Math.floor((b64.length * 3) / 4) - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);

export class Studio {
  readonly store = new StudioStore();
  readonly viewer: MolViewer;
  readonly relay: RelayClient;
  readonly api: StudioApi;

  constructor(viewerEl: HTMLElement, relayOpts: RelayOptions = {}) {
    this.viewer = new MolViewer(viewerEl);
    this.viewer.onPick = (site, ev) => {
      const sel = this.store.selection;
      if (ev.shiftKey || ev.ctrlKey || ev.metaKey)
        this.store.select(sel.includes(site) ? sel.filter((i) => i !== site) : [...sel, site]);
      else this.store.select(sel.length === 1 && sel[0] === site ? [] : [site]);
    };
    this.store.subscribe((c) => {
      if (c.kind === "structure") this.viewer.load(this.store.structure, { keepView: c.keepView });
      else this.viewer.setSelection(this.store.selection);
    });
    bindViewerTools({
      view: () => this.viewer.options,
      setView: (changes) => this.viewer.setOptions(changes),
      resetCamera: () => this.viewer.resetCamera(),
      setRotation: (deg, zoom) => this.viewer.setRotation(deg, zoom),
      selection: () => this.store.selection,
      setSelection: (sites) => this.store.select(sites),
      structure: () => this.store.structure,
    });
    const handlers: Record<string, CommandHandler> = {
      screenshot: (p) => this.screenshot(p as Partial<CaptureOptions>),
      get_structure: () => ({ structure: this.store.structure ? toDict(this.store.structure) : null, name: this.store.name }),
      get_selection: () => selectionOf(this.store.structure, this.store.selection),
      viewer_tool: async (p) => {
        const tool = viewerTools[String(p.name)];
        if (!tool) throw Object.assign(new Error(`Unknown viewer tool ${String(p.name)}`), { code: "UNKNOWN_TOOL" });
        return tool((p.input ?? {}) as Record<string, unknown>);
      },
    };
    this.relay = new RelayClient(handlers, relayOpts);
    this.api = {
      getStructure: () => (this.store.structure ? toDict(this.store.structure) : null),
      setStructure: (dict, opts = {}) => this.setStructure(fromDict(dict), opts),
      openFile: (content, filename) => this.openFile(content, filename),
      getSelection: () => selectionOf(this.store.structure, this.store.selection),
      setSelection: (indices) => this.store.select(indices),
      viewerTools,
      viewerToolDefinitions,
      takeScreenshot: async (opts = {}) => {
        const r = this.screenshot(opts);
        return { ...r, size_bytes: base64Bytes(r.image) };
      },
      undo: () => this.store.undo(),
      redo: () => this.store.redo(),
      onChange: (fn) => this.store.subscribe((c) => fn(c.kind)),
      clientId: () => this.relay.clientId,
    };
  }

  setStructure(s: Structure | null, opts: { name?: string; keepView?: boolean } = {}): void {
    this.store.set(s, opts);
  }

  /** Parse a file with the core's readers and show its (first) structure. */
  openFile(content: string, filename?: string): { format: string; frames: number } {
    const parsed = parseStructureFile(content, filename ? { filename } : {});
    this.setStructure(parsed.structure, { name: filename ?? parsed.format });
    return { format: parsed.format, frames: parsed.frames?.length ?? 1 };
  }

  exportFile(format: string): { text: string; filename: string } {
    const s = this.store.structure;
    if (!s) throw new Error("Nothing to export: no structure loaded");
    const text = format === "json" ? JSON.stringify(toDict(s), null, 1) : writeStructureFile(s, format);
    const base = (this.store.name || "structure").replace(/\.[^.]*$/, "").replace(/[^\w.-]+/g, "_") || "structure";
    const ext = { poscar: "vasp", extxyz: "extxyz", xyz: "xyz", cif: "cif", pdb: "pdb", json: "json" }[format] ?? format;
    return { text, filename: format === "poscar" ? `POSCAR_${base}.vasp` : `${base}.${ext}` };
  }

  screenshot(p: Partial<CaptureOptions>): CaptureResult {
    const canvas = this.viewer.viewer.getCanvas();
    const dpr = window.devicePixelRatio || 1;
    const width = p.width ?? Math.round(canvas.width || this.viewer.container.clientWidth * dpr);
    const height = p.height ?? Math.round(canvas.height || this.viewer.container.clientHeight * dpr);
    const format = (p.format ?? "png") as CaptureOptions["format"];
    if (!["png", "jpeg", "webp"].includes(format))
      throw Object.assign(new Error(`Unsupported format ${format}`), { code: "INVALID_FORMAT" });
    return this.viewer.capture({
      width,
      height,
      format,
      quality: p.quality ?? 0.92,
      transparent: !!p.transparent,
      camera: p.camera ?? null,
    });
  }
}
