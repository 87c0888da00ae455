/**
 * The Build panel: point defects, strain, doping, substitution, random substitution,
 * intercalation and nanoparticles. Strain, doping and both substitutions run in the browser with
 * the same core functions the service's `/api/build` routes run (no round trip; a seed gives the
 * service's answer); defects, intercalation and nanoparticles call the service
 * (pymatgen-analysis-defects and ASE in its analysis worker). Every request field of those routes
 * has a control here (the cell repeat of `/api/build/supercell` is the Supercell tool). A result list is browsed
 * one structure at a time in the viewer; showing the first is one undoable step (undo returns to
 * the input), browsing replaces it in place, and "Export CIF" saves the one shown.
 */
import {
  dope,
  fromDict,
  initSymmetry,
  randomSubstitute,
  type Structure,
  strain,
  substitute,
  toDict,
  writeStructureFile,
} from "atomstudio-core";
import { postJson } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";

const KINDS = ["defect", "strain", "doping", "substitution", "random-substitution", "intercalation", "nanoparticle"] as const;
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
const checkbox = (on: boolean, title: string) => h("input", { type: "checkbox", title, ...(on ? { checked: "" } : {}) });
/** Options most builds leave at their defaults, folded away. */
const more = (...fields: HTMLElement[]) =>
  h("details", { class: "bp-more" }, h("summary", {}, "More options"), h("div", { class: "row fields wrap" }, ...fields));
/** Most structures one list build keeps in the browser (the service's own default cap). */
const MAX_LIST = 100;
const maxField = (id: string) =>
  field(id, "Max", num(String(MAX_LIST), `Keep at most this many structures (1 to ${MAX_LIST})`, "1"));

const FORMS: Record<Kind, () => HTMLElement[]> = {
  defect: () => [
    field("bp-defect-type", "Type", choice(["vacancy", "substitution", "interstitial"], "Kind of point defect")),
    field("bp-defect-site", "Site", num("-1", "Site index of this cell; -1: one per inequivalent site", "1")),
    field("bp-defect-element", "Element", text("", "New element (substitution, interstitial)")),
    field("bp-defect-supercell", "Supercell", text("1x1x1", "Enlarge first, e.g. 2x2x2")),
    field("bp-defect-min-distance", "Min dist Å", num("0.9", "Interstitial: distance kept from every host atom (0.5 to 3 Å)")),
  ],
  strain: () => [
    field("bp-strain-type", "Type", choice(["uniaxial", "biaxial", "hydrostatic", "shear"], "Kind of strain")),
    field("bp-strain-axis", "Axis", choice(["a", "b", "c"], "Lattice axis (uniaxial)")),
    field("bp-strain-magnitude", "Strain %", num("2", "Strain in percent (shear: engineering shear)")),
    field("bp-strain-steps", "Steps", num("1", "1: one structure; more: a sweep from -|m| to +|m|", "1")),
    field("bp-strain-frame", "Frame", choice(["lattice", "cartesian"], "Lattice axes (default) or Cartesian x, y, z")),
    field(
      "bp-strain-sweep",
      "Sweep",
      choice(["symmetric", "one_sided"], "symmetric: -|m| … +|m|; one_sided: m/n, 2m/n … m (the sign kept)"),
    ),
    field("bp-strain-plane", "Plane", choice(["xy", "yz", "xz"], "Shear plane (shear only)")),
  ],
  doping: () => [
    field("bp-doping-host", "Host", text("", "Element to replace")),
    field("bp-doping-dopant", "Dopant", text("", "Element to put in")),
    field("bp-doping-count", "Count", num("1", "Number of sites to replace", "1")),
    field("bp-doping-enumerate", "All distinct", h("input", { type: "checkbox", title: "Every symmetry-distinct arrangement" })),
    field("bp-doping-seed", "Seed", num("0", "Seed of the random draw", "1")),
    field("bp-doping-sites", "Sites", text("", "Candidate site indices instead of the host, comma-separated")),
    maxField("bp-doping-max"),
  ],
  substitution: () => [
    field("bp-sub-sites", "Sites", text("0", "Site indices of each group, comma-separated; groups separated by ;")),
    field(
      "bp-sub-elements",
      "Elements",
      text("", "Elements each group takes, comma-separated (one structure each); groups separated by ;"),
    ),
    maxField("bp-sub-max"),
  ],
  "random-substitution": () => [
    field("bp-rs-host", "Host", text("", "Element to replace (its sites are the candidates)")),
    field("bp-rs-dopant", "Dopant", text("", "Element to put in")),
    field("bp-rs-count", "Count", num("1", "Number of host sites it replaces in each structure", "1")),
    field("bp-rs-samples", "Structures", num("10", `Number of random arrangements (1 to ${MAX_LIST})`, "1")),
    field("bp-rs-seed", "Seed", num("0", "Seed of the draws: the same seed gives the same structures", "1")),
    field("bp-rs-dedup", "Distinct", checkbox(true, "Skip arrangements equal by symmetry to one already drawn")),
    field("bp-rs-more", "More dopants", text("", "Further dopants as element:count, e.g. Co:1, Ni:2")),
    field("bp-rs-sites", "Sites", text("", "Candidate site indices instead of the host, comma-separated")),
  ],
  intercalation: () => [
    field("bp-int-species", "Species", text("Li", "Guest element")),
    field("bp-int-position", "Sites", choice(["auto", "tetrahedral", "octahedral", "custom"], "Which voids")),
    field("bp-int-count", "Count", num("1", "Number of guests", "1")),
    field("bp-int-positions", "Positions", text("", "custom: fractional x y z of each guest, guests separated by ;")),
    field("bp-int-min-distance", "Min dist Å", num("0.9", "Distance kept from every host atom (0.5 to 3 Å)")),
    field("bp-int-guest-distance", "Guest dist Å", num("2", "Distance kept between guests (0.5 to 10 Å)")),
  ],
  nanoparticle: () => [
    field("bp-np-element", "Element", text("Pt", "Metal")),
    field("bp-np-shape", "Shape", choice(["icosahedron", "octahedron", "decahedron", "wulff"], "Cluster shape")),
    field("bp-np-size", "Size", num("3", "Shells (icosahedron), edge length (octahedron), p (decahedron) or atoms (wulff)", "1")),
    more(
      field("bp-np-lattice", "Lattice", choice(["fcc", "bcc", "sc", "hcp"], "Wulff: the crystal lattice")),
      field(
        "bp-np-surfaces",
        "Surfaces",
        text("", "Wulff facets as Miller indices, e.g. 1 1 1; 1 0 0; 1 1 0 (empty: those three)"),
      ),
      field("bp-np-energies", "Energies", text("", "Wulff surface energies, one per facet, e.g. 1.0, 1.1, 1.2 (empty: those)")),
      field(
        "bp-np-rounding",
        "Rounding",
        choice(["closest", "above", "below"], "Wulff: atom count closest to, above or below Size"),
      ),
      field("bp-np-cutoff", "Cutoff", num("0", "Octahedron truncation", "1")),
      field("bp-np-q", "q", text("", "Decahedron q (empty: the same as Size)")),
      field("bp-np-r", "r", num("0", "Decahedron r (re-entrance)", "1")),
      field("bp-np-a", "Lattice const. Å", num("0", "0: ASE's value for the element")),
      field("bp-np-vacuum", "Vacuum Å", num("10", "Padding on each side of the box (0 to 100 Å)")),
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

  /** A whole number in [min, max] from a field, or an error naming the field. */
  const int = (id: string, name: string, min: number, max: number): number => {
    const n = Number(value(id));
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
  const indices = (id: string) => list(id).map(Number);
  /** `a b c; d e f` → [[a, b, c], [d, e, f]] (triples of numbers, e.g. positions or Miller indices). */
  const triples = (id: string, name: string): number[][] =>
    value(id)
      .split(";")
      .map((t) => t.trim())
      .filter(Boolean)
      .map((t) => {
        const v = t.split(/[\s,]+/).map(Number);
        if (v.length !== 3 || v.some((x) => !Number.isFinite(x))) throw new Error(`${name}: "${t}" is not three numbers`);
        return v;
      });
  /** The random-substitution dopants: the main one plus `El:count` pairs. */
  const dopants = (): { element: string; count: number }[] => {
    const main = value("bp-rs-dopant") ? [{ element: value("bp-rs-dopant"), count: Number(value("bp-rs-count")) }] : [];
    const extra = list("bp-rs-more").map((pair) => {
      const m = /^([A-Za-z]{1,3})[:×x*](\d+)$/.exec(pair);
      if (!m) throw new Error(`More dopants: "${pair}" is not element:count, e.g. Co:1`);
      return { element: m[1] as string, count: Number(m[2]) };
    });
    return [...main, ...extra];
  };
  /** Substitution groups: sites and elements, groups separated by `;` in both fields. */
  const groups = () => {
    const sites = value("bp-sub-sites").split(";");
    const elements = value("bp-sub-elements").split(";");
    if (sites.length !== elements.length)
      throw new Error(`Sites has ${sites.length} groups and Elements ${elements.length}: separate the same groups by ;`);
    const split = (t: string) => t.split(/[\s,]+/).filter(Boolean);
    return sites.map((t, k) => ({
      targetIndices: split(t).map(Number),
      replacementElements: split(elements[k] as string),
    }));
  };

  const build = async (): Promise<{ structures: Structure[]; labels: string[]; note: string }> => {
    const current = studio.store.structure;
    const k = kind.value as Kind;
    if (k !== "nanoparticle" && !current) throw new Error("Load a structure first");
    const host = current as Structure;
    if (k === "strain" || k === "doping" || k === "substitution" || k === "random-substitution") {
      await initSymmetry();
      const inBrowser = () => {
        if (k === "strain")
          return strain(host, {
            type: value("bp-strain-type"),
            axis: value("bp-strain-axis"),
            magnitude: Number(value("bp-strain-magnitude")) / 100,
            nSteps: Number(value("bp-strain-steps")),
            frame: value("bp-strain-frame"),
            sweep: value("bp-strain-sweep"),
            plane: value("bp-strain-plane"),
          });
        if (k === "doping")
          return dope(host, {
            dopant: value("bp-doping-dopant"),
            hostElement: value("bp-doping-host"),
            targetIndices: indices("bp-doping-sites"),
            concentration: Number(value("bp-doping-count")),
            enumerate: checked("bp-doping-enumerate"),
            seed: Number(value("bp-doping-seed")),
            maxStructures: int("bp-doping-max", "Max", 1, MAX_LIST),
          });
        if (k === "substitution") return substitute(host, groups(), int("bp-sub-max", "Max", 1, MAX_LIST));
        return randomSubstitute(host, {
          hostElement: value("bp-rs-host") || null,
          targetIndices: indices("bp-rs-sites"),
          dopants: dopants(),
          nSamples: int("bp-rs-samples", "Structures", 1, MAX_LIST),
          deduplicate: checked("bp-rs-dedup"),
          seed: Number(value("bp-rs-seed")),
        });
      };
      const r = inBrowser();
      const cut = r.truncated ? ` (cut at ${r.structures.length})` : "";
      const drawn = "attempts" in r ? ` from ${r.attempts} draws` : "";
      return { structures: r.structures, labels: r.labels, note: cut + drawn };
    }
    const body: Record<string, unknown> =
      k === "defect"
        ? {
            structure: toDict(host),
            defect_type: value("bp-defect-type"),
            site_index: Number(value("bp-defect-site")),
            substitute_element: value("bp-defect-element"),
            supercell: value("bp-defect-supercell") || "1x1x1",
            min_distance: Number(value("bp-defect-min-distance")),
          }
        : k === "intercalation"
          ? {
              structure: toDict(host),
              species: value("bp-int-species"),
              position: value("bp-int-position"),
              n_intercalants: Number(value("bp-int-count")),
              min_distance: Number(value("bp-int-min-distance")),
              min_guest_distance: Number(value("bp-int-guest-distance")),
              ...(value("bp-int-position") === "custom" ? { positions: triples("bp-int-positions", "Positions") } : {}),
            }
          : (() => {
              const shape = value("bp-np-shape");
              const size = Number(value("bp-np-size"));
              const sized =
                {
                  icosahedron: { shells: size },
                  octahedron: { length: size, cutoff: Number(value("bp-np-cutoff")) },
                  decahedron: { p: size, q: value("bp-np-q") ? Number(value("bp-np-q")) : size, r: Number(value("bp-np-r")) },
                  wulff: {
                    size,
                    structure: value("bp-np-lattice"),
                    rounding: value("bp-np-rounding"),
                    surfaces: value("bp-np-surfaces") ? triples("bp-np-surfaces", "Surfaces") : null,
                    energies: value("bp-np-energies") ? list("bp-np-energies").map(Number) : null,
                  },
                }[shape] ?? {};
              return {
                element: value("bp-np-element"),
                shape,
                ...sized,
                lattice_constant: Number(value("bp-np-a")),
                vacuum: Number(value("bp-np-vacuum")),
              };
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
