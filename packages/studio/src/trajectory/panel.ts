/**
 * The trajectory panel: open a trajectory (XDATCAR, extended XYZ, multi-model PDB, LAMMPS dump;
 * gzip too) or take the optimization's history, and play it (play/pause, frame slider, speed,
 * loop); plot RDF with its coordination number, RMSD over time, H-bonds per frame and the frame
 * clustering (2D embedding coloured by cluster, jump to a cluster's medoid) from the service's
 * `/api/md/*` routes. Frames are read by the same core reader the service runs; playback moves
 * the drawn atoms in place (no scene rebuild), so 1,000 atoms step at well over 30 frames/s.
 */
import { bytesToText, readTrajectory, type Structure, Trajectory, toDict } from "atomstudio-core";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { postJson } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";
import "./trajectory.css";

/** The file as the MD routes take it. */
interface WireFile {
  content: string;
  filename?: string;
  encoding: "text" | "base64";
}

const toBase64 = (bytes: Uint8Array): string => {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
};

const CLUSTER_COLOURS = [
  "#1f77b4",
  "#ff7f0e",
  "#2ca02c",
  "#d62728",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#7f7f7f",
  "#bcbd22",
  "#17becf",
];

export interface TrajectoryPanel {
  /** Show a trajectory; `file` is what the analyses send to the service (frames are sent when null). */
  load(t: Trajectory, name: string, file: WireFile | null, opts?: { adopt?: boolean }): void;
  /** Open a dropped or picked file when it holds several frames; false for a single structure. */
  offer(file: File): Promise<boolean>;
  readonly trajectory: Trajectory | null;
}

export const mountTrajectoryPanel = (el: HTMLElement, studio: Studio): TrajectoryPanel => {
  el.classList.add("trajectory-panel");
  el.setAttribute("aria-labelledby", "traj-title");
  const fileInput = h("input", { type: "file", id: "traj-file", hidden: "" }) as HTMLInputElement;
  const open = h(
    "button",
    { id: "traj-open", type: "button", title: "XDATCAR, extended XYZ, multi-model PDB, LAMMPS dump (.gz too)" },
    "Open trajectory…",
  );
  const info = h("div", { id: "traj-info" }, "No trajectory");
  const play = h("button", { id: "traj-play", type: "button", disabled: "" }, "Play") as HTMLButtonElement;
  const prev = h("button", { id: "traj-prev", type: "button", title: "previous frame", disabled: "" }, "◀") as HTMLButtonElement;
  const next = h("button", { id: "traj-next", type: "button", title: "next frame", disabled: "" }, "▶") as HTMLButtonElement;
  const slider = h("input", {
    id: "traj-slider",
    type: "range",
    min: "0",
    max: "0",
    value: "0",
    "aria-label": "frame",
    disabled: "",
  }) as HTMLInputElement;
  const frameLabel = h("span", { id: "traj-frame" }, "0 / 0");
  const fps = h("select", { id: "traj-fps", "aria-label": "frames per second" }) as HTMLSelectElement;
  for (const v of [2, 5, 10, 30, 60]) fps.add(new Option(`${v} fps`, String(v), v === 10, v === 10));
  const loop = h("input", { id: "traj-loop", type: "checkbox", checked: "" }) as HTMLInputElement;
  const selA = h("input", {
    id: "traj-sel-a",
    class: "sel",
    value: "O",
    title: "elements of group A (RDF), or of the RMSD/clustering selection; empty = all",
  }) as HTMLInputElement;
  const selB = h("input", { id: "traj-sel-b", class: "sel", value: "O", title: "elements of group B (RDF)" }) as HTMLInputElement;
  const rdfBtn = h("button", { id: "traj-rdf", type: "button", disabled: "" }, "RDF") as HTMLButtonElement;
  const rmsdBtn = h("button", { id: "traj-rmsd", type: "button", disabled: "" }, "RMSD") as HTMLButtonElement;
  const hbBtn = h("button", { id: "traj-hbonds", type: "button", disabled: "" }, "H-bonds") as HTMLButtonElement;
  const clBtn = h("button", { id: "traj-cluster", type: "button", disabled: "" }, "Clusters") as HTMLButtonElement;
  const clMethod = h("select", { id: "traj-cluster-method", "aria-label": "clustering method" }) as HTMLSelectElement;
  for (const [v, label] of [
    ["agglomerative", "agglomerative"],
    ["hdbscan", "HDBSCAN"],
    ["dbscan", "DBSCAN"],
    ["kmeans", "k-means"],
  ])
    clMethod.add(new Option(label, v));
  const chart = h("div", { id: "traj-chart", class: "chart" });
  const embedding = h("canvas", { id: "traj-embedding", class: "embedding", hidden: "" }) as HTMLCanvasElement;
  const clusters = h("div", { id: "traj-clusters", class: "clusters" });
  const statusLine = h("div", { id: "traj-status", class: "traj-status", role: "status" });
  el.append(
    h("h2", { id: "traj-title" }, "Trajectory"),
    h("div", { class: "row" }, open, fileInput),
    info,
    h("div", { class: "row" }, prev, play, next, slider, frameLabel),
    h("div", { class: "row" }, h("label", {}, "speed ", fps), h("label", {}, loop, " loop")),
    h("div", { class: "row" }, h("label", {}, "A ", selA), h("label", {}, "B ", selB)),
    h("div", { class: "row" }, rdfBtn, rmsdBtn, hbBtn, clBtn, clMethod),
    statusLine,
    chart,
    embedding,
    clusters,
  );
  const say = (text: string, error = false): void => {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", error);
  };

  let traj: Trajectory | null = null;
  let wire: WireFile | null = null;
  let frame = 0;
  let playing = false;
  let plot: uPlot | null = null;
  let last = 0;
  let raf = 0;
  let stepMs = 0;

  const controls = [play, prev, next, slider, rdfBtn, rmsdBtn, hbBtn, clBtn];

  const show = (f: number, draw = true): void => {
    if (!traj) return;
    frame = Math.max(0, Math.min(traj.nFrames - 1, f));
    // Move atoms in place; a frame that does not fit the drawn scene (other cell) is loaded whole.
    if (draw && !studio.viewer.setSitePositions(traj.frameCoords(frame), traj.cell(frame)))
      studio.viewer.load(traj.frame(frame), { keepView: true });
    slider.value = String(frame);
    frameLabel.textContent = `${frame + 1} / ${traj.nFrames}${traj.times ? ` (${(traj.times[frame] as number).toFixed(3)} ps)` : ""}`;
    el.dataset.frame = String(frame);
  };

  /** The store follows the shown frame whenever playback rests (tools and export see it). */
  const settle = (): void => {
    if (traj) studio.store.set(traj.frame(frame), { record: false, keepView: true });
  };

  const tick = (now: number): void => {
    if (!playing || !traj) return;
    const interval = 1000 / Number(fps.value);
    if (now - last >= interval) {
      // Keep real time: when drawing falls behind the chosen speed, skip frames rather than slow down.
      const steps = last ? Math.max(1, Math.floor((now - last) / interval)) : 1;
      last = now;
      let target = frame + steps;
      if (target >= traj.nFrames) {
        if (!loop.checked) {
          show(traj.nFrames - 1);
          setPlaying(false);
          return;
        }
        target %= traj.nFrames;
      }
      const t0 = performance.now();
      show(target);
      // What one step costs the studio (moving atoms and the WebGL draw call), for tests and tuning.
      stepMs += performance.now() - t0;
      el.dataset.shown = String(Number(el.dataset.shown ?? 0) + 1);
      el.dataset.stepMs = (stepMs / Number(el.dataset.shown)).toFixed(2);
      el.dataset.advanced = String(Number(el.dataset.advanced ?? 0) + steps);
    }
    raf = requestAnimationFrame(tick);
  };

  const setPlaying = (on: boolean): void => {
    playing = on && !!traj;
    play.textContent = playing ? "Pause" : "Play";
    el.dataset.playing = String(playing);
    cancelAnimationFrame(raf);
    if (playing) {
      last = 0;
      raf = requestAnimationFrame(tick);
    } else settle();
  };

  play.onclick = () => setPlaying(!playing);
  prev.onclick = () => {
    setPlaying(false);
    show(frame - 1);
    settle();
  };
  next.onclick = () => {
    setPlaying(false);
    show(frame + 1);
    settle();
  };
  slider.oninput = () => show(Number(slider.value));
  slider.onchange = () => settle();

  const load = (t: Trajectory, name: string, file: WireFile | null, opts: { adopt?: boolean } = {}): void => {
    playing = false;
    cancelAnimationFrame(raf);
    play.textContent = "Play";
    traj = t;
    wire = file;
    // The optimizer's history ends at the structure already shown (with its forces): adopt it as
    // the last frame, so undo still returns to the structure before the run.
    if (!opts.adopt) studio.store.set(t.frame(0), { name });
    slider.max = String(t.nFrames - 1);
    for (const c of controls) c.disabled = false;
    info.textContent = `${name}: ${t.nFrames} frames × ${t.nAtoms} atoms${t.hasCell ? "" : " (no cell)"}`;
    el.dataset.nFrames = String(t.nFrames);
    el.dataset.shown = "0";
    el.dataset.advanced = "0";
    stepMs = 0;
    const elements = [...new Set(t.elements)];
    if (!elements.includes(selA.value)) selA.value = elements.includes("O") ? "O" : (elements[0] ?? "");
    if (!elements.includes(selB.value)) selB.value = selA.value;
    // An adopted history's last frame is what the viewer shows already: no redraw.
    show(opts.adopt ? t.nFrames - 1 : 0, !opts.adopt);
    say(`${t.nFrames} frames loaded`);
  };

  const readFile = async (f: File): Promise<{ t: Trajectory; wire: WireFile }> => {
    const bytes = new Uint8Array(await f.arrayBuffer());
    const text = bytesToText(bytes, { maxBytes: 512 * 1024 * 1024 });
    const { trajectory } = readTrajectory(text, { filename: f.name });
    const compressed = bytes[0] === 0x1f && bytes[1] === 0x8b;
    return {
      t: trajectory,
      wire: compressed
        ? { content: toBase64(bytes), filename: f.name, encoding: "base64" }
        : { content: text, filename: f.name, encoding: "text" },
    };
  };

  const openFile = async (f: File): Promise<void> => {
    try {
      const r = await readFile(f);
      load(r.t, f.name, r.wire);
    } catch (e) {
      say(`Could not open ${f.name}: ${(e as Error).message}`, true);
    }
  };
  open.onclick = () => fileInput.click();
  fileInput.onchange = () => {
    const f = fileInput.files?.[0];
    if (f) void openFile(f);
    fileInput.value = "";
  };

  // The optimization panel announces its history; it becomes a playable trajectory.
  document.addEventListener("atomstudio:trajectory", (ev) => {
    const d = (ev as CustomEvent<{ frames: Structure[]; name: string }>).detail;
    try {
      if (d.frames.length > 1) {
        const t = Trajectory.fromStructures(d.frames);
        load(t, d.name, null, { adopt: true });
      }
    } catch (e) {
      say(`History not playable: ${(e as Error).message}`, true);
    }
  });

  const elementsOf = (input: HTMLInputElement): string[] | undefined => {
    const list = input.value.split(/[\s,]+/).filter(Boolean);
    return list.length ? list : undefined;
  };

  /** The trajectory as the routes take it: the file, or frames as dictionaries (the optimizer's history). */
  const source = (): Record<string, unknown> => {
    if (wire) return { trajectory: wire };
    const t = traj as Trajectory;
    return { frames: Array.from({ length: t.nFrames }, (_, f) => toDict(t.frame(f))) };
  };

  const call = async (route: string, body: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const r = await postJson(`/api/md/${route}`, { ...source(), ...body });
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${json.code}: ${json.error}`);
    return json;
  };

  const drawLines = (
    title: string,
    x: number[],
    series: { label: string; y: number[]; scale?: string; color: string }[],
    xLabel: string,
  ): void => {
    plot?.destroy();
    embedding.hidden = true;
    clusters.textContent = "";
    const width = Math.max(220, chart.clientWidth || el.clientWidth - 8);
    plot = new uPlot(
      {
        title,
        width,
        height: 180,
        scales: { x: { time: false } },
        axes: [
          { label: xLabel },
          { label: series[0]?.label ?? "" },
          ...(series.some((s) => s.scale)
            ? [{ scale: "right", side: 1, label: series.find((s) => s.scale)?.label ?? "", grid: { show: false } }]
            : []),
        ],
        series: [
          { label: xLabel },
          ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, ...(s.scale ? { scale: s.scale } : {}) })),
        ],
      },
      [x, ...series.map((s) => s.y)],
      chart,
    );
  };

  const busy = async (what: string, fn: () => Promise<void>): Promise<void> => {
    say(`${what}…`);
    el.dataset.analysis = "running";
    try {
      await fn();
      el.dataset.analysis = what;
    } catch (e) {
      el.dataset.analysis = "error";
      say(`${what} failed: ${(e as Error).message}`, true);
    }
  };

  rdfBtn.onclick = () =>
    void busy("rdf", async () => {
      const a = elementsOf(selA);
      const b = elementsOf(selB);
      const r = await call("rdf", {
        ...(a ? { selection_a: { elements: a } } : {}),
        ...(b ? { selection_b: { elements: b } } : {}),
      });
      const peak = r.first_peak as { r: number; g: number; coordination_number: number };
      drawLines(
        `g(r) ${a?.join(",") ?? "all"}–${b?.join(",") ?? "all"}`,
        r.r as number[],
        [
          { label: "g(r)", y: r.g as number[], color: "#1f6feb" },
          { label: "n(r)", y: r.coordination_number as number[], scale: "right", color: "#d1242f" },
        ],
        "r (Å)",
      );
      chart.dataset.peak = String(peak.r);
      say(`first peak at ${peak.r.toFixed(3)} Å, g = ${peak.g.toFixed(2)}, n = ${peak.coordination_number.toFixed(2)}`);
    });

  rmsdBtn.onclick = () =>
    void busy("rmsd", async () => {
      const a = elementsOf(selA);
      const r = await call("rmsd", a ? { selection: { elements: a } } : {});
      const x = (r.time_ps as number[] | null) ?? (r.frames as number[]);
      drawLines(
        `RMSD${r.fit ? " (fitted)" : ""}`,
        x,
        [{ label: "RMSD (Å)", y: r.rmsd_ang as number[], color: "#1f6feb" }],
        r.time_ps ? "t (ps)" : "frame",
      );
      say(`RMSD of ${r.n_selected} atoms, last frame ${(r.rmsd_ang as number[]).at(-1)?.toFixed(3)} Å`);
    });

  hbBtn.onclick = () =>
    void busy("hbonds", async () => {
      const r = await call("hbonds", { max_listed: 0 });
      const x = (r.time_ps as number[] | null) ?? (r.frames as number[]);
      drawLines(
        "hydrogen bonds",
        x,
        [{ label: "H-bonds", y: (r.counts as number[]).map(Number), color: "#2ca02c" }],
        r.time_ps ? "t (ps)" : "frame",
      );
      say(`mean ${(r.mean_count as number).toFixed(2)} H-bonds per frame`);
    });

  clBtn.onclick = () =>
    void busy("clustering", async () => {
      const t = traj as Trajectory;
      const a = elementsOf(selA);
      const step = Math.max(1, Math.ceil(t.nFrames / 1000));
      const r = await call("clustering", {
        ...(a ? { selection: { elements: a } } : {}),
        frames_range: { step },
        method: clMethod.value,
      });
      plot?.destroy();
      plot = null;
      drawEmbedding(r.embedding as number[][], r.labels as number[], r.frames as number[]);
      clusters.textContent = "";
      for (const c of r.clusters as { cluster: number; size: number; medoid_frame: number }[]) {
        const b = h(
          "button",
          { type: "button", "data-cluster": String(c.cluster), style: `border-color:${CLUSTER_COLOURS[c.cluster % 10]}` },
          `cluster ${c.cluster} (${c.size}) → frame ${c.medoid_frame + 1}`,
        );
        b.onclick = () => {
          setPlaying(false);
          show(c.medoid_frame);
          settle();
        };
        clusters.append(b);
      }
      say(`${r.n_clusters} clusters (${r.method}); click a point or a medoid to jump`);
    });

  const drawEmbedding = (pts: number[][], labels: number[], frames: number[]): void => {
    embedding.hidden = false;
    const w = embedding.clientWidth || 300;
    const ht = 160;
    embedding.width = w;
    embedding.height = ht;
    const ctx = embedding.getContext("2d");
    if (!ctx) return;
    ctx.clearRect(0, 0, w, ht);
    const xs = pts.map((p) => p[0] as number);
    const ys = pts.map((p) => p[1] as number);
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const px = (x: number) => 8 + ((x - x0) / (x1 - x0 || 1)) * (w - 16);
    const py = (y: number) => ht - 8 - ((y - y0) / (y1 - y0 || 1)) * (ht - 16);
    pts.forEach((p, i) => {
      ctx.fillStyle = (labels[i] as number) < 0 ? "#999" : (CLUSTER_COLOURS[(labels[i] as number) % 10] as string);
      ctx.beginPath();
      ctx.arc(px(p[0] as number), py(p[1] as number), 3, 0, 2 * Math.PI);
      ctx.fill();
    });
    embedding.onclick = (ev) => {
      const rect = embedding.getBoundingClientRect();
      const [mx, my] = [ev.clientX - rect.left, ev.clientY - rect.top];
      let best = 0;
      let bd = Infinity;
      pts.forEach((p, i) => {
        const d = (px(p[0] as number) - mx) ** 2 + (py(p[1] as number) - my) ** 2;
        if (d < bd) {
          bd = d;
          best = i;
        }
      });
      setPlaying(false);
      show(frames[best] as number);
      settle();
    };
  };

  return {
    load,
    async offer(f: File): Promise<boolean> {
      try {
        const r = await readFile(f);
        if (r.t.nFrames < 2) return false;
        load(r.t, f.name, r.wire);
        return true;
      } catch {
        return false;
      }
    },
    get trajectory() {
      return traj;
    },
  };
};
