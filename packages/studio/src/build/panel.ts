/**
 * The Build panel: point defects, strain, doping, substitution, intercalation and nanoparticles.
 * Strain, doping and substitution run in the browser with the same core functions the service's
 * `/api/build` routes run (no round trip); defects, intercalation and nanoparticles call the
 * service (pymatgen-analysis-defects and ASE in its analysis worker). A result list is browsed
 * one structure at a time in the viewer; showing the first is one undoable step (undo returns to
 * the input), browsing replaces it in place, and "Export CIF" saves the one shown.
 */
import { dope, fromDict, initSymmetry, type Structure, strain, substitute, toDict, writeStructureFile } from "atomstudio-core";
import { postJson } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";

const KINDS = ["defect", "strain", "doping", "substitution", "intercalation", "nanoparticle"] as const;
type Kind = (typeof KINDS)[number];

const field = (id: string, label: string, input: HTMLElement) =>
  h("label", { class: "field" }, h("span", {}, label), Object.assign(input, { id }));
const text = (value: string, title: string) => h("input", { type: "text", value, title });
const num = (value: string, title: string, step = "any") => h("input", { type: "number", value, step, title });
const choice = (options: string[], title: string) => {
  const s = h("select", { title });
  for (const o of options) s.append(h("option", { value: o }, o));
  return s;
};

const FORMS: Record<Kind, () => HTMLElement[]> = {
  defect: () => [
    field("bp-defect-type", "Type", choice(["vacancy", "substitution", "interstitial"], "Kind of point defect")),
    field("bp-defect-site", "Site", num("-1", "Site index of this cell; -1: one per inequivalent site", "1")),
    field("bp-defect-element", "Element", text("", "New element (substitution, interstitial)")),
    field("bp-defect-supercell", "Supercell", text("1x1x1", "Enlarge first, e.g. 2x2x2")),
  ],
  strain: () => [
    field("bp-strain-type", "Type", choice(["uniaxial", "biaxial", "hydrostatic", "shear"], "Kind of strain")),
    field("bp-strain-axis", "Axis", choice(["a", "b", "c"], "Lattice axis (uniaxial)")),
    field("bp-strain-magnitude", "Strain %", num("2", "Strain in percent (shear: engineering shear)")),
    field("bp-strain-steps", "Steps", num("1", "1: one structure; more: a sweep from -|m| to +|m|", "1")),
    field("bp-strain-frame", "Frame", choice(["lattice", "cartesian"], "Lattice axes (default) or Cartesian x, y, z")),
  ],
  doping: () => [
    field("bp-doping-host", "Host", text("", "Element to replace")),
    field("bp-doping-dopant", "Dopant", text("", "Element to put in")),
    field("bp-doping-count", "Count", num("1", "Number of sites to replace", "1")),
    field("bp-doping-enumerate", "All distinct", h("input", { type: "checkbox", title: "Every symmetry-distinct arrangement" })),
    field("bp-doping-seed", "Seed", num("0", "Seed of the random draw", "1")),
  ],
  substitution: () => [
    field("bp-sub-sites", "Sites", text("0", "Site indices of the group, comma-separated")),
    field("bp-sub-elements", "Elements", text("", "Elements the group takes, comma-separated (one structure each)")),
  ],
  intercalation: () => [
    field("bp-int-species", "Species", text("Li", "Guest element")),
    field("bp-int-position", "Sites", choice(["auto", "tetrahedral", "octahedral"], "Which voids")),
    field("bp-int-count", "Count", num("1", "Number of guests", "1")),
  ],
  nanoparticle: () => [
    field("bp-np-element", "Element", text("Pt", "Metal")),
    field("bp-np-shape", "Shape", choice(["icosahedron", "octahedron", "decahedron", "wulff"], "Cluster shape")),
    field(
      "bp-np-size",
      "Size",
      num("3", "Shells (icosahedron), edge length (octahedron), p=q (decahedron) or atoms (wulff)", "1"),
    ),
  ],
};

export interface BuildPanel {
  /** The generated list and the index shown. */
  readonly results: { structures: Structure[]; labels: string[]; shown: number };
}

export const mountBuildPanel = (el: HTMLElement, studio: Studio): BuildPanel => {
  el.classList.add("build-panel");
  el.setAttribute("aria-labelledby", "bp-title");
  const kind = choice([...KINDS], "What to build") as HTMLSelectElement;
  kind.id = "bp-kind";
  const form = h("div", { class: "row fields wrap", id: "bp-form" });
  const run = h(
    "button",
    { type: "button", id: "bp-run", title: "Build and show the first result" },
    "Build",
  ) as HTMLButtonElement;
  const status = h("p", { id: "bp-status", role: "status" });
  const prev = h(
    "button",
    { type: "button", id: "bp-prev", title: "previous structure", disabled: "" },
    "◀",
  ) as HTMLButtonElement;
  const next = h("button", { type: "button", id: "bp-next", title: "next structure", disabled: "" }, "▶") as HTMLButtonElement;
  const label = h("span", { id: "bp-label" }, "");
  const exportBtn = h(
    "button",
    { type: "button", id: "bp-export", title: "Save the structure shown as CIF", disabled: "" },
    "Export CIF",
  ) as HTMLButtonElement;
  el.append(
    h("h2", { id: "bp-title" }, "Build structures"),
    h("div", { class: "row fields" }, h("label", { class: "field wide" }, h("span", {}, "Build"), kind), run),
    form,
    status,
    h("div", { class: "row", id: "bp-browse" }, prev, label, next, exportBtn),
  );
  const results = { structures: [] as Structure[], labels: [] as string[], shown: 0 };
  const showForm = () => form.replaceChildren(...FORMS[kind.value as Kind]());
  kind.addEventListener("change", showForm);
  showForm();

  const value = (id: string): string => (document.getElementById(id) as HTMLInputElement | null)?.value.trim() ?? "";
  const checked = (id: string): boolean => (document.getElementById(id) as HTMLInputElement | null)?.checked ?? false;
  const list = (id: string) =>
    value(id)
      .split(/[\s,]+/)
      .filter(Boolean);

  const callService = async (route: string, body: Record<string, unknown>) => {
    const r = await postJson(`/api/build/${route}`, body);
    const out = await r.json();
    if (!r.ok) throw new Error(out.error ?? `HTTP ${r.status}`);
    return out as { structures?: unknown[]; structure?: unknown; labels?: string[]; truncated?: boolean; message?: string };
  };

  const show = (k: number, record: boolean) => {
    results.shown = k;
    const s = results.structures[k];
    if (!s) return;
    studio.store.set(s, { name: results.labels[k] ?? "built", record, keepView: !record });
    label.textContent = `${k + 1} / ${results.structures.length}: ${results.labels[k] ?? ""}`;
    prev.disabled = k === 0;
    next.disabled = k >= results.structures.length - 1;
    exportBtn.disabled = false;
  };

  const build = async (): Promise<{ structures: Structure[]; labels: string[]; note: string }> => {
    const current = studio.store.structure;
    const k = kind.value as Kind;
    if (k !== "nanoparticle" && !current) throw new Error("Load a structure first");
    const host = current as Structure;
    if (k === "strain" || k === "doping" || k === "substitution") {
      await initSymmetry();
      const r =
        k === "strain"
          ? strain(host, {
              type: value("bp-strain-type"),
              axis: value("bp-strain-axis"),
              magnitude: Number(value("bp-strain-magnitude")) / 100,
              nSteps: Number(value("bp-strain-steps")),
              frame: value("bp-strain-frame"),
            })
          : k === "doping"
            ? dope(host, {
                dopant: value("bp-doping-dopant"),
                hostElement: value("bp-doping-host"),
                concentration: Number(value("bp-doping-count")),
                enumerate: checked("bp-doping-enumerate"),
                seed: Number(value("bp-doping-seed")),
                maxStructures: 100,
              })
            : substitute(
                host,
                [{ targetIndices: list("bp-sub-sites").map(Number), replacementElements: list("bp-sub-elements") }],
                100,
              );
      return { structures: r.structures, labels: r.labels, note: r.truncated ? " (cut at 100)" : "" };
    }
    const body: Record<string, unknown> =
      k === "defect"
        ? {
            structure: toDict(host),
            defect_type: value("bp-defect-type"),
            site_index: Number(value("bp-defect-site")),
            substitute_element: value("bp-defect-element"),
            supercell: value("bp-defect-supercell") || "1x1x1",
          }
        : k === "intercalation"
          ? {
              structure: toDict(host),
              species: value("bp-int-species"),
              position: value("bp-int-position"),
              n_intercalants: Number(value("bp-int-count")),
            }
          : (() => {
              const shape = value("bp-np-shape");
              const size = Number(value("bp-np-size"));
              const sized =
                {
                  icosahedron: { shells: size },
                  octahedron: { length: size },
                  decahedron: { p: size, q: size },
                  wulff: { size },
                }[shape] ?? {};
              return { element: value("bp-np-element"), shape, ...sized };
            })();
    const out = await callService(k, body);
    const dicts = out.structures ?? (out.structure ? [out.structure] : []);
    return {
      structures: dicts.map((d) => fromDict(d)),
      labels: out.labels ?? [out.message ?? k],
      note: out.truncated ? " (list cut by the cap)" : "",
    };
  };

  run.addEventListener("click", async () => {
    run.disabled = true;
    status.textContent = "Building…";
    status.classList.remove("field-error");
    try {
      const r = await build();
      results.structures = r.structures;
      results.labels = r.labels;
      status.textContent = `${r.structures.length} structure${r.structures.length === 1 ? "" : "s"}${r.note}`;
      if (r.structures.length > 0) show(0, true);
    } catch (e) {
      status.textContent = e instanceof Error ? e.message : String(e);
      status.classList.add("field-error");
    } finally {
      run.disabled = false;
    }
  });
  prev.addEventListener("click", () => show(results.shown - 1, false));
  next.addEventListener("click", () => show(results.shown + 1, false));
  exportBtn.addEventListener("click", () => {
    const s = results.structures[results.shown];
    if (!s) return;
    const blob = new Blob([writeStructureFile(s, "cif")], { type: "chemical/x-cif" });
    const a = h("a", { href: URL.createObjectURL(blob), download: `built_${results.shown + 1}.cif` });
    a.click();
    URL.revokeObjectURL(a.getAttribute("href") as string);
  });
  return { results };
};
