/**
 * The optimization panel: calculator and optimizer pickers from GET /api/optimize/calculators,
 * frozen atoms from the selection, a live energy and fmax chart, the structure updating at each
 * step over the optimization WebSocket, cancel, and force arrows at the end. Undo after a run
 * returns to the structure before it (intermediate steps are not recorded).
 */
import { fromDict, type Structure } from "atomstudio-core";
import { apiFetch, storedToken } from "../auth.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";
import "./optimize.css";
import { type OptimizeMessage, runUffInWorker } from "./uff-client.ts";

interface CalculatorInfo {
  id: string;
  name: string;
  available: boolean;
  status_message: string | null;
  /** "browser": computed by the studio itself (UFF in a Web Worker), never by the service. */
  runs_in?: "server" | "browser";
}
interface OptimizerInfo {
  id: string;
  available: boolean;
  status_message?: string | null;
}
interface StepMsg {
  type: "step";
  step: number;
  energy: number;
  fmax: number;
  /** Absent on steps whose coordinates were not sent (the browser's UFF sends them at most every 50 ms). */
  structure?: unknown;
  converged: boolean;
}

/** A two-series line chart on a canvas: energy (left axis) and fmax (right axis, log). */
const drawChart = (canvas: HTMLCanvasElement, energy: number[], fmax: number[], threshold: number): void => {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const { width: w, height: ht } = canvas;
  ctx.clearRect(0, 0, w, ht);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, w, ht);
  if (energy.length === 0) return;
  const pad = 6;
  const x = (i: number) => pad + ((w - 2 * pad) * i) / Math.max(1, energy.length - 1);
  const series = (values: number[], color: string, transform: (v: number) => number) => {
    const t = values.map(transform);
    const lo = Math.min(...t);
    const hi = Math.max(...t);
    const y = (v: number) => ht - pad - ((ht - 2 * pad) * (v - lo)) / (hi - lo || 1);
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.beginPath();
    for (const [i, v] of t.entries()) {
      if (i) ctx.lineTo(x(i), y(v));
      else ctx.moveTo(x(i), y(v));
    }
    ctx.stroke();
    return y;
  };
  series(energy, "#1f6feb", (v) => v);
  const yf = series(fmax, "#d1242f", (v) => Math.log10(Math.max(v, 1e-12)));
  const yt = yf(Math.log10(threshold));
  if (yt >= 0 && yt <= ht) {
    ctx.strokeStyle = "#d1242f55";
    ctx.setLineDash([4, 4]);
    ctx.beginPath();
    ctx.moveTo(0, yt);
    ctx.lineTo(w, yt);
    ctx.stroke();
    ctx.setLineDash([]);
  }
};

const SHOW_INTERVAL_MS = 100;
const REDRAW_SPACING = 4;

export const mountOptimizePanel = (el: HTMLElement, studio: Studio): void => {
  el.classList.add("optimize-panel");
  const calc = h("select", { id: "opt-calculator", title: "calculator" });
  const optimizer = h("select", { id: "opt-optimizer", title: "optimizer" });
  const fmax = h("input", { id: "opt-fmax", type: "number", value: "0.05", step: "0.01", min: "0.0001", title: "fmax, eV/Å" });
  const steps = h("input", { id: "opt-steps", type: "number", value: "200", min: "1", title: "max steps" });
  const cell = h("input", { id: "opt-cell", type: "checkbox" });
  const freeze = h("input", { id: "opt-freeze", type: "checkbox" });
  const run = h("button", { id: "opt-run", type: "button" }, "Relax");
  const cancel = h("button", { id: "opt-cancel", type: "button", disabled: "" }, "Cancel");
  const chart = h("canvas", { id: "opt-chart", width: "260", height: "90" });
  const info = h("div", { id: "opt-status", class: "opt-status" }, "Loading calculators…");
  const row = (...kids: Node[]) => {
    const d = h("div", { class: "row" });
    d.append(...kids);
    return d;
  };
  const label = (text: string, input: HTMLElement) => {
    const l = h("label", {}, text);
    l.append(input);
    return l;
  };
  const legend = h("div", { class: "legend" });
  legend.append(
    h("span", { class: "e" }, "energy"),
    " and ",
    h("span", { class: "f" }, "fmax (log)"),
    " per step; dashed: fmax target",
  );
  el.append(
    h("h3", {}, "Optimize"),
    label("Calculator", calc),
    label("Optimizer", optimizer),
    row(label("fmax ", fmax), label("max steps ", steps)),
    row(label("relax cell ", cell), label("freeze selected ", freeze)),
    row(run, cancel),
    chart,
    legend,
    info,
  );

  const say = (text: string, error = false) => {
    info.textContent = text;
    info.classList.toggle("error", error);
  };

  const browserSide = new Set<string>();
  void apiFetch("/api/optimize/calculators")
    .then((r) => r.json() as Promise<{ calculators: CalculatorInfo[]; optimizers: OptimizerInfo[] }>)
    .then(({ calculators, optimizers }) => {
      for (const c of calculators) {
        if (c.runs_in === "browser") browserSide.add(c.id);
        const o = h(
          "option",
          { value: c.id, ...(c.available ? {} : { disabled: "", title: c.status_message ?? "" }) },
          c.available ? c.name : `${c.name} (unavailable)`,
        );
        calc.append(o);
      }
      const firstAvailable = calculators.find((c) => c.available);
      if (firstAvailable) calc.value = firstAvailable.id;
      for (const o of optimizers)
        optimizer.append(
          h("option", { value: o.id, ...(o.available ? {} : { disabled: "", title: o.status_message ?? "" }) }, o.id),
        );
      optimizer.value = "bfgs";
      say(firstAvailable ? "Ready" : "No calculator is available on this service", !firstAvailable);
    })
    .catch((e: Error) => say(`Could not list calculators: ${e.message}`, true));

  let socket: WebSocket | null = null;
  let browserRun: { cancel(): void } | null = null;
  const setRunning = (on: boolean) => {
    run.disabled = on;
    cancel.disabled = !on;
    el.dataset.running = on ? "true" : "false";
  };

  run.onclick = () => {
    const start = studio.api.getStructure();
    if (!start) return say("No structure loaded", true);
    const energies: number[] = [];
    const fmaxes: number[] = [];
    const threshold = Number(fmax.value);
    let recorded = false;
    /** When the browser's UFF Worker was started (performance.now()); null for a service run. */
    let workerStartedAt: number | null = null;
    const history: Structure[] = [];
    const show = (dict: unknown) => {
      // The first structure shown records the pre-run one for undo; later ones only redraw.
      const s = fromDict(dict);
      studio.store.set(s, { record: !recorded, keepView: true });
      recorded = true;
    };
    // Steps can arrive faster than the viewer redraws (the browser's UFF): the chart takes every
    // step, the structure is redrawn at most every SHOW_INTERVAL_MS, and the final one always.
    // A redraw also waits REDRAW_SPACING times as long as the last one took, so redraws take at
    // most a fifth of the page's time: software WebGL (headless Chromium, no GPU) can take hundreds
    // of milliseconds a frame, and a page busy redrawing handles the run's messages that much later.
    let pending: unknown = null;
    let timer: ReturnType<typeof setTimeout> | null = null;
    // The first redraw is spaced from the start by what drawing the structure last took.
    let shownAt = performance.now();
    let redrawTook = studio.viewer.lastLoadMs;
    const showSoon = (dict: unknown) => {
      pending = dict;
      if (timer) return;
      const wait = Math.max(0, shownAt + Math.max(SHOW_INTERVAL_MS, REDRAW_SPACING * redrawTook) - performance.now());
      timer = setTimeout(() => {
        timer = null;
        const began = performance.now();
        show(pending);
        shownAt = performance.now();
        redrawTook = shownAt - began;
      }, wait);
    };
    let lastStepHadStructure = false;
    let drawTimer: ReturnType<typeof setTimeout> | null = null;
    const drawSoon = () => {
      drawTimer ??= setTimeout(() => {
        drawTimer = null;
        drawChart(chart, energies, fmaxes, threshold);
      }, SHOW_INTERVAL_MS / 2);
    };
    const flush = () => {
      if (timer) clearTimeout(timer);
      timer = null;
      if (drawTimer) clearTimeout(drawTimer);
      drawTimer = null;
      drawChart(chart, energies, fmaxes, threshold);
    };
    const handle = (m: OptimizeMessage) => {
      if (m.type === "queued") say(`Waiting for a calculator worker (position ${m.position})`);
      else if (m.type === "step") {
        const s = m as unknown as StepMsg;
        energies.push(s.energy);
        fmaxes.push(s.fmax);
        drawSoon();
        // Every step sent with coordinates goes into the history (the viewer may skip some): it
        // becomes a playable trajectory.
        if (s.structure) history.push(fromDict(s.structure));
        lastStepHadStructure = !!s.structure;
        // The first step is the starting structure, already on screen.
        if (s.structure && energies.length > 1) showSoon(s.structure);
        el.dataset.steps = String(energies.length);
        say(`step ${s.step}: E = ${s.energy.toFixed(5)} eV, fmax = ${s.fmax.toExponential(2)} eV/Å`);
      } else if (m.type === "result" || m.type === "cancelled") {
        // The minimisation's wall time as the page sees it: from the request (a fresh Web Worker's
        // start, or the kept one's) to the result message here, before the final redraw
        // (bench/uff.ts reports it apart from the redraw).
        if (m.type === "result" && workerStartedAt !== null)
          el.dataset.workerSeconds = String((performance.now() - workerStartedAt) / 1000);
        flush();
        // Force arrows on before the final redraw, so it draws them (one redraw, not two).
        if (m.type === "result") studio.viewer.options = { ...studio.viewer.options, showForces: true };
        if (m.structure) show(m.structure);
        else if (pending) show(pending);
        // The history ends at the structure shown, also when the last step came without coordinates.
        if (m.type === "result" && m.structure && !lastStepHadStructure) history.push(fromDict(m.structure));
        el.dataset.result = m.type === "result" ? (m.converged ? "converged" : "not-converged") : "cancelled";
        if (m.type === "result") el.dataset.energy = String(m.energy);
        if (m.type === "result" && typeof m.compute_seconds === "number") el.dataset.computeSeconds = String(m.compute_seconds);
        say(
          m.type === "cancelled"
            ? "Cancelled"
            : `${m.converged ? "Converged" : "Not converged"} after ${m.steps} steps: E = ${(m.energy as number).toFixed(5)} eV, fmax = ${(m.fmax as number).toExponential(2)} eV/Å`,
        );
        // The history becomes a playable trajectory in the trajectory panel.
        el.dispatchEvent(
          new CustomEvent("atomstudio:trajectory", { bubbles: true, detail: { frames: history, name: "optimization" } }),
        );
        socket?.close();
      } else if (m.type === "error") {
        flush();
        el.dataset.result = "error";
        say(`${m.code}: ${m.error}`, true);
        socket?.close();
      }
    };
    el.dataset.result = "";
    el.dataset.energy = "";
    el.dataset.workerSeconds = "";
    const frozen = freeze.checked ? studio.api.getSelection().selected_indices : [];
    if (browserSide.has(calc.value)) {
      // UFF: computed here, in a Web Worker, with the same messages as the service's WebSocket.
      setRunning(true);
      say("Starting UFF in the browser…");
      workerStartedAt = performance.now();
      const runHere = runUffInWorker(
        { structure: start, fmax: threshold, max_steps: Number(steps.value), frozen_atoms: frozen, optimize_cell: cell.checked },
        handle,
      );
      browserRun = runHere;
      void runHere.done.then(() => {
        browserRun = null;
        setRunning(false);
      });
      return;
    }
    const token = storedToken();
    socket = new WebSocket(
      `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/optimize/ws${token ? `?token=${encodeURIComponent(token)}` : ""}`,
    );
    setRunning(true);
    say("Starting…");
    socket.onopen = () =>
      socket?.send(
        JSON.stringify({
          action: "start",
          structure: start,
          calculator: calc.value,
          optimizer: optimizer.value,
          fmax: threshold,
          max_steps: Number(steps.value),
          optimize_cell: cell.checked,
          frozen_atoms: frozen,
        }),
      );
    socket.onmessage = (ev) => handle(JSON.parse(String(ev.data)) as OptimizeMessage);
    socket.onclose = () => setRunning(false);
    socket.onerror = () => say("Connection to the service lost", true);
  };
  cancel.onclick = () => {
    if (browserRun) browserRun.cancel();
    else socket?.send(JSON.stringify({ action: "cancel" }));
  };
};
