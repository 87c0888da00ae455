/**
 * The electronic-structure panel: drop (or pick) vasprun.xml(.gz), KPOINTS, COHPCAR / ICOHPLIST
 * (with CONTCAR) anywhere on the page; the files go to /api/bands, /api/dos and /api/cohp as a
 * binary multipart upload, and the answers are drawn with uPlot in a dialog: bands with labelled
 * ticks and the gap (and fat bands: an element's or orbital's projected weight drawn on the band
 * lines, chosen in a list), the DOS beside them on the same energy axis with per-element toggles, -COHP
 * per bond with an ICOHP table; each plot exports as PNG and its data as CSV. The structure from
 * the file opens in the viewer.
 */
import { fromDict } from "atomstudio-core";
import type uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { apiFetch } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";
import "./analysis.css";
import { type AnalysisRole, analysisRole, isStructureFile, prettyLabel, toCsv } from "./files.ts";
import {
  type BandsResponse,
  bandsData,
  type CohpResponse,
  color,
  type DosResponse,
  type FatBands,
  plotBands,
  plotVertical,
} from "./plots.ts";

const RANGE: [number, number] = [-6, 6];
/** Orbital families offered for fat bands (the route answers UNKNOWN_ORBITAL for one the file lacks). */
const FAT_ORBITALS = ["s", "p", "d"];

/** Elements of a structure dictionary, in site order, once each. */
const elementsOf = (structure: unknown): string[] => {
  const sites = (structure as { sites?: Array<{ species?: Array<{ element?: string }> }> } | null)?.sites ?? [];
  return [...new Set(sites.map((site) => site.species?.[0]?.element).filter((e): e is string => Boolean(e)))];
};

const download = (blob: Blob, filename: string) => {
  const a = h("a", { href: URL.createObjectURL(blob), download: filename });
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
};

class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const post = async <T>(path: string, files: Partial<Record<AnalysisRole, File>>, params: Record<string, unknown>): Promise<T> => {
  const form = new FormData();
  for (const [name, f] of Object.entries(files)) if (f) form.append(name, f, f.name);
  form.append("params", JSON.stringify(params));
  const res = await apiFetch(path, { method: "POST", body: form });
  const body = (await res.json()) as T & { code?: string; error?: string };
  if (!res.ok) throw new ApiError(body.code ?? String(res.status), body.error ?? res.statusText);
  return body;
};

export interface AnalysisPanel {
  /** Take files (from a drop or the picker); returns whether any was an analysis file. */
  open(files: File[]): Promise<boolean>;
}

export const mountAnalysisPanel = (root: HTMLElement, studio: Studio): AnalysisPanel => {
  root.classList.add("analysis-panel");
  root.setAttribute("aria-labelledby", "analysis-title");
  const picker = h("input", { type: "file", multiple: "", id: "analysis-files", "aria-label": "Analysis files" });
  const openBtn = h("button", { type: "button", id: "analysis-open" }, "Show plots");
  openBtn.disabled = true;
  root.append(
    h("h2", { id: "analysis-title" }, "Electronic structure"),
    h("p", { class: "hint" }, "Drop vasprun.xml(.gz) with its KPOINTS, or COHPCAR / ICOHPLIST (+ CONTCAR) on the page."),
    picker,
    openBtn,
  );

  const dialog = h("dialog", { id: "analysis-dialog", "aria-labelledby": "analysis-dialog-title" });
  const fileList = h("p", { id: "analysis-file-list", class: "hint" });
  const statusLine = h("p", { id: "analysis-status", role: "status" });
  const gapLine = h("p", { id: "analysis-gap" });
  const bandsFig = h("figure", { id: "analysis-bands", "aria-label": "Band structure" });
  const dosFig = h("figure", { id: "analysis-dos", "aria-label": "Density of states" });
  const toggles = h("fieldset", { id: "analysis-toggles" });
  const sigma = h("input", { type: "number", id: "analysis-sigma", min: "0", max: "1", step: "0.01", value: "0.05" });
  const fatChoice = h("select", { id: "analysis-fat", "aria-label": "Fat bands: projection drawn on the bands" });
  const fatLabel = h("label", { class: "field" });
  fatLabel.append(h("span", {}, "Fat bands"), fatChoice);
  fatLabel.hidden = true;
  const cohpSection = h("section", { id: "analysis-cohp", "aria-label": "Bonding (COHP)" });
  const cohpFig = h("figure", { id: "analysis-cohp-plot", "aria-label": "-COHP per bond" });
  const cohpTable = h("table", { id: "analysis-bonds", class: "legend" });
  const close = h("button", { type: "button", id: "analysis-close" }, "Close");
  const esRow = h("div", { class: "analysis-row" });
  esRow.append(bandsFig, dosFig);
  const exportRow = h("div", { class: "row wrap" });
  const sigmaLabel = h("label", { class: "field" });
  sigmaLabel.append(h("span", {}, "DOS smearing σ (eV)"), sigma);
  cohpSection.append(h("h3", {}, "Bonds"), cohpFig, cohpTable);
  const head = h("div", { class: "row" });
  head.append(h("h2", { id: "analysis-dialog-title" }, "Electronic structure"), close);
  const controls = h("div", { class: "row wrap" });
  controls.append(fatLabel, sigmaLabel);
  dialog.append(head, fileList, statusLine, gapLine, esRow, controls, toggles, exportRow, cohpSection);
  document.body.append(dialog);

  const files: Partial<Record<AnalysisRole, File>> = {};
  let bands: BandsResponse | undefined;
  let dos: DosResponse | undefined;
  let cohp: CohpResponse | undefined;
  let fat: FatBands | undefined;
  const plots: Record<string, uPlot | undefined> = {};
  let selectedBonds: string[] = [];
  const hiddenSeries = new Set<string>();

  const status = (text: string, error = false) => {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", error);
  };
  const width = () => Math.max(600, Math.min(window.innerWidth * 0.9, 1400) - 48);
  const replot = (key: string, make: () => uPlot | undefined) => {
    plots[key]?.destroy();
    plots[key] = make();
  };

  const drawBands = () =>
    replot("bands", () => {
      bandsFig.replaceChildren();
      if (!bands) return undefined;
      const u = plotBands(bandsFig, bands, RANGE, { width: Math.round(width() * 0.64), height: 420 }, fat);
      // zooming the energy axis of the bands zooms the DOS beside them
      u.hooks.setScale = [
        (p: uPlot, key: string) => {
          if (key === "y") plots.dos?.setScale("x", { min: p.scales.y?.min as number, max: p.scales.y?.max as number });
        },
      ];
      return u;
    });

  const drawDos = () =>
    replot("dos", () => {
      dosFig.replaceChildren();
      if (!dos) return undefined;
      const lines: Array<{ label: string; y: number[]; color: string; show?: boolean; dash?: number[] }> = [
        { label: "total", y: dos.total.up, color: "#444" },
      ];
      if (dos.total.down) lines.push({ label: "total ↓", y: dos.total.down.map((v) => -v), color: "#444", dash: [4, 3] });
      dos.series.forEach((s, i) => {
        const show = !hiddenSeries.has(s.label);
        lines.push({ label: s.label, y: s.up, color: color(i + 1), show });
        if (s.down) lines.push({ label: `${s.label} ↓`, y: s.down.map((v) => -v), color: color(i + 1), show, dash: [4, 3] });
      });
      return plotVertical(
        dosFig,
        dos.energies,
        lines,
        RANGE,
        { width: Math.round(width() * 0.32), height: 420 },
        "DOS (states/eV)",
      );
    });

  /** The fat-band choices of the file: none, each element, each element's s, p, d. */
  const renderFatChoices = () => {
    fatChoice.replaceChildren(h("option", { value: "" }, "none"));
    for (const el of elementsOf(bands?.structure)) {
      fatChoice.append(h("option", { value: JSON.stringify({ elements: [el] }) }, el));
      for (const o of FAT_ORBITALS)
        fatChoice.append(h("option", { value: JSON.stringify({ elements: [el], orbitals: [o] }) }, `${el} ${o}`));
    }
    fatChoice.value = "";
    fatLabel.hidden = !bands;
  };

  // The weights of the chosen projection: one more /api/bands call (the worker keeps the parse).
  fatChoice.onchange = async () => {
    const choice = fatChoice.value;
    if (!choice || !files.vasprun) {
      fat = undefined;
      drawBands();
      return;
    }
    const label = fatChoice.selectedOptions[0]?.textContent ?? choice;
    status(`Projecting on ${label}…`);
    try {
      const kp = files.kpoints ? { kpoints: files.kpoints } : {};
      const r = await post<BandsResponse>(
        "/api/bands",
        { vasprun: files.vasprun, ...kp },
        { emin: -20, emax: 20, projections: [{ label, ...JSON.parse(choice) }] },
      );
      const projection = r.projections?.[0];
      // orange: apart from the spin-up (blue) and spin-down (red) lines and the band-edge marks
      fat = projection ? { projection, color: "#fb8500" } : undefined;
      status(projection ? `Fat bands: ${label}` : r.warnings.join(" "), !projection);
    } catch (e) {
      fat = undefined;
      status(`${e instanceof ApiError ? `${e.code}: ` : ""}${(e as Error).message}`, true);
    }
    drawBands();
  };

  const renderToggles = () => {
    toggles.replaceChildren(h("legend", {}, "Projections"));
    if (!dos?.series.length) {
      toggles.append(h("span", { class: "hint" }, "No projected DOS in this file"));
      return;
    }
    dos.series.forEach((s, i) => {
      const box = h("input", { type: "checkbox", "data-element": s.label });
      box.checked = !hiddenSeries.has(s.label);
      box.onchange = () => {
        if (box.checked) hiddenSeries.delete(s.label);
        else hiddenSeries.add(s.label);
        drawDos();
      };
      const label = h("label", { style: `color:${color(i + 1)}` });
      label.append(box, ` ${s.label}`);
      toggles.append(label);
    });
  };

  const drawCohp = () =>
    replot("cohp", () => {
      cohpFig.replaceChildren();
      if (!cohp) return undefined;
      const shown = cohp.series.filter((s) => selectedBonds.includes(s.label));
      const lines = shown.map((s, i) => ({ label: `bond ${s.label}`, y: s.up, color: color(i) }));
      const axis = cohp.kind === "cohp" ? "−COHP" : cohp.kind.toUpperCase();
      return plotVertical(cohpFig, cohp.energies, lines, RANGE, { width: Math.round(width() * 0.45), height: 380 }, axis);
    });

  const renderBondTable = () => {
    cohpTable.replaceChildren();
    if (!cohp) return;
    const head = h("thead");
    const hr = h("tr");
    for (const t of ["Plot", "Bond", "Atoms", "Distance (Å)", `I${cohp.kind.toUpperCase()} at E_F (eV)`])
      hr.append(h("th", { scope: "col" }, t));
    head.append(hr);
    const body = h("tbody");
    for (const b of cohp.bonds) {
      const tr = h("tr", { "data-bond": b.label });
      const box = h("input", { type: "checkbox", "aria-label": `Plot bond ${b.label}` });
      box.checked = selectedBonds.includes(b.label);
      box.onchange = () => {
        selectedBonds = box.checked ? [...selectedBonds, b.label] : selectedBonds.filter((l) => l !== b.label);
        drawCohp();
      };
      const cell = h("td");
      cell.append(box);
      tr.append(
        cell,
        h("td", {}, b.label),
        h("td", {}, (b.atoms ?? b.elements ?? []).join("–")),
        h("td", {}, b.distance_ang.toFixed(3)),
        h("td", {}, b.icohp_ev === undefined ? "" : b.icohp_ev.toFixed(5)),
      );
      body.append(tr);
    }
    cohpTable.append(head, body);
  };

  const exportButtons = () => {
    exportRow.replaceChildren();
    const add = (id: string, text: string, fn: () => void) => {
      const b = h("button", { type: "button", id }, text);
      b.onclick = fn;
      exportRow.append(b);
    };
    const png = (key: string, name: string) => () => plots[key]?.ctx.canvas.toBlob((b) => b && download(b, name));
    if (bands) {
      add("analysis-bands-png", "Bands PNG", png("bands", "bands.png"));
      add("analysis-bands-csv", "Bands CSV", () => {
        const { x, rows, series } = bandsData(bands as BandsResponse);
        const indices = (bands as BandsResponse).band_indices;
        const names = series.map((s) => `band${indices[s.band]}_${s.spin}`);
        const columns: Array<(number | null)[]> = series.map((s) => s.y);
        // with fat bands, the drawn projection's weights follow, one column per band and spin
        if (fat) {
          const p = fat.projection;
          for (const s of series) {
            names.push(`${p.label.replace(/\s+/g, "_")}_band${indices[s.band]}_${s.spin}`);
            columns.push(rows.map((k) => (k < 0 ? null : (p[s.spin]?.[s.band]?.[k] ?? null))));
          }
        }
        download(new Blob([toCsv(["distance_inv_ang", ...names], [x, ...columns])], { type: "text/csv" }), "bands.csv");
      });
    }
    if (dos) {
      add("analysis-dos-png", "DOS PNG", png("dos", "dos.png"));
      add("analysis-dos-csv", "DOS CSV", () => {
        const d = dos as DosResponse;
        const cols: Array<[string, number[]]> = [
          ["energy_ev", d.energies],
          ["total_up", d.total.up],
        ];
        if (d.total.down) cols.push(["total_down", d.total.down]);
        for (const s of d.series) {
          cols.push([`${s.label}_up`, s.up]);
          if (s.down) cols.push([`${s.label}_down`, s.down]);
        }
        download(
          new Blob(
            [
              toCsv(
                cols.map((c) => c[0]),
                cols.map((c) => c[1]),
              ),
            ],
            { type: "text/csv" },
          ),
          "dos.csv",
        );
      });
    }
    if (cohp) {
      add("analysis-cohp-png", "COHP PNG", png("cohp", "cohp.png"));
      add("analysis-cohp-csv", "COHP CSV", () => {
        const c = cohp as CohpResponse;
        const shown = c.series.filter((s) => selectedBonds.includes(s.label));
        download(
          new Blob([toCsv(["energy_ev", ...shown.map((s) => `bond${s.label}`)], [c.energies, ...shown.map((s) => s.up)])], {
            type: "text/csv",
          }),
          "cohp.csv",
        );
      });
    }
  };

  const showStructure = (dict: unknown, name: string) => {
    try {
      studio.setStructure(fromDict(dict), { name });
    } catch {
      // a structure the viewer cannot take does not stop the plots
    }
  };

  const loadDos = async () => {
    if (!files.vasprun) return;
    const params = { emin: -20, emax: 20, sigma_ev: Number(sigma.value) || 0 };
    try {
      dos = await post<DosResponse>("/api/dos", { vasprun: files.vasprun }, { ...params, mode: "projected" });
    } catch (e) {
      if (!(e instanceof ApiError && e.code === "NO_PROJECTIONS")) throw e;
      dos = await post<DosResponse>("/api/dos", { vasprun: files.vasprun }, { ...params, mode: "total" });
    }
  };

  const refresh = async () => {
    fileList.textContent = `Files: ${Object.entries(files)
      .map(([role, f]) => `${role} = ${f?.name}`)
      .join(", ")}`;
    status("Analysing…");
    const warnings: string[] = [];
    try {
      if (files.vasprun) {
        const kp = files.kpoints ? { kpoints: files.kpoints } : {};
        [bands] = await Promise.all([
          post<BandsResponse>("/api/bands", { vasprun: files.vasprun, ...kp }, { emin: -20, emax: 20 }),
          loadDos(),
        ]);
        warnings.push(...bands.warnings);
        const g = bands.band_gap;
        gapLine.textContent = bands.is_metal
          ? "Metal: no band gap"
          : `Band gap ${g.energy_ev.toFixed(3)} eV (${g.direct ? "direct" : "indirect"}${g.transition ? `, ${prettyLabel(g.transition)}` : ""})`;
        gapLine.dataset.gap = String(g.energy_ev);
        showStructure(bands.structure, files.vasprun.name);
      }
      if (files.cohpcar) {
        const extra: Partial<Record<AnalysisRole, File>> = {};
        if (files.icohplist) extra.icohplist = files.icohplist;
        if (files.structure) extra.structure = files.structure;
        cohp = await post<CohpResponse>("/api/cohp", { cohpcar: files.cohpcar, ...extra }, { emin: -20, emax: 20 });
        if (!selectedBonds.length) {
          const strongest = [...cohp.bonds].sort((a, b) => (a.icohp_ev ?? 0) - (b.icohp_ev ?? 0))[0];
          selectedBonds = strongest ? [strongest.label] : [];
        }
        if (cohp.structure) showStructure(cohp.structure, files.cohpcar.name);
      }
      status(warnings.join(" ") || "Done");
    } catch (e) {
      status(`${e instanceof ApiError ? `${e.code}: ` : ""}${(e as Error).message}`, true);
    }
    if (!dialog.open) dialog.showModal();
    if (!fat) renderFatChoices();
    drawBands();
    drawDos();
    renderToggles();
    cohpSection.hidden = !cohp;
    drawCohp();
    renderBondTable();
    exportButtons();
  };

  const open = async (list: File[]): Promise<boolean> => {
    const lobster = list.some((f) => analysisRole(f.name) === "cohpcar" || analysisRole(f.name) === "icohplist");
    let any = false;
    for (const f of list) {
      const role = analysisRole(f.name) ?? (lobster && isStructureFile(f.name) ? "structure" : undefined);
      if (!role) continue;
      any = true;
      files[role] = f;
      if (role === "vasprun") {
        bands = dos = undefined;
        fat = undefined;
      }
      if (role === "cohpcar") {
        cohp = undefined;
        selectedBonds = [];
      }
    }
    if (!any) return false;
    openBtn.disabled = false;
    await refresh();
    return true;
  };

  picker.onchange = () => void open(Array.from(picker.files ?? []));
  openBtn.onclick = () => dialog.showModal();
  close.onclick = () => dialog.close();
  sigma.onchange = async () => {
    try {
      await loadDos();
      drawDos();
    } catch (e) {
      status((e as Error).message, true);
    }
  };
  // Analysis files dropped anywhere are ours; other files go on to the viewer's own drop handler.
  window.addEventListener(
    "drop",
    (e) => {
      const list = Array.from(e.dataTransfer?.files ?? []);
      if (!list.some((f) => analysisRole(f.name))) return;
      e.preventDefault();
      e.stopPropagation();
      void open(list);
    },
    { capture: true },
  );
  dialog.addEventListener("dragover", (e) => e.preventDefault());
  return { open };
};
