/**
 * The adsorption panel: find the sites of the current slab (POST /api/adsorption/sites, pymatgen's
 * AdsorbateSiteFinder), draw them on the slab as coloured markers, pick one by clicking it in the
 * viewer (or in the list), and place a small molecule there (POST /api/adsorption/place). The
 * placement is one undoable step and the result is the current structure, so the studio's export
 * writes it. Sites belong to the slab they were found on: any other change of structure clears them.
 */
import { fromDict } from "atomstudio-core";
import { postJson } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";
import type { Marker } from "../viewer/viewer3d.ts";
import "./adsorption.css";

interface Site {
  id: number;
  position: [number, number, number];
  site_type: "top" | "bridge" | "hollow3" | "hollow4";
  surface: "top" | "bottom";
  normal: [number, number, number];
  env_signature: string;
}

type Atom = [string, number, number, number];
/**
 * Adsorbates with their binding atom first and the rest above it (+z): the service turns z along
 * the surface normal. Geometries are the usual gas-phase ones (Å).
 */
export const ADSORBATES: Record<string, Atom[]> = {
  CO: [
    ["C", 0, 0, 0],
    ["O", 0, 0, 1.128],
  ],
  H: [["H", 0, 0, 0]],
  O: [["O", 0, 0, 0]],
  N: [["N", 0, 0, 0]],
  OH: [
    ["O", 0, 0, 0],
    ["H", 0, 0, 0.97],
  ],
  H2O: [
    ["O", 0, 0, 0],
    ["H", 0.757, 0, 0.586],
    ["H", -0.757, 0, 0.586],
  ],
  NO: [
    ["N", 0, 0, 0],
    ["O", 0, 0, 1.151],
  ],
};

export const SITE_COLORS: Record<Site["site_type"], string> = {
  top: "#e4572e",
  bridge: "#17bebb",
  hollow3: "#6a4c93",
  hollow4: "#ffc914",
};
const PICKED_COLOR = "#ff00aa";

const post = async <T>(path: string, body: unknown): Promise<T> => {
  const res = await postJson(path, body);
  const out = (await res.json()) as T & { error?: string; code?: string };
  if (!res.ok) throw new Error(`${out.error ?? res.statusText}${out.code ? ` (${out.code})` : ""}`);
  return out;
};

export const mountAdsorptionPanel = (el: HTMLElement, studio: Studio): void => {
  el.classList.add("adsorption-panel");
  const surface = h("select", { id: "ads-surface", title: "which surface of the slab" });
  for (const s of ["top", "bottom", "both"]) surface.append(h("option", { value: s }, s));
  const height = h("input", {
    id: "ads-height",
    type: "number",
    value: "1.5",
    min: "0.5",
    max: "5",
    step: "0.1",
    title: "site height above the surface, Å",
  });
  const find = h("button", { id: "ads-find", type: "button" }, "Find sites");
  const list = h("ol", { id: "ads-sites", class: "ads-sites" });
  const molecule = h("select", { id: "ads-molecule", title: "adsorbate (binding atom first)" });
  for (const name of Object.keys(ADSORBATES)) molecule.append(h("option", { value: name }, name));
  const place = h("button", { id: "ads-place", type: "button", disabled: "" }, "Place");
  const info = h("div", { id: "ads-status", class: "ads-status" }, "Load a slab, then find its sites.");
  const label = (text: string, input: HTMLElement) => h("label", {}, text, input);
  const row = (...kids: Node[]) => h("div", { class: "row" }, ...kids);
  el.append(
    h("h3", {}, "Adsorption"),
    row(label("Surface ", surface), label("Height (Å) ", height), find),
    list,
    row(label("Molecule ", molecule), place),
    info,
  );

  let sites: Site[] = [];
  let picked: number | null = null;
  /** Set while our own placement replaces the structure, so the change does not clear anything twice. */
  let placing = false;

  const say = (text: string, error = false) => {
    info.textContent = text;
    info.classList.toggle("error", error);
  };

  const draw = () => {
    const markers: Marker[] = sites.map((s, i) => ({
      position: s.position,
      color: i === picked ? PICKED_COLOR : SITE_COLORS[s.site_type],
      radius: i === picked ? 0.45 : 0.3,
      onClick: () => pick(i),
    }));
    studio.viewer.setMarkers(markers);
    for (const [i, li] of Array.from(list.children).entries()) li.classList.toggle("picked", i === picked);
    place.disabled = picked === null;
    el.dataset.sites = String(sites.length);
    el.dataset.picked = picked === null ? "" : String(picked);
  };

  const pick = (i: number) => {
    picked = i;
    const s = sites[i];
    if (s) say(`Site ${i}: ${s.site_type} (${s.env_signature}) on the ${s.surface} surface. Choose a molecule and place it.`);
    draw();
  };

  const clear = () => {
    sites = [];
    picked = null;
    list.replaceChildren();
    draw();
  };

  find.addEventListener("click", async () => {
    const structure = studio.api.getStructure();
    if (!structure) return say("No structure loaded", true);
    find.disabled = true;
    say("Finding sites…");
    try {
      const r = await post<{ sites: Site[]; message: string }>("/api/adsorption/sites", {
        structure,
        params: { surface: surface.value, height: Number(height.value) },
      });
      clear();
      sites = r.sites;
      for (const [i, s] of sites.entries()) {
        const li = h("li", { "data-site": String(i), title: `normal ${s.normal.map((x) => x.toFixed(2)).join(", ")}` });
        li.append(
          h("span", { class: "swatch", style: `background:${SITE_COLORS[s.site_type]}` }),
          `${s.site_type} · ${s.env_signature} · ${s.surface}`,
        );
        li.addEventListener("click", () => pick(i));
        list.append(li);
      }
      draw();
      say(`${r.message}. Click a site in the viewer or the list.`);
    } catch (e) {
      say((e as Error).message, true);
    } finally {
      find.disabled = false;
    }
  });

  place.addEventListener("click", async () => {
    const s = picked === null ? undefined : sites[picked];
    const slab = studio.api.getStructure();
    if (!s || !slab) return;
    const atoms = ADSORBATES[molecule.value] ?? [];
    place.disabled = true;
    say(`Placing ${molecule.value}…`);
    try {
      const r = await post<{ structure: unknown; message: string; adsorbate_indices: number[] }>("/api/adsorption/place", {
        slab,
        adsorbate: { sites: atoms.map(([element, x, y, z]) => ({ species: [{ element, occu: 1 }], xyz: [x, y, z] })) },
        site_position: s.position,
        site_normal: s.normal,
      });
      placing = true;
      // one undoable step; the view stays where the user was looking
      studio.store.set(fromDict(r.structure), { record: true, keepView: true });
      placing = false;
      clear();
      el.dataset.placed = String(r.adsorbate_indices.length);
      say(`${r.message}. Undo removes it; Export writes the result.`);
    } catch (e) {
      placing = false;
      say((e as Error).message, true);
      place.disabled = false;
    }
  });

  studio.store.subscribe((c) => {
    if (c.kind === "structure" && !placing && sites.length) {
      clear();
      say("The structure changed: find the sites again.");
    }
  });
};
