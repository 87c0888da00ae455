/**
 * The periodic-table picker (for every element field) and the legend of the elements present,
 * with a colour and radius override per element that the viewer applies.
 */
import { ELEMENTS, majorityElement, type Structure } from "atomstudio-core";

/** Row and column (1-based) of an element in the 18-column table; lanthanides and actinides on rows 9 and 10. */
export const tablePosition = (z: number): [number, number] => {
  if (z === 1) return [1, 1];
  if (z === 2) return [1, 18];
  const periods: [number, number][] = [
    [3, 10],
    [11, 18],
    [19, 36],
    [37, 54],
    [55, 86],
    [87, 118],
  ];
  for (const [p, [first, last]] of periods.entries()) {
    if (z < first || z > last) continue;
    const row = p + 2;
    if (row <= 3) return [row, z - first < 2 ? z - first + 1 : z - first + 11];
    if (row <= 5) return [row, z - first + 1];
    // Periods 6 and 7: the f block goes below the table.
    const f0 = first + 2; // La / Ac
    if (z < f0) return [row, z - first + 1];
    if (z < f0 + 15) return [row + 3, z - f0 + 3];
    return [row, z - (f0 + 15) + 4];
  }
  return [0, 0];
};

/**
 * Open the picker for the input with id `target`; the chosen symbol goes into it. Buttons are
 * real buttons (keyboard and screen readers), Escape closes.
 */
export const mountElementPicker = (dialog: HTMLDialogElement, grid: HTMLElement): ((target: string) => void) => {
  let target = "";
  const buttons = ELEMENTS.filter((e) => e.Z <= 103).map((e) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = e.symbol;
    b.title = `${e.symbol} (Z = ${e.Z})`;
    b.setAttribute("aria-label", `${e.symbol}, atomic number ${e.Z}`);
    const [row, col] = tablePosition(e.Z);
    b.style.gridRow = String(row);
    b.style.gridColumn = String(col);
    b.dataset.element = e.symbol;
    b.onclick = () => {
      const input = document.getElementById(target) as HTMLInputElement | null;
      if (input) {
        input.value = e.symbol;
        input.dispatchEvent(new Event("input", { bubbles: true }));
      }
      dialog.close(e.symbol);
      input?.focus();
    };
    return b;
  });
  grid.replaceChildren(...buttons);
  return (t: string) => {
    target = t;
    const current = (document.getElementById(t) as HTMLInputElement | null)?.value.trim();
    dialog.showModal();
    (buttons.find((b) => b.dataset.element === current) ?? buttons[0])?.focus();
  };
};

export interface ElementStyle {
  color?: string;
  radius?: number;
}

/** Elements present, in order of first appearance, with their counts (majority species per site). */
export const elementCounts = (s: Structure | null): [string, number][] => {
  const counts = new Map<string, number>();
  for (const sp of s?.species ?? []) {
    const best = majorityElement(sp);
    if (best) counts.set(best, (counts.get(best) ?? 0) + 1);
  }
  return [...counts];
};

const hex = (n: number): string => `#${n.toString(16).padStart(6, "0")}`;

/**
 * Render the legend: a row per element with its count, a colour input (default: the viewer's
 * element colour) and a radius input (empty: the global atom size). `onChange` receives the
 * overrides whenever one changes.
 */
export const renderLegend = (
  tbody: HTMLElement,
  s: Structure | null,
  defaults: (element: string) => number | undefined,
  styles: Map<string, ElementStyle>,
  onChange: () => void,
): void => {
  tbody.replaceChildren(
    ...elementCounts(s).map(([el, n]) => {
      const tr = document.createElement("tr");
      tr.dataset.element = el;
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = el;
      const count = document.createElement("td");
      count.textContent = String(n);
      const color = document.createElement("input");
      color.type = "color";
      color.setAttribute("aria-label", `Colour of ${el}`);
      const def = defaults(el);
      color.value = styles.get(el)?.color ?? (def === undefined ? "#ff1493" : hex(def));
      color.oninput = () => {
        styles.set(el, { ...styles.get(el), color: color.value });
        onChange();
      };
      const radius = document.createElement("input");
      radius.type = "number";
      radius.min = "0.05";
      radius.max = "3";
      radius.step = "0.05";
      radius.setAttribute("aria-label", `Radius of ${el} in Ångström`);
      radius.value = styles.get(el)?.radius?.toString() ?? "";
      radius.oninput = () => {
        const r = Number(radius.value);
        const st = { ...styles.get(el) };
        if (radius.value.trim() && Number.isFinite(r) && r > 0) st.radius = Math.min(3, r);
        else delete st.radius;
        styles.set(el, st);
        onChange();
      };
      const cells = [count, color, radius].map((c) => {
        if (c instanceof HTMLTableCellElement) return c;
        const td = document.createElement("td");
        td.append(c);
        return td;
      });
      tr.append(th, ...cells);
      return tr;
    }),
  );
};
