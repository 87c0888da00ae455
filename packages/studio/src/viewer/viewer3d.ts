/**
 * The 3D viewer: 3Dmol.js driven through our scene (adapter.ts). Everything here speaks site
 * indices; the drawn-atom ↔ site map stays inside.
 */
import { createViewer, elementColors, type GLViewer } from "3dmol";
import type { Structure } from "atomstudio-core";
import { buildScene, type Scene } from "./adapter.ts";
import { DEFAULT_VIEW, type ViewOptions } from "./options.ts";

export { DEFAULT_VIEW, type ViewOptions };

export interface CaptureOptions {
  width: number;
  height: number;
  format: "png" | "jpeg" | "webp";
  quality?: number;
  transparent?: boolean;
  camera?: { rotation?: number[]; zoom?: number } | null;
}

export interface CaptureResult {
  /** base64 without the data: prefix */
  image: string;
  format: string;
  width: number;
  height: number;
}

/** Most labels drawn at once (beyond that only selected sites are labelled). */
export const MAX_LABELS = 500;
const MAX_ARROWS = 5000;
const SELECTED_COLOR = "#ff9900";

/** Quaternion [x, y, z, w] of Euler angles in degrees, applied about x, then y, then z (fixed axes). */
export const eulerQuaternion = (deg: readonly number[]): [number, number, number, number] => {
  const [hx, hy, hz] = [0, 1, 2].map((k) => (((deg[k] ?? 0) as number) * Math.PI) / 360) as [number, number, number];
  const [cx, sx, cy, sy, cz, sz] = [Math.cos(hx), Math.sin(hx), Math.cos(hy), Math.sin(hy), Math.cos(hz), Math.sin(hz)];
  // q = qz * qy * qx
  return [sx * cy * cz - cx * sy * sz, cx * sy * cz + sx * cy * sz, cx * cy * sz - sx * sy * cz, cx * cy * cz + sx * sy * sz];
};

/**
 * Whether WebGL here is drawn by the CPU (SwiftShader, llvmpipe: headless browsers, remote
 * desktops, machines without a GPU driver), where multisampling costs as much as the drawing.
 */
const softwareWebGL = (): boolean => {
  try {
    const gl = document.createElement("canvas").getContext("webgl2");
    if (!gl) return false;
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
    gl.getExtension("WEBGL_lose_context")?.loseContext();
    return /swiftshader|llvmpipe|softpipe|software/i.test(renderer);
  } catch {
    return false;
  }
};

/** A per-element look that overrides the defaults (the studio's legend). */
export interface ElementStyle {
  color?: string;
  radius?: number;
}

/** Something drawn over the structure: dashed segments through `points`, `text` at their middle. */
export interface Overlay {
  points: [number, number, number][];
  text: string;
}

/** A clickable point drawn over the structure (e.g. an adsorption site), not an atom. */
export interface Marker {
  position: [number, number, number];
  color: string;
  radius: number;
  onClick?: () => void;
}

/** 3Dmol's Jmol colour of an element (what atoms are drawn in unless overridden). */
export const defaultElementColor = (element: string): number | undefined =>
  (elementColors.Jmol as Record<string, number>)[element];

export class MolViewer {
  readonly viewer: GLViewer;
  readonly container: HTMLElement;
  options: ViewOptions = { ...DEFAULT_VIEW };
  scene: Scene | null = null;
  structure: Structure | null = null;
  selection = new Set<number>();
  /** Clicked site, with the click's modifier keys. */
  onPick: ((site: number, ev: { shiftKey: boolean; ctrlKey: boolean; metaKey: boolean }) => void) | undefined;
  // biome-ignore lint/suspicious/noExplicitAny: 3Dmol's model type is not exported by name
  #model: any = null;
  elementStyles = new Map<string, ElementStyle>();
  overlays: Overlay[] = [];
  /** Sites picked for a measurement in progress (drawn as halos). */
  picked: number[] = [];
  /** Clickable points drawn over the structure (feature panels' candidates, e.g. adsorption sites). */
  markers: Marker[] = [];
  /** The view after fitting, with no rotation: what reset_camera returns to. */
  #homeView: number[] | null = null;
  /**
   * How long the last load of a structure took, drawing included (ms): what a redraw costs here
   * (tens of ms with a GPU, hundreds with software WebGL), so callers can space their redraws.
   */
  lastLoadMs = 0;

  constructor(container: HTMLElement) {
    this.container = container;
    // WebGL antialiasing without 3Dmol's 2x supersampling ("upscale"): a quarter of the pixels,
    // which is what keeps software renderers (headless, remote desktops) usable on large cells.
    // A software renderer gets no multisampling either: 4x MSAA made each draw of 1,000 atoms
    // four times slower under SwiftShader (68 ms against 17 ms), too slow to play trajectories.
    this.viewer = createViewer(container, {
      backgroundColor: this.options.background,
      antialias: !softwareWebGL(),
      upscale: false,
    } as never);
    // Follow the container's size (layout changes, panels opening), not only window resizes.
    if (typeof ResizeObserver !== "undefined") new ResizeObserver(() => this.resize()).observe(container);
  }

  /** Show a structure. `keepView` keeps the camera (edits); otherwise the view is fitted. */
  load(structure: Structure | null, opts: { keepView?: boolean } = {}): void {
    const began = performance.now();
    this.#load(structure, opts);
    this.lastLoadMs = performance.now() - began;
  }

  #load(structure: Structure | null, opts: { keepView?: boolean }): void {
    const v = this.viewer;
    this.structure = structure;
    v.removeAllModels();
    this.#model = null;
    this.scene = null;
    this.selection = new Set([...this.selection].filter((i) => structure && i < structure.length));
    if (!structure) {
      this.#decorate();
      v.render();
      return;
    }
    const scene = buildScene(structure);
    this.scene = scene;
    const adj: number[][] = scene.atoms.map(() => []);
    for (const b of scene.bonds) {
      adj[b.a]!.push(b.b);
      adj[b.b]!.push(b.a);
    }
    const atoms = scene.atoms.map((a, i) => ({
      elem: a.elem,
      x: a.x,
      y: a.y,
      z: a.z,
      index: i,
      serial: i,
      bonds: adj[i],
      bondOrder: adj[i]!.map(() => 1),
      properties: { site: a.site, image: a.image },
    }));
    const model = v.addModel();
    model.addAtoms(atoms);
    this.#model = model;
    this.#style();
    model.setClickable({}, true, ((atom: { index: number }, _v: unknown, ev: MouseEvent) => {
      const site = scene.atomToSite[atom.index];
      if (site !== undefined) this.onPick?.(site, { shiftKey: !!ev?.shiftKey, ctrlKey: !!ev?.ctrlKey, metaKey: !!ev?.metaKey });
    }) as never);
    this.#decorate();
    if (!opts.keepView || !this.#homeView) this.resetCamera(false);
    v.render();
  }

  /**
   * Move the drawn atoms to new site positions without rebuilding the scene (trajectory
   * playback): the same atoms, periodic images and bonds, each atom at its site plus its image's
   * lattice translation. False when the positions do not fit the loaded structure, or `cell`
   * (9 numbers, rows a, b, c) is not the loaded one: then load the frame instead.
   */
  setSitePositions(cart: Float64Array, cell: ArrayLike<number> | null = null): boolean {
    const model = this.#model;
    const scene = this.scene;
    const s = this.structure;
    if (!model || !scene || !s || cart.length !== 3 * s.length) return false;
    const m = s.lattice?.matrix;
    if (cell && (!m || m.some((row, i) => row.some((v, k) => Math.abs(v - (cell[3 * i + k] as number)) > 1e-9)))) return false;
    const atoms = model.selectedAtoms({}) as { index: number; x: number; y: number; z: number }[];
    for (const a of atoms) {
      const sa = scene.atoms[a.index];
      if (!sa) continue;
      const o = 3 * sa.site;
      const [ta, tb, tc] = sa.offset;
      let [x, y, z] = [cart[o] as number, cart[o + 1] as number, cart[o + 2] as number];
      if (m && (ta || tb || tc)) {
        x += ta * m[0][0] + tb * m[1][0] + tc * m[2][0];
        y += ta * m[0][1] + tb * m[1][1] + tc * m[2][1];
        z += ta * m[0][2] + tb * m[1][2] + tc * m[2][2];
      }
      a.x = x;
      a.y = y;
      a.z = z;
    }
    // Mark the model's geometry stale (what 3Dmol's own setFrame does), so the render rebuilds it
    // at the new positions; the styles, bonds and periodic images stay as they are.
    model.molObj = null;
    this.viewer.render();
    return true;
  }

  setOptions(changes: Partial<ViewOptions>): void {
    const before = this.options;
    this.options = { ...before, ...changes };
    if (changes.background !== undefined) this.viewer.setBackgroundColor(this.options.background, 1);
    this.#style();
    this.#decorate();
    this.viewer.render();
  }

  /** Colour and radius overrides per element. */
  setElementStyles(styles: Map<string, ElementStyle>): void {
    this.elementStyles = new Map(styles);
    this.#style();
    this.viewer.render();
  }

  /** Measurements to draw, and the sites of one in progress. */
  setOverlays(overlays: Overlay[], picked: number[] = []): void {
    // No measurements before or after (the measure tool refreshes on every structure change, right
    // after the structure was drawn): nothing to redraw.
    if (!overlays.length && !picked.length && !this.overlays.length && !this.picked.length) return;
    this.overlays = overlays;
    this.picked = picked;
    this.#decorate();
    this.viewer.render();
  }

  /** Replace the clickable markers (an empty list removes them). */
  setMarkers(markers: Marker[]): void {
    this.markers = markers;
    this.#decorate();
    this.viewer.render();
  }

  /** Page coordinates (CSS pixels) of a marker's centre. */
  markerOnScreen(i: number): { x: number; y: number } | null {
    const m = this.markers[i];
    if (!m) return null;
    const [x, y, z] = m.position;
    return this.viewer.modelToScreen({ x, y, z }) as unknown as { x: number; y: number };
  }

  setSelection(sites: Iterable<number>): void {
    const next = new Set(sites);
    if (next.size === this.selection.size && [...next].every((i) => this.selection.has(i))) return;
    this.selection = next;
    this.#style();
    if (this.options.showLabels) this.#decorate();
    this.viewer.render();
  }

  #style(): void {
    const model = this.#model;
    if (!model || !this.scene) return;
    const o = this.options;
    const stick = o.showBonds
      ? { stick: { radius: o.bondRadius, ...(o.bondColor ? { color: o.bondColor } : { colorscheme: "Jmol" }) } }
      : {};
    const sphere = { colorscheme: "Jmol", ...(o.atomRadius ? { radius: o.atomRadius } : { scale: o.atomScale }) };
    const base = { ...(o.showAtoms ? { sphere } : {}), ...stick };
    model.setStyle({}, base);
    for (const [elem, st] of this.elementStyles) {
      if (st.color === undefined && st.radius === undefined) continue;
      const sp = {
        ...(st.color ? { color: st.color } : { colorscheme: "Jmol" }),
        ...(st.radius ? { radius: st.radius } : o.atomRadius ? { radius: o.atomRadius } : { scale: o.atomScale }),
      };
      model.setStyle({ elem }, { ...(o.showAtoms ? { sphere: sp } : {}), ...stick });
    }
    if (this.selection.size) {
      const sel = this.selection;
      const site = this.scene.atomToSite;
      model.setStyle({ predicate: (a: { index: number }) => sel.has(site[a.index] as number) } as never, {
        sphere: {
          ...(o.atomRadius ? { radius: o.atomRadius * 1.1 } : { scale: Math.max(o.atomScale, 0.3) * 1.1 }),
          color: SELECTED_COLOR,
        },
        ...stick,
      });
    }
  }

  /** Unit cell, labels and force arrows. */
  #decorate(): void {
    const v = this.viewer;
    v.removeAllShapes();
    v.removeAllLabels();
    const scene = this.scene;
    const s = this.structure;
    if (!scene || !s) return;
    const o = this.options;
    if (o.showCell)
      for (const [p, q] of scene.cellEdges)
        v.addCylinder({
          start: { x: p[0], y: p[1], z: p[2] },
          end: { x: q[0], y: q[1], z: q[2] },
          radius: 0.04,
          color: "#555555",
          fromCap: 1,
          toCap: 1,
        } as never);
    if (o.showLabels) {
      const sites = s.length <= MAX_LABELS ? [...Array(s.length).keys()] : [...this.selection].slice(0, MAX_LABELS);
      for (const i of sites) {
        const a = scene.atoms[scene.siteToAtom[i] as number]!;
        v.addLabel(`${a.elem}${i}`, {
          position: { x: a.x, y: a.y, z: a.z },
          fontSize: 11,
          fontColor: "black",
          backgroundColor: "white",
          backgroundOpacity: 0.6,
          inFront: true,
        } as never);
      }
    }
    for (const ov of this.overlays) {
      const pts = ov.points;
      for (let k = 0; k + 1 < pts.length; k++) {
        const [p, q] = [pts[k]!, pts[k + 1]!];
        v.addCylinder({
          start: { x: p[0], y: p[1], z: p[2] },
          end: { x: q[0], y: q[1], z: q[2] },
          radius: 0.035,
          color: "#0077cc",
          dashed: true,
          fromCap: 1,
          toCap: 1,
        } as never);
      }
      const mid = [0, 1, 2].map((c) => pts.reduce((acc, p) => acc + p[c]!, 0) / pts.length);
      v.addLabel(ov.text, {
        position: { x: mid[0], y: mid[1], z: mid[2] },
        fontSize: 12,
        fontColor: "white",
        backgroundColor: "#0077cc",
        backgroundOpacity: 0.85,
        inFront: true,
      } as never);
    }
    for (const site of this.picked) {
      const id = scene.siteToAtom[site];
      if (id === undefined) continue;
      const a = scene.atoms[id]!;
      v.addSphere({ center: { x: a.x, y: a.y, z: a.z }, radius: 0.7, color: "#0077cc", opacity: 0.35 } as never);
    }
    for (const m of this.markers) {
      const [x, y, z] = m.position;
      v.addSphere({
        center: { x, y, z },
        radius: m.radius,
        color: m.color,
        opacity: 0.85,
        clickable: !!m.onClick,
        callback: () => m.onClick?.(),
      } as never);
    }
    if (o.showForces) {
      const forces: [number, number[]][] = [];
      s.siteProperties.forEach((p, i) => {
        const f = (p as { forces?: unknown }).forces;
        if (Array.isArray(f) && f.length === 3 && f.every((x) => typeof x === "number")) forces.push([i, f as number[]]);
      });
      const maxF = forces.reduce((m, [, f]) => Math.max(m, Math.hypot(f[0]!, f[1]!, f[2]!)), 0);
      if (maxF > 0) {
        const scale = 1.5 / maxF;
        for (const [i, f] of forces.slice(0, MAX_ARROWS)) {
          const a = scene.atoms[scene.siteToAtom[i] as number]!;
          if (Math.hypot(f[0]!, f[1]!, f[2]!) * scale < 0.05) continue;
          v.addArrow({
            start: { x: a.x, y: a.y, z: a.z },
            end: { x: a.x + f[0]! * scale, y: a.y + f[1]! * scale, z: a.z + f[2]! * scale },
            radius: 0.06,
            color: "#d62728",
          } as never);
        }
      }
    }
  }

  /** Fit the structure with no rotation. */
  resetCamera(render = true): void {
    const v = this.viewer;
    v.setView([0, 0, 0, 0, 0, 0, 0, 1]);
    v.zoomTo();
    this.#homeView = v.getView();
    if (render) v.render();
  }

  /** Absolute rotation (degrees about x, y, z from the reset view); zoom relative to the fitted view. */
  setRotation(deg: readonly number[], zoom?: number, render = true): void {
    if (!this.#homeView) this.resetCamera(false);
    const home = this.#homeView as number[];
    const q = eulerQuaternion(deg);
    const current = this.viewer.getView();
    this.viewer.setView([home[0], home[1], home[2], zoom === undefined ? current[3] : home[3], ...q]);
    if (zoom !== undefined && zoom !== 1) this.viewer.zoom(zoom);
    if (render) this.viewer.render();
  }

  /** Sites whose drawn atoms fall inside a rectangle given in page coordinates (CSS pixels). */
  sitesInRect(x0: number, y0: number, x1: number, y1: number): number[] {
    const scene = this.scene;
    if (!scene) return [];
    const [lx, hx, ly, hy] = [Math.min(x0, x1), Math.max(x0, x1), Math.min(y0, y1), Math.max(y0, y1)];
    const screen = this.atomsOnScreen();
    const out = new Set<number>();
    screen.forEach((p, i) => {
      if (p.x >= lx && p.x <= hx && p.y >= ly && p.y <= hy) out.add(scene.atomToSite[i] as number);
    });
    return [...out].sort((a, b) => a - b);
  }

  /** Render at exactly width x height pixels in the format asked, then restore the live view. */
  capture(o: CaptureOptions): CaptureResult {
    const v = this.viewer;
    // Ask for the CSS size that gives exactly width x height canvas pixels at the renderer's pixel
    // ratio (the screen's, or 2 where 3Dmol upscales), so the image is rendered at the size asked.
    const dpr = (v.getRenderer() as { devicePixelRatio?: number }).devicePixelRatio || window.devicePixelRatio || 1;
    const saved = v.getView();
    const transparent = !!o.transparent && o.format !== "jpeg";
    try {
      if (transparent) v.setBackgroundColor(this.options.background, 0);
      v.setWidth(o.width / dpr);
      v.setHeight(o.height / dpr);
      if (o.camera) this.setRotation(o.camera.rotation ?? [0, 0, 0], o.camera.zoom ?? 1, false);
      v.render();
      const gl = v.getCanvas();
      let out: HTMLCanvasElement = gl;
      if (gl.width !== o.width || gl.height !== o.height || o.format === "jpeg") {
        out = document.createElement("canvas");
        out.width = o.width;
        out.height = o.height;
        const g = out.getContext("2d") as CanvasRenderingContext2D;
        if (o.format === "jpeg") {
          g.fillStyle = this.options.background;
          g.fillRect(0, 0, o.width, o.height);
        }
        g.drawImage(gl, 0, 0, o.width, o.height);
      }
      const url = out.toDataURL(`image/${o.format}`, o.quality ?? 0.92);
      const [, data = ""] = url.split(",", 2);
      if (!url.startsWith(`data:image/${o.format}`))
        throw Object.assign(new Error(`This browser cannot encode ${o.format}`), { code: "INVALID_FORMAT" });
      return { image: data, format: o.format, width: o.width, height: o.height };
    } finally {
      if (transparent) v.setBackgroundColor(this.options.background, 1);
      v.setView(saved);
      v.resize();
      v.render();
    }
  }

  /** Page coordinates (CSS pixels) of a site's own drawn atom. */
  siteOnScreen(site: number): { x: number; y: number } | null {
    const scene = this.scene;
    const id = scene?.siteToAtom[site];
    if (!scene || id === undefined) return null;
    const a = scene.atoms[id]!;
    return this.viewer.modelToScreen({ x: a.x, y: a.y, z: a.z }) as unknown as { x: number; y: number };
  }

  /** Page coordinates of every drawn atom (index = drawn atom). */
  atomsOnScreen(): { x: number; y: number }[] {
    const scene = this.scene;
    if (!scene) return [];
    return this.viewer.modelToScreen(scene.atoms.map((a) => ({ x: a.x, y: a.y, z: a.z }))) as { x: number; y: number }[];
  }

  /** Fit the viewer to its container after a layout change. */
  resize(): void {
    this.viewer.resize();
    this.viewer.render();
  }
}
