/**
 * uPlot charts of the analysis responses: bands along the k-path (labelled ticks, the gap shaded,
 * optionally "fat bands": a projection's weight drawn on the band lines as discs whose radius and
 * opacity grow with the weight, as pymatgen's BSPlotterProjected does), the DOS with energy upwards
 * so it sits beside the bands on the same energy axis, and -COHP.
 */
import uPlot from "uplot";
import { prettyLabel } from "./files.ts";

export interface BandsResponse {
  efermi_ev: number;
  is_metal: boolean;
  is_spin_polarized: boolean;
  band_indices: number[];
  band_gap: {
    energy_ev: number;
    direct: boolean;
    transition: string | null;
    vbm: { energy_ev: number; kpoint_index: number[] } | null;
    cbm: { energy_ev: number; kpoint_index: number[] } | null;
  };
  kpath: {
    distances: number[];
    ticks: Array<{ distance: number; label: string; index: number }>;
    branches: Array<{ start_index: number; end_index: number }>;
  };
  bands: { up: number[][]; down?: number[][] };
  projections?: BandProjection[];
  structure: unknown;
  warnings: string[];
}

/** One projection group of /api/bands: summed weights [band][k] for the bands in band_indices. */
export interface BandProjection {
  label: string;
  sites: number[];
  orbitals: string[];
  up: number[][];
  down?: number[][];
}

/** A projection drawn on the bands, in a colour. */
export interface FatBands {
  projection: BandProjection;
  color: string;
}

/** Largest disc radius (CSS px) of a fat-band marker, at weight 1. */
const FAT_RADIUS = 7;
/** Weights below this are not drawn (they would be invisible specks). */
const FAT_MIN_WEIGHT = 0.01;

export interface Spins {
  up: number[];
  down?: number[];
}
export interface DosResponse {
  efermi_ev: number;
  energies: number[];
  total: Spins;
  series: Array<Spins & { label: string }>;
  gap: { energy_ev: number; vbm_ev: number; cbm_ev: number };
  structure: unknown;
}
export interface CohpResponse {
  kind: string;
  sign_convention: string;
  energies: number[];
  bonds: Array<{
    label: string;
    atoms: string[] | null;
    elements: string[] | null;
    distance_ang: number;
    icohp_ev?: number;
  }>;
  series: Array<Spins & { label: string }>;
  structure?: unknown;
}

const COLORS = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7ea4", "#57606a"];
export const color = (i: number): string => COLORS[i % COLORS.length] as string;

/** Bands along the path with a null between branches, so a jump (K|U) is not drawn as a line. */
export const bandsData = (
  r: BandsResponse,
): { x: number[]; rows: number[]; series: Array<{ spin: "up" | "down"; band: number; y: (number | null)[] }> } => {
  const x: number[] = [];
  const rows: number[] = []; // k-point index per x, -1 for a break
  r.kpath.branches.forEach((b, n) => {
    if (n > 0) {
      x.push(r.kpath.distances[b.start_index] as number);
      rows.push(-1);
    }
    for (let k = b.start_index; k <= b.end_index; k++) {
      x.push(r.kpath.distances[k] as number);
      rows.push(k);
    }
  });
  const series: Array<{ spin: "up" | "down"; band: number; y: (number | null)[] }> = [];
  for (const spin of ["up", "down"] as const)
    for (const [i, band] of (r.bands[spin] ?? []).entries())
      series.push({ spin, band: i, y: rows.map((k) => (k < 0 ? null : (band[k] as number))) });
  return { x, rows, series };
};

/** The labels a plot's axis drew, kept on its element for tests and screen readers. */
const recordTicks = (el: HTMLElement, labels: string[]) => {
  el.dataset.ticks = JSON.stringify(labels);
};

export const plotBands = (
  el: HTMLElement,
  r: BandsResponse,
  range: [number, number],
  size: { width: number; height: number },
  fat?: FatBands,
): uPlot => {
  const { x, rows, series } = bandsData(r);
  const ticks = r.kpath.ticks;
  const gap = r.band_gap;
  const opts: uPlot.Options = {
    ...size,
    legend: { show: false },
    cursor: { drag: { x: false, y: true }, points: { show: false } },
    scales: { x: { time: false }, y: { range: () => range } },
    axes: [
      {
        splits: ticks.length ? () => ticks.map((t) => t.distance) : undefined,
        values: ticks.length
          ? (_u, splits) => {
              const labels = splits.map((s) => prettyLabel(ticks.find((t) => Math.abs(t.distance - s) < 1e-9)?.label ?? ""));
              recordTicks(el, labels);
              return labels;
            }
          : undefined,
        grid: { show: ticks.length > 0, stroke: "#999", width: 1 },
        label: ticks.length ? "" : "k-path length (1/Å)",
      },
      { label: "E − E_F (eV)" },
    ],
    series: [
      {},
      ...series.map((s) => ({
        stroke: s.spin === "up" ? "#1f6feb" : "#d1242f",
        width: 1.2,
        ...(s.spin === "down" ? { dash: [4, 3] } : {}),
        spanGaps: false,
        points: { show: false },
      })),
    ],
    hooks: {
      draw: [
        (u) => {
          const c = u.ctx;
          const left = u.bbox.left;
          const width = u.bbox.width;
          c.save();
          // E_F
          const yf = u.valToPos(0, "y", true);
          c.strokeStyle = "#888";
          c.setLineDash([5, 4]);
          c.beginPath();
          c.moveTo(left, yf);
          c.lineTo(left + width, yf);
          c.stroke();
          c.setLineDash([]);
          if (fat) drawFatBands(u, el, fat, series, rows);
          if (!r.is_metal && gap.vbm && gap.cbm) {
            // the gap: a shaded strip from the VBM to the CBM, and the two band edges marked
            const y0 = u.valToPos(gap.vbm.energy_ev, "y", true);
            const y1 = u.valToPos(gap.cbm.energy_ev, "y", true);
            c.fillStyle = "rgba(255, 196, 0, 0.18)";
            c.fillRect(left, y1, width, y0 - y1);
            const mark = (k: number, e: number, fill: string) => {
              c.fillStyle = fill;
              c.beginPath();
              c.arc(u.valToPos(r.kpath.distances[k] as number, "x", true), u.valToPos(e, "y", true), 5, 0, 2 * Math.PI);
              c.fill();
            };
            for (const k of gap.vbm.kpoint_index) mark(k, gap.vbm.energy_ev, "#1a7f37");
            for (const k of gap.cbm.kpoint_index) mark(k, gap.cbm.energy_ev, "#8250df");
          }
          c.restore();
        },
      ],
    },
  };
  el.dataset.ticks = "[]";
  delete el.dataset.fat;
  return new uPlot(opts, [x, ...series.map((s) => s.y)] as uPlot.AlignedData, el);
};

/**
 * Discs on the band lines, radius and opacity growing with the projection's weight (clipped to
 * the plot). What was drawn is kept on the element (`data-fat`: label, discs, summed weight) for
 * tests and screen readers.
 */
const drawFatBands = (
  u: uPlot,
  el: HTMLElement,
  fat: FatBands,
  series: Array<{ spin: "up" | "down"; band: number; y: (number | null)[] }>,
  rows: number[],
) => {
  const c = u.ctx;
  const ratio = devicePixelRatio || 1;
  c.save();
  c.beginPath();
  c.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  c.clip();
  c.fillStyle = fat.color;
  let discs = 0;
  let sum = 0;
  for (const s of series) {
    const weights = fat.projection[s.spin]?.[s.band];
    if (!weights) continue;
    for (const [i, k] of rows.entries()) {
      const e = s.y[i];
      if (k < 0 || e === null || e === undefined) continue;
      const w = weights[k] as number;
      sum += w;
      if (w < FAT_MIN_WEIGHT) continue;
      const clamped = Math.min(1, w);
      c.globalAlpha = 0.25 + 0.5 * clamped;
      c.beginPath();
      c.arc(
        u.valToPos(u.data[0][i] as number, "x", true),
        u.valToPos(e, "y", true),
        FAT_RADIUS * clamped * ratio,
        0,
        2 * Math.PI,
      );
      c.fill();
      discs++;
    }
  }
  c.restore();
  el.dataset.fat = JSON.stringify({ label: fat.projection.label, discs, sum });
};

/** Densities with energy upwards (uPlot's x scale turned vertical); spin down drawn negative. */
export const plotVertical = (
  el: HTMLElement,
  energies: number[],
  lines: Array<{ label: string; y: number[]; color: string; show?: boolean; dash?: number[] }>,
  range: [number, number],
  size: { width: number; height: number },
  valueLabel: string,
): uPlot =>
  new uPlot(
    {
      ...size,
      legend: { show: false },
      scales: { x: { time: false, ori: 1, dir: 1, range: () => range }, y: { ori: 0, dir: 1 } },
      axes: [
        { side: 3, label: "E − E_F (eV)" },
        { side: 2, label: valueLabel },
      ],
      series: [
        {},
        ...lines.map((l) => ({
          label: l.label,
          stroke: l.color,
          width: 1.3,
          show: l.show ?? true,
          points: { show: false },
          ...(l.dash ? { dash: l.dash } : {}),
        })),
      ],
    },
    [energies, ...lines.map((l) => l.y)] as uPlot.AlignedData,
    el,
  );
