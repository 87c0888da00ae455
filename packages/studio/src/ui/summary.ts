/**
 * The structure summary at the top of the tools panel: formulas, atom count, space group,
 * lattice, volume, density, and for molecules charge and spin. Symmetry comes from the same
 * core code (moyo) the service uses, loaded once in the browser.
 */
import { density, initSymmetry, type Structure, structureFormula, structureReducedFormula, symmetryInfo } from "atomstudio-core";

/** Largest structure whose space group is searched in the browser (the service's default cap). */
export const SUMMARY_SYMMETRY_MAX_ATOMS = 10_000;

let symmetryReady = false;
const symmetryLoading = initSymmetry().then(
  () => {
    symmetryReady = true;
  },
  () => {},
);

const fmt = (x: number, digits: number): string => x.toFixed(digits);

export interface SummaryRow {
  key: string;
  label: string;
  value: string;
}

/** The rows the summary shows (also what tests compare with the service's structure-info). */
export const summaryRows = (s: Structure, name: string): SummaryRow[] => {
  const rows: SummaryRow[] = [
    { key: "name", label: "Name", value: name || "untitled" },
    { key: "reduced_formula", label: "Formula", value: structureReducedFormula(s) },
    { key: "formula", label: "Full formula", value: structureFormula(s) },
    { key: "n_atoms", label: "Atoms", value: String(s.length) },
  ];
  if (s.lattice) {
    let sg = "…";
    if (s.length > SUMMARY_SYMMETRY_MAX_ATOMS) sg = `not searched above ${SUMMARY_SYMMETRY_MAX_ATOMS} atoms`;
    else if (symmetryReady) {
      try {
        const sym = symmetryInfo(s);
        sg = sym ? `${sym.space_group} (${sym.space_group_number})` : "–";
      } catch (e) {
        sg = `unknown (${(e as Error).message})`;
      }
    }
    const [a, b, c] = s.lattice.lengths;
    const [al, be, ga] = s.lattice.angles;
    const rho = density(s);
    rows.push(
      { key: "space_group", label: "Space group", value: sg },
      { key: "abc", label: "a, b, c (Å)", value: `${fmt(a, 4)}, ${fmt(b, 4)}, ${fmt(c, 4)}` },
      { key: "angles", label: "α, β, γ (°)", value: `${fmt(al, 2)}, ${fmt(be, 2)}, ${fmt(ga, 2)}` },
      { key: "volume", label: "Volume (Å³)", value: fmt(s.lattice.volume, 3) },
      { key: "density", label: "Density (g/cm³)", value: rho === null ? "–" : fmt(rho, 4) },
    );
  } else {
    rows.push(
      { key: "kind", label: "Kind", value: "molecule (no lattice)" },
      { key: "charge", label: "Charge", value: String(s.charge) },
      { key: "spin", label: "Spin multiplicity", value: s.spinMultiplicity === null ? "–" : String(s.spinMultiplicity) },
    );
  }
  return rows;
};

let latest: Parameters<typeof renderSummary> | null = null;

/** Render into the `<dl>`; renders the latest structure again once symmetry has loaded. */
export const renderSummary = (dl: HTMLElement, empty: HTMLElement, s: Structure | null, name: string): void => {
  latest = [dl, empty, s, name];
  empty.hidden = !!s;
  dl.hidden = !s;
  if (!s) return;
  dl.replaceChildren(
    ...summaryRows(s, name).flatMap((r) => {
      const dt = document.createElement("dt");
      dt.textContent = r.label;
      const dd = document.createElement("dd");
      dd.textContent = r.value;
      dd.dataset.key = r.key;
      return [dt, dd];
    }),
  );
  if (s.lattice && !symmetryReady)
    void symmetryLoading.then(() => {
      if (symmetryReady && latest) renderSummary(...latest);
    });
};
