/**
 * The studio page: wires the toolbar and panels (index.html) to the studio object. Plain
 * TypeScript and DOM (see README.md for why no framework).
 */
import * as core from "atomstudio-core";
import { addAtom, deleteAtoms, fromDict, merge, moveAtoms, replaceAtom, type Structure, slab, supercell } from "atomstudio-core";
import { setStudioApi } from "./api.ts";
import { ensureToken } from "./auth.ts";
import { EXAMPLES, exampleById } from "./examples.ts";
import { mountOptimizePanel } from "./optimize/panel.ts";
import { Studio } from "./studio.ts";
import { viewerToolDefinitions, viewerTools } from "./viewer/tools.ts";

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;
const num = (id: string): number => Number($<HTMLInputElement>(id).value);
const vec = (p: string): [number, number, number] => [num(`${p}-x`), num(`${p}-y`), num(`${p}-z`)];

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
document.addEventListener("keydown", (e) => {
  if ((e.target as HTMLElement).closest("input, textarea, [contenteditable], #assistant-panel")) return;
  const mod = e.ctrlKey || e.metaKey;
  if (mod && e.key.toLowerCase() === "z") {
    e.preventDefault();
    if (e.shiftKey) store.redo();
    else store.undo();
  } else if (mod && e.key.toLowerCase() === "y") {
    e.preventDefault();
    store.redo();
  } else if ((e.key === "Delete" || e.key === "Backspace") && store.selection.length) {
    e.preventDefault();
    $("btn-delete").click();
  } else if (e.key === "Escape") store.select([]);
});

// ---- selection --------------------------------------------------------------------------------
let boxMode = false;
$("btn-box").onclick = () => {
  boxMode = !boxMode;
  $("btn-box").setAttribute("aria-pressed", String(boxMode));
};
$("btn-select-all").onclick = () => store.select([...Array(store.structure?.length ?? 0).keys()]);
$("btn-clear-sel").onclick = () => store.select([]);
$("btn-sel-element").onclick = () =>
  void viewerTools
    .select_by_element?.({ element: $<HTMLInputElement>("sel-element").value.trim() })
    .catch((e: Error) => status(e.message, true));

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
$("btn-add").onclick = () =>
  edit("Add atom", (s) => addAtom(s, $<HTMLInputElement>("add-element").value.trim(), vec("add")).structure);
$("btn-delete").onclick = () => {
  const sel = needSelection();
  if (sel) edit("Delete", (s) => deleteAtoms(s, sel).structure);
};
$("btn-replace").onclick = () => {
  const sel = needSelection();
  const el = $<HTMLInputElement>("replace-element").value.trim();
  if (sel) edit("Replace", (s) => sel.reduce((acc, i) => replaceAtom(acc, i, el).structure, s));
};
$("btn-move").onclick = () => {
  const sel = needSelection();
  if (sel) edit("Move", (s) => moveAtoms(s, sel, vec("move")).structure);
};
$("btn-supercell").onclick = () =>
  edit("Supercell", (s) => supercell(s, [num("sc-a"), num("sc-b"), num("sc-c")]), { keepView: false });
$("btn-merge").onclick = () => {
  const ex = exampleById(mergeSource.value);
  if (ex) edit("Merge", (s) => merge(s, fromDict(ex.dict), vec("merge"), $<HTMLSelectElement>("merge-mode").value));
};

// Slab (the core's SlabGenerator semantics): thickness with no fractional part = layers, else Angstrom.
$("slab-row").hidden = false;
$("btn-slab").onclick = () =>
  edit(
    "Slab",
    (s) =>
      slab(s, {
        miller: [num("slab-h"), num("slab-k"), num("slab-l")],
        thickness: num("slab-thickness"),
        vacuum: num("slab-vacuum"),
      }).structure,
    { keepView: false },
  );

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

// ---- info lines ---------------------------------------------------------------------------------
const renderInfo = (): void => {
  const s = store.structure;
  const info = $("structure-info");
  if (!s) {
    info.textContent = "No structure. Open a file, paste one, drop one here or pick an example.";
  } else {
    const lines = [`${store.name}`, `${core.structureFormula(s)} · ${s.length} atoms`];
    if (s.lattice) {
      const [a, b, c] = s.lattice.lengths;
      const [al, be, ga] = s.lattice.angles;
      lines.push(
        `a ${a.toFixed(3)} b ${b.toFixed(3)} c ${c.toFixed(3)} Å`,
        `α ${al.toFixed(1)} β ${be.toFixed(1)} γ ${ga.toFixed(1)}°`,
      );
    } else lines.push("molecule (no lattice)");
    info.textContent = lines.join("\n");
  }
  $<HTMLButtonElement>("btn-undo").disabled = !store.canUndo;
  $<HTMLButtonElement>("btn-redo").disabled = !store.canRedo;
};
const renderSelection = (): void => {
  const s = store.structure;
  const sel = store.selection;
  $("selection-info").textContent = sel.length
    ? `${sel.length} selected: ${sel
        .slice(0, 12)
        .map((i) => `${s?.species[i]?.[0]?.element ?? "?"}${i}`)
        .join(", ")}${sel.length > 12 ? ", …" : ""}`
    : "Nothing selected";
};
store.subscribe((c) => (c.kind === "structure" ? renderInfo() : renderSelection()));

// ---- start ------------------------------------------------------------------------------------
window.addEventListener("resize", () => viewer.resize());
for (const ev of ["pointerdown", "keydown", "focus"]) window.addEventListener(ev, () => studio.relay.activity(), true);

window.atomstudio = studio.api;
// For browser tests and debugging only: the studio object itself (viewer, scene, store).
(window as unknown as { __atomstudio: Studio }).__atomstudio = studio;
setStudioApi(studio.api);

mountOptimizePanel($("optimize-panel"), studio);

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
