/**
 * The heterostructure panel: pick a substrate and a film among the structures opened in this
 * session (or a file), search lattice matches (POST /api/heterostructure/search), sort the match
 * table by area, strain or atoms, preview a match in the viewer (built by /build, shown without
 * touching the structure or its history), and build it into the current structure (undoable,
 * exportable with the toolbar's export or the panel's CIF button).
 */
import { type AnyStructureDict, fromDict, parseStructureFile, toDict } from "atomstudio-core";
import { postJson } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";
import "./heterostructure.css";

interface Match {
  match_id: number;
  match_area: number;
  strain: number;
  n_atoms_substrate: number;
  n_atoms_film: number;
  [key: string]: unknown;
}
interface Built {
  structure: AnyStructureDict;
  n_atoms: number;
  strain: number;
  match_area: number;
}

const MAX_SOURCES = 20;
type SortKey = "match_area" | "strain" | "atoms";

const post = async <T>(path: string, body: unknown): Promise<T> => {
  const res = await postJson(`/api/heterostructure/${path}`, body);
  const out = (await res.json()) as T & { code?: string; error?: string };
  if (!res.ok) throw new Error(`${out.code ?? res.status}: ${out.error ?? res.statusText}`);
  return out;
};

const miller = (text: string): number[] =>
  text
    .trim()
    .split(/[\s,]+/)
    .map(Number);

export const mountHeterostructurePanel = (el: HTMLElement, studio: Studio): void => {
  el.classList.add("hetero-panel");
  const sources: { name: string; dict: AnyStructureDict }[] = [];
  const substrate = h("select", { id: "het-substrate", title: "substrate: a structure opened in this session" });
  const film = h("select", { id: "het-film", title: "film: a structure opened in this session" });
  const file = h("input", {
    id: "het-file",
    type: "file",
    title: "add a structure file to the choices",
    "aria-label": "Add a structure file to the choices",
  });
  const mode = h("select", {
    id: "het-mode",
    title: "slab: the two structures are slabs; bulk: crystals cut at the Miller indices",
  });
  mode.append(new Option("slabs", "slab"), new Option("bulk crystals", "bulk"));
  const subMiller = h("input", { id: "het-sub-miller", value: "1 1 1", size: "6", title: "substrate Miller indices (bulk)" });
  const filmMiller = h("input", { id: "het-film-miller", value: "0 0 1", size: "6", title: "film Miller indices (bulk)" });
  const maxArea = h("input", {
    id: "het-max-area",
    type: "number",
    value: "100",
    min: "10",
    max: "5000",
    title: "largest superlattice area, Å²",
  });
  const gap = h("input", {
    id: "het-gap",
    type: "number",
    value: "2",
    min: "0.5",
    max: "10",
    step: "0.1",
    title: "gap along the surface normal, Å",
  });
  const vacuum = h("input", { id: "het-vacuum", type: "number", value: "20", min: "0", max: "60", title: "vacuum, Å" });
  const search = h("button", { id: "het-search", type: "button" }, "Search");
  const build = h("button", { id: "het-build", type: "button", disabled: "" }, "Build");
  const exportCif = h("button", { id: "het-export", type: "button", title: "download the current structure as CIF" }, "CIF");
  const table = h("table", { id: "het-matches", class: "legend" });
  const info = h("div", { id: "het-status", class: "het-status" }, "Open two structures, then search");
  const label = (text: string, input: HTMLElement) => h("label", {}, text, input);
  const row = (...kids: Node[]) => h("div", { class: "row" }, ...kids);
  el.append(
    h("h3", {}, "Heterostructure"),
    row(label("Substrate ", substrate), label("Film ", film)),
    row(file),
    row(label("Mode ", mode), label("max area ", maxArea)),
    row(label("substrate hkl ", subMiller), label("film hkl ", filmMiller)),
    row(label("gap ", gap), label("vacuum ", vacuum)),
    row(search, build, exportCif),
    table,
    info,
  );
  const say = (text: string, error = false) => {
    info.textContent = text;
    info.classList.toggle("error", error);
  };

  const addSource = (name: string, dict: AnyStructureDict) => {
    if (!("lattice" in dict) || !dict.lattice) return; // molecules cannot be layers
    const same = sources.findIndex((s) => s.name === name);
    if (same >= 0) sources.splice(same, 1);
    sources.unshift({ name, dict });
    sources.splice(MAX_SOURCES);
    for (const select of [substrate, film]) {
      const keep = select.value;
      select.replaceChildren(...sources.map((s, i) => new Option(s.name, String(i))));
      const again = sources.findIndex((s) => s.name === (keep === "" ? "" : sources[Number(keep)]?.name));
      if (again >= 0) select.value = String(again);
    }
    // A new pair by default: the two latest structures (substrate the older one)
    if (sources.length >= 2) {
      substrate.value = "1";
      film.value = "0";
    }
    el.dataset.sources = String(sources.length);
  };
  // Every structure opened in the studio (file, example, paste, assistant) becomes a choice.
  let lastName = "";
  studio.store.subscribe((c) => {
    const s = studio.store.structure;
    if (c.kind !== "structure" || c.keepView || !s) return;
    const name = studio.store.name || `structure ${sources.length + 1}`;
    if (name === lastName && sources[0]?.name === name) return;
    lastName = name;
    addSource(name, toDict(s));
  });
  file.onchange = async () => {
    const f = file.files?.[0];
    if (!f) return;
    try {
      addSource(f.name, toDict(parseStructureFile(await f.text(), { filename: f.name }).structure));
      say(`Added ${f.name}`);
    } catch (e) {
      say(`Could not read ${f.name}: ${(e as Error).message}`, true);
    }
  };

  let matches: Match[] = [];
  let chosen: Match | null = null;
  let searchParams: Record<string, unknown> = {};
  let pair: { substrate: AnyStructureDict; film: AnyStructureDict } | null = null;
  let sort: { key: SortKey; dir: 1 | -1 } = { key: "match_area", dir: 1 };
  const value = (m: Match, key: SortKey) => (key === "atoms" ? m.n_atoms_substrate + m.n_atoms_film : m[key]);

  const render = () => {
    const sorted = [...matches].sort((a, b) => sort.dir * (value(a, sort.key) - value(b, sort.key)) || a.match_id - b.match_id);
    const head = h("tr");
    for (const [key, text] of [
      ["match_area", "area (Å²)"],
      ["strain", "strain (%)"],
      ["atoms", "atoms"],
    ] as [SortKey, string][]) {
      const th = h("th", { scope: "col", "data-sort": key, tabindex: "0", title: "sort" }, text);
      if (sort.key === key) th.setAttribute("aria-sort", sort.dir === 1 ? "ascending" : "descending");
      th.onclick = () => {
        sort = { key, dir: sort.key === key ? (-sort.dir as 1 | -1) : 1 };
        render();
      };
      head.append(th);
    }
    const body = h("tbody");
    for (const m of sorted) {
      const tr = h("tr", { "data-match-id": String(m.match_id), tabindex: "0" });
      if (chosen?.match_id === m.match_id) tr.classList.add("chosen");
      tr.append(
        h("td", {}, m.match_area.toFixed(2)),
        h("td", {}, m.strain.toFixed(3)),
        h("td", {}, String(m.n_atoms_substrate + m.n_atoms_film)),
      );
      tr.onclick = () => void preview(m);
      body.append(tr);
    }
    const thead = h("thead");
    thead.append(head);
    table.replaceChildren(thead, body);
  };

  const buildMatch = (m: Match) =>
    post<Built>("build", {
      ...pair,
      match: m,
      params: { gap: Number(gap.value), vacuum: Number(vacuum.value) },
      search_params: searchParams,
    });

  let previewed: Built | null = null;
  const preview = async (m: Match) => {
    chosen = m;
    render();
    say(`Building match ${m.match_id} for the preview…`);
    try {
      previewed = await buildMatch(m);
      // Shown in the viewer only: the current structure and its history are untouched until Build.
      studio.viewer.load(fromDict(previewed.structure), { keepView: false });
      el.dataset.preview = String(m.match_id);
      el.dataset.previewAtoms = String(previewed.n_atoms);
      build.disabled = false;
      say(`Preview: match ${m.match_id}, ${previewed.n_atoms} atoms, strain ${previewed.strain.toFixed(3)} %. Build to keep it.`);
    } catch (e) {
      say((e as Error).message, true);
    }
  };

  search.onclick = async () => {
    const sub = sources[Number(substrate.value)];
    const fil = sources[Number(film.value)];
    if (!sub || !fil) return say("Open a substrate and a film first", true);
    pair = { substrate: sub.dict, film: fil.dict };
    searchParams = {
      mode: mode.value,
      max_area: Number(maxArea.value),
      ...(mode.value === "bulk" ? { substrate_miller: miller(subMiller.value), film_miller: miller(filmMiller.value) } : {}),
    };
    say("Searching…");
    el.dataset.searching = "true";
    build.disabled = true;
    chosen = null;
    try {
      const r = await post<{ matches: Match[]; truncated: boolean; message: string }>("search", {
        ...pair,
        params: searchParams,
      });
      matches = r.matches;
      el.dataset.matches = String(matches.length);
      render();
      say(r.message);
    } catch (e) {
      matches = [];
      render();
      say((e as Error).message, true);
    } finally {
      el.dataset.searching = "false";
    }
  };

  build.onclick = () => {
    if (!previewed || !chosen) return;
    const name = `${sources[Number(film.value)]?.name ?? "film"} on ${sources[Number(substrate.value)]?.name ?? "substrate"}`;
    studio.api.setStructure(previewed.structure, { name });
    el.dataset.built = String(chosen.match_id);
    say(`Built ${name}: ${previewed.n_atoms} atoms (undo restores the previous structure)`);
  };

  exportCif.onclick = () => {
    try {
      const { text, filename } = studio.exportFile("cif");
      const a = h("a", { href: URL.createObjectURL(new Blob([text], { type: "chemical/x-cif" })), download: filename });
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (e) {
      say((e as Error).message, true);
    }
  };
};
