/**
 * Measure mode: clicks pick 2, 3 or 4 atoms (distance, angle, dihedral); each finished
 * measurement is listed in the panel and drawn in the viewer (dashed lines and the value).
 * Values come from the core's `measure`, which follows periodic images.
 */
import { type Measurement, measure, type Structure } from "atomstudio-core";

export interface MeasureOverlay {
  points: [number, number, number][];
  text: string;
}

export const formatMeasurement = (m: Measurement): string =>
  m.kind === "distance" ? `${m.value.toFixed(4)} Å` : `${m.value.toFixed(2)}°`;

const KIND_NAMES = { 2: "distance", 3: "angle", 4: "dihedral" } as const;

export interface MeasureTool {
  /** Whether clicks measure (instead of selecting). */
  readonly active: boolean;
  setActive(on: boolean): void;
  /** A clicked site while active. */
  pick(site: number): void;
  /** The structure changed: picks are dropped, measurements re-evaluated (gone if a site is). */
  refresh(): void;
  clear(): void;
  readonly measurements: readonly Measurement[];
}

export const mountMeasureTool = (opts: {
  structure: () => Structure | null;
  /** How many atoms the chosen kind takes (2, 3 or 4). */
  kind: () => 2 | 3 | 4;
  list: HTMLOListElement;
  hint: HTMLElement;
  button: HTMLButtonElement;
  draw: (overlays: MeasureOverlay[], picked: number[]) => void;
}): MeasureTool => {
  let active = false;
  let picked: number[] = [];
  let items: Measurement[] = [];

  const render = (): void => {
    opts.button.setAttribute("aria-pressed", String(active));
    const need = opts.kind();
    opts.hint.textContent = active
      ? `Click ${need - picked.length} more atom${need - picked.length === 1 ? "" : "s"} for a ${KIND_NAMES[need]}${picked.length ? ` (picked ${picked.join(", ")})` : ""}.`
      : "Turn on measure mode, then click atoms.";
    const s = opts.structure();
    opts.list.replaceChildren(
      ...items.map((m, k) => {
        const li = document.createElement("li");
        li.dataset.kind = m.kind;
        li.dataset.value = String(m.value);
        const names = m.sites.map((i) => `${s?.species[i]?.[0]?.element ?? "?"}${i}`).join("–");
        const text = document.createElement("span");
        text.textContent = `${m.kind} ${names}: ${formatMeasurement(m)}`;
        const remove = document.createElement("button");
        remove.type = "button";
        remove.textContent = "×";
        remove.setAttribute("aria-label", `Remove the ${m.kind} ${names}`);
        remove.onclick = () => {
          items.splice(k, 1);
          render();
        };
        li.append(text, remove);
        return li;
      }),
    );
    opts.draw(
      items.map((m) => ({ points: m.points, text: formatMeasurement(m) })),
      picked,
    );
  };

  const tool: MeasureTool = {
    get active() {
      return active;
    },
    get measurements() {
      return items;
    },
    setActive(on) {
      active = on;
      picked = [];
      render();
    },
    pick(site) {
      const s = opts.structure();
      if (!s) return;
      if (picked.at(-1) === site) return;
      picked.push(site);
      if (picked.length >= opts.kind()) {
        items.push(measure(s, picked));
        picked = [];
      }
      render();
    },
    refresh() {
      const s = opts.structure();
      picked = [];
      items = s ? items.filter((m) => m.sites.every((i) => i < s.length)).map((m) => measure(s, m.sites)) : [];
      render();
    },
    clear() {
      items = [];
      picked = [];
      render();
    },
  };
  render();
  return tool;
};
