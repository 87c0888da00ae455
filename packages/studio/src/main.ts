/**
 * The studio page: wires the toolbar and panels (index.html) to the studio object. Plain
 * TypeScript and DOM (see README.md for why no framework).
 */
import { addAtom, deleteAtoms, fromDict, merge, moveAtoms, replaceAtom, type Structure, slab, supercell } from "atomstudio-core";
import { mountAdsorptionPanel } from "./adsorption/panel.ts";
import { mountAnalysisPanel } from "./analysis/panel.ts";
import { setStudioApi } from "./api.ts";
import { ensureToken } from "./auth.ts";
import { mountBuildPanel } from "./build/panel.ts";
import { EXAMPLES, exampleById } from "./examples.ts";
import { mountHeterostructurePanel } from "./heterostructure/panel.ts";
import { mountOptimizePanel } from "./optimize/panel.ts";
import { Studio } from "./studio.ts";
import { mountTrajectoryPanel } from "./trajectory/panel.ts";
import { type ElementStyle, mountElementPicker, renderLegend } from "./ui/elements.ts";
import { clearErrors, invalid, readElement, readNumber, readVector } from "./ui/fields.ts";
import { mountMeasureTool } from "./ui/measure.ts";
import { bindShortcuts, renderShortcutHelp, shortcutTable } from "./ui/shortcuts.ts";
import { renderSummary } from "./ui/summary.ts";
import { applyTheme, initialTheme, type Theme } from "./ui/theme.ts";
import { viewerToolDefinitions, viewerTools } from "./viewer/tools.ts";
import { defaultElementColor } from "./viewer/viewer3d.ts";
import { mountWorkflowsPanel } from "./workflows/panel.ts";

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

const status = (text: string, error = false): void => {
  const el = $("status");
  el.textContent = text;
  el.classList.toggle("error", error);
};

const params = new URLSearchParams(location.search);
const studio = new Studio($("viewer"), {
  ...(params.get("client_id") ? { clientId: params.get("client_id") as string } : {}),
  onStatus: (s, id) => {
    $("toolbar").dataset.relay = s;
    document.body.dataset.relay = s;
    if (s === "connected") document.body.dataset.clientId = id ?? "";
  },
});
const { store, viewer } = studio;

/** Run an edit through the core; errors (the core's codes) go to the status line. */
const edit = (what: string, fn: (s: Structure) => Structure | null, opts: { keepView?: boolean } = { keepView: true }): void => {
  const s = store.structure;
  if (!s) {
    status("No structure loaded", true);
    return;
  }
  try {
    const out = fn(s);
    if (out) {
      studio.setStructure(out, opts);
      status(`${what}: ${out.length} atoms`);
    }
  } catch (e) {
    status(`${what} failed: ${(e as Error).message}`, true);
  }
};

const needSelection = (): number[] | null => {
  if (!store.selection.length) {
    status("Select atoms first", true);
    return null;
  }
  return store.selection;
};

// ---- files ------------------------------------------------------------------------------------
const openText = (text: string, filename?: string): void => {
  try {
    const r = studio.openFile(text, filename);
    status(`Opened ${filename ?? "pasted text"} (${r.format}${r.frames > 1 ? `, first of ${r.frames} frames` : ""})`);
  } catch (e) {
    status(`Could not open ${filename ?? "pasted text"}: ${(e as Error).message}`, true);
  }
};

const openFiles = async (files: FileList | null | undefined): Promise<void> => {
  const f = files?.[0];
  // Several frames (or a compressed file): the trajectory panel takes it and plays it.
  if (f && (await trajectories.offer(f))) return status(`Opened ${f.name} as a trajectory`);
  if (f) openText(await f.text(), f.name);
};

$("btn-open").onclick = () => $<HTMLInputElement>("file-input").click();
$<HTMLInputElement>("file-input").onchange = (e) => void openFiles((e.target as HTMLInputElement).files);

const examples = $<HTMLSelectElement>("examples");
const mergeSource = $<HTMLSelectElement>("merge-source");
for (const ex of EXAMPLES) {
  examples.add(new Option(ex.name, ex.id));
  mergeSource.add(new Option(`incoming: ${ex.name}`, ex.id));
}
examples.onchange = () => {
  const ex = exampleById(examples.value);
  if (ex) {
    studio.setStructure(fromDict(ex.dict), { name: ex.name });
    status(`Example: ${ex.name}`);
  }
  examples.value = "";
};

$("btn-paste").onclick = () => $<HTMLDialogElement>("paste-dialog").showModal();
$<HTMLDialogElement>("paste-dialog").onclose = () => {
  const d = $<HTMLDialogElement>("paste-dialog");
  const text = $<HTMLTextAreaElement>("paste-text").value;
  if (d.returnValue === "ok" && text.trim()) openText(text, $<HTMLInputElement>("paste-name").value.trim() || undefined);
};
// Pasting a file's text anywhere outside an input opens it.
document.addEventListener("paste", (e) => {
  const t = e.target as HTMLElement;
  if (t.closest("input, textarea, [contenteditable], #assistant-panel")) return;
  const text = e.clipboardData?.getData("text");
  if (text?.trim()) openText(text);
});

const wrap = $("viewer-wrap");
wrap.addEventListener("dragover", (e) => {
  e.preventDefault();
  $("drop-hint").hidden = false;
});
wrap.addEventListener("dragleave", () => {
  $("drop-hint").hidden = true;
});
wrap.addEventListener("drop", (e) => {
  e.preventDefault();
  $("drop-hint").hidden = true;
  void openFiles(e.dataTransfer?.files);
});

$("btn-export").onclick = () => {
  try {
    const { text, filename } = studio.exportFile($<HTMLSelectElement>("export-format").value);
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
    a.download = filename;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    status(`Exported ${filename}`);
  } catch (e) {
    status((e as Error).message, true);
  }
};

// ---- undo / redo ------------------------------------------------------------------------------
$("btn-undo").onclick = () => store.undo() || status("Nothing to undo");
$("btn-redo").onclick = () => store.redo() || status("Nothing to redo");
// ---- selection --------------------------------------------------------------------------------
let boxMode = false;
$("btn-box").onclick = () => {
  boxMode = !boxMode;
  $("btn-box").setAttribute("aria-pressed", String(boxMode));
};
$("btn-select-all").onclick = () => store.select([...Array(store.structure?.length ?? 0).keys()]);
$("btn-clear-sel").onclick = () => store.select([]);
$("btn-sel-element").onclick = () => {
  clearErrors("sel-element");
  const element = readElement("sel-element");
  if (element) void viewerTools.select_by_element?.({ element }).catch((e: Error) => invalid("sel-element", e.message));
};

// Box selection: Alt-drag, or any drag in box mode. Shift adds to the selection.
let boxStart: { x: number; y: number; pageX: number; pageY: number; add: boolean } | null = null;
wrap.addEventListener(
  "pointerdown",
  (e) => {
    if (!(boxMode || e.altKey) || e.button !== 0) return;
    e.preventDefault();
    e.stopPropagation();
    const r = wrap.getBoundingClientRect();
    boxStart = { x: e.clientX - r.left, y: e.clientY - r.top, pageX: e.pageX, pageY: e.pageY, add: e.shiftKey };
    wrap.setPointerCapture(e.pointerId);
  },
  { capture: true },
);
wrap.addEventListener(
  "pointermove",
  (e) => {
    if (!boxStart) return;
    e.stopPropagation();
    const r = wrap.getBoundingClientRect();
    const [x, y] = [e.clientX - r.left, e.clientY - r.top];
    const box = $("box");
    box.hidden = false;
    Object.assign(box.style, {
      left: `${Math.min(x, boxStart.x)}px`,
      top: `${Math.min(y, boxStart.y)}px`,
      width: `${Math.abs(x - boxStart.x)}px`,
      height: `${Math.abs(y - boxStart.y)}px`,
    });
  },
  { capture: true },
);
wrap.addEventListener(
  "pointerup",
  (e) => {
    if (!boxStart) return;
    e.stopPropagation();
    const sites = viewer.sitesInRect(boxStart.pageX, boxStart.pageY, e.pageX, e.pageY);
    store.select(boxStart.add ? [...store.selection, ...sites] : sites);
    boxStart = null;
    $("box").hidden = true;
  },
  { capture: true },
);

// ---- editing (the core's functions, as the service runs them) ----------------------------------
// Each form reads its labelled fields first; a bad value is explained beside its field and nothing runs.
$("btn-add").onclick = () => {
  clearErrors("add-element", "add-x", "add-y", "add-z");
  const el = readElement("add-element");
  let at = readVector("add");
  if (at && $<HTMLInputElement>("add-relative").checked) {
    const s = store.structure;
    const [i] = store.selection;
    if (!s || store.selection.length !== 1 || i === undefined)
      at = invalid("add-x", "Relative placement: select exactly one atom");
    else at = [at[0] + (s.cart[3 * i] as number), at[1] + (s.cart[3 * i + 1] as number), at[2] + (s.cart[3 * i + 2] as number)];
  }
  if (el && at) edit("Add atom", (s) => addAtom(s, el, at).structure);
};
const deleteSelection = (): boolean => {
  const sel = needSelection();
  if (sel) edit("Delete", (s) => deleteAtoms(s, sel).structure);
  return !!sel;
};
$("btn-delete").onclick = () => void deleteSelection();
$("btn-replace").onclick = () => {
  clearErrors("replace-element");
  const el = readElement("replace-element");
  const sel = el && needSelection();
  if (el && sel) edit("Replace", (s) => sel.reduce((acc, i) => replaceAtom(acc, i, el).structure, s));
};
$("btn-move").onclick = () => {
  clearErrors("move-x", "move-y", "move-z");
  const by = readVector("move");
  const sel = by && needSelection();
  if (by && sel) edit("Move", (s) => moveAtoms(s, sel, by).structure);
};
$("btn-supercell").onclick = () => {
  clearErrors("sc-a", "sc-b", "sc-c");
  const n = ["sc-a", "sc-b", "sc-c"].map((id) => readNumber(id, { integer: true, min: 1, max: 10 }));
  if (n.every((x) => x !== null)) edit("Supercell", (s) => supercell(s, n as number[]), { keepView: false });
};
$("btn-merge").onclick = () => {
  clearErrors("merge-x", "merge-y", "merge-z");
  const ex = exampleById(mergeSource.value);
  const at = readVector("merge");
  if (ex && at) edit("Merge", (s) => merge(s, fromDict(ex.dict), at, $<HTMLSelectElement>("merge-mode").value));
};

// Slab (the core's SlabGenerator semantics): thickness with no fractional part = layers, else Angstrom.
$("slab-row").hidden = false;
$("btn-slab").onclick = () => {
  const ids = ["slab-h", "slab-k", "slab-l", "slab-thickness", "slab-vacuum"];
  clearErrors(...ids);
  const miller = ["slab-h", "slab-k", "slab-l"].map((id) => readNumber(id, { integer: true, min: -20, max: 20 }));
  const thickness = readNumber("slab-thickness", { min: 0 });
  const vacuum = readNumber("slab-vacuum", { min: 0 });
  if (miller.every((x) => x === 0)) invalid("slab-h", "Miller index: h, k and l cannot all be 0");
  if (miller.some((x) => x === null) || miller.every((x) => x === 0) || thickness === null || vacuum === null) return;
  if (thickness === 0) {
    invalid("slab-thickness", "Thickness: more than 0 (layers if whole, else Å)");
    return;
  }
  edit("Slab", (s) => slab(s, { miller: miller as number[], thickness, vacuum }).structure, { keepView: false });
};

// ---- view tools (the same registry the assistant calls) -----------------------------------------
const LABELS: Record<string, string> = {
  toggle_atoms: "Atoms",
  toggle_bonds: "Bonds",
  toggle_unit_cell: "Cell",
  toggle_labels: "Labels",
  toggle_force_vectors: "Forces",
  reset_camera: "Reset view",
};
for (const def of viewerToolDefinitions) {
  const label = LABELS[def.name];
  if (!label) continue;
  const b = document.createElement("button");
  b.textContent = label;
  b.title = def.description;
  b.dataset.tool = def.name;
  b.onclick = () => void viewerTools[def.name]?.({}).catch((e: Error) => status(e.message, true));
  $("view-tools").append(b);
}
$<HTMLInputElement>("atom-scale").oninput = (e) =>
  void viewerTools.set_atom_radius?.({ scale: Number((e.target as HTMLInputElement).value) });
$<HTMLInputElement>("bond-color").oninput = (e) =>
  void viewerTools.set_bond_color?.({ color: (e.target as HTMLInputElement).value });

// ---- summary, legend, measurements ------------------------------------------------------------
const elementStyles = new Map<string, ElementStyle>();
const renderInfo = (): void => {
  const s = store.structure;
  renderSummary($("structure-summary"), $("summary-empty"), s, store.name);
  renderLegend($("element-legend").querySelector("tbody") as HTMLElement, s, defaultElementColor, elementStyles, () =>
    viewer.setElementStyles(elementStyles),
  );
  $<HTMLButtonElement>("btn-undo").disabled = !store.canUndo;
  $<HTMLButtonElement>("btn-redo").disabled = !store.canRedo;
};
const measureKind = (): 2 | 3 | 4 =>
  Number(document.querySelector<HTMLInputElement>('input[name="measure-kind"]:checked')?.value ?? 2) as 2 | 3 | 4;
const measureTool = mountMeasureTool({
  structure: () => store.structure,
  kind: measureKind,
  list: $<HTMLOListElement>("measurements"),
  hint: $("measure-hint"),
  button: $<HTMLButtonElement>("btn-measure"),
  draw: (overlays, picked) => viewer.setOverlays(overlays, picked),
});
$("btn-measure").onclick = () => measureTool.setActive(!measureTool.active);
$("btn-measure-clear").onclick = () => measureTool.clear();
for (const r of Array.from(document.querySelectorAll<HTMLInputElement>('input[name="measure-kind"]')))
  r.onchange = () => measureTool.setActive(measureTool.active);
// In measure mode a click picks an atom for the measurement instead of selecting it.
const selectOnPick = viewer.onPick;
viewer.onPick = (site, ev) => (measureTool.active ? measureTool.pick(site) : selectOnPick?.(site, ev));

// ---- element picker, theme, help -----------------------------------------------------------------
const openPicker = mountElementPicker($<HTMLDialogElement>("element-picker"), $("periodic-table"));
for (const b of Array.from(document.querySelectorAll<HTMLButtonElement>("button.pick-element")))
  b.onclick = () => openPicker(b.dataset.target as string);

let theme: Theme = initialTheme();
const setTheme = (t: Theme): void => {
  theme = t;
  applyTheme(t, $<HTMLButtonElement>("btn-theme"), (background) => viewer.setOptions({ background }));
};
$("btn-theme").onclick = () => setTheme(theme === "dark" ? "light" : "dark");

const shortcuts = shortcutTable({
  undo: () => store.undo() || status("Nothing to undo"),
  redo: () => store.redo() || status("Nothing to redo"),
  deleteSelection: () => store.selection.length > 0 && deleteSelection(),
  selectAll: () => store.select([...Array(store.structure?.length ?? 0).keys()]),
  escape: () => {
    if (measureTool.active) measureTool.setActive(false);
    else store.select([]);
  },
  toggleMeasure: () => measureTool.setActive(!measureTool.active),
  help: () => $<HTMLDialogElement>("help-dialog").showModal(),
});
bindShortcuts(shortcuts);
renderShortcutHelp($("shortcut-table").querySelector("tbody") as HTMLElement, shortcuts);
$("btn-help").onclick = () => $<HTMLDialogElement>("help-dialog").showModal();

const renderSelection = (): void => {
  const s = store.structure;
  const sel = store.selection;
  $("selection-info").textContent = sel.length
    ? `${sel.length} selected: ${sel
        .slice(0, 12)
        .map((i) => `${s?.species[i]?.[0]?.element ?? "?"}${i}`)
        .join(", ")}${sel.length > 12 ? ", …" : ""}`
    : "Nothing selected";
  const [only] = sel;
  if (s && sel.length === 1 && only !== undefined)
    $("selection-info").textContent += ` at (${[0, 1, 2].map((c) => (s.cart[3 * only + c] as number).toFixed(3)).join(", ")}) Å`;
};
store.subscribe((c) => {
  if (c.kind === "selection") return renderSelection();
  // An edit keeps the measurements (re-measured); another structure starts without them.
  if (c.keepView) measureTool.refresh();
  else measureTool.clear();
  renderInfo();
});

// ---- start ------------------------------------------------------------------------------------
window.addEventListener("resize", () => viewer.resize());
for (const ev of ["pointerdown", "keydown", "focus"]) window.addEventListener(ev, () => studio.relay.activity(), true);

window.atomstudio = studio.api;
// For browser tests and debugging only: the studio object itself (viewer, scene, store).
(window as unknown as { __atomstudio: Studio }).__atomstudio = studio;
setStudioApi(studio.api);

mountOptimizePanel($("optimize-panel"), studio);
mountAnalysisPanel($("analysis-panel"), studio);
const trajectories = mountTrajectoryPanel($("trajectory-panel"), studio);
// For browser tests and debugging only, like __atomstudio: the Workflows panel (its graph, load, attach).
(window as unknown as { __atomstudioWorkflows: unknown }).__atomstudioWorkflows = mountWorkflowsPanel(
  $("workflows-panel"),
  studio,
);
mountHeterostructurePanel($("heterostructure-panel"), studio);
mountAdsorptionPanel($("adsorption-panel"), studio);
mountBuildPanel($("build-panel"), studio);
// For browser tests and the playback benchmark: the trajectory panel (its frames and stepping).
(window as unknown as { __atomstudioTrajectory: typeof trajectories }).__atomstudioTrajectory = trajectories;
setTheme(theme);

// The assistant panel, when that module exists: src/assistant/index.ts exporting mountAssistant(el, api).
const assistant = import.meta.glob<{ mountAssistant?: (el: HTMLElement, api: typeof studio.api) => void }>(
  "./assistant/index.ts",
);
for (const load of Object.values(assistant)) void load().then((m) => m.mountAssistant?.($("assistant-panel"), studio.api));

const start = async (): Promise<void> => {
  const initial = params.get("example") ?? "nacl";
  const ex = exampleById(initial);
  if (ex) store.set(fromDict(ex.dict), { name: ex.name, record: false });
  else renderInfo();
  renderSelection();
  await ensureToken().catch(() => {});
  studio.relay.connect();
  document.body.dataset.ready = "true";
};
void start();
