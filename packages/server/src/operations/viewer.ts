/**
 * Viewer capture (interface: /api/view): screenshot, structure info and selection, relayed to a
 * connected studio over `GET /api/view/ws` (viewer/plugin.ts). A request may name a studio with the
 * `client_id` query parameter or the `X-Viewer-Client` header; otherwise the most recently active
 * studio answers.
 */
import {
  density,
  fail,
  fromDict,
  latticeDict,
  Structure,
  type StructureInfoResult as StructureInfo,
  structureInfo,
} from "atomstudio-core";
import { z } from "zod";
import { compute } from "../compute/service.ts";
import type { ServiceContext } from "../context.ts";
import { serviceError } from "../errors/codes.ts";
import { defineOperation } from "../registry/operation.ts";
import { publishedInt, StructureJSON } from "../registry/schemas.ts";
import { noViewer } from "../viewer/hub.ts";
import type { ViewerRelay } from "../viewer/plugin.ts";

const tag = "view";
export const SCREENSHOT_FORMATS = ["png", "jpeg", "webp"] as const;
/** Largest screenshot side, pixels (a 8192 x 8192 RGBA canvas is 256 MiB already). */
export const MAX_SCREENSHOT_SIDE = 8192;

const CLIENT_NOTE =
  "Needs a connected studio. Name one with the client_id query parameter or the X-Viewer-Client header; otherwise the most recently active studio answers.";

const VIEWER_ERRORS = [
  { status: 503, code: "NO_VIEWER", when: "no studio is connected (or it disconnected before answering)" },
  { status: 504, code: "VIEWER_TIMEOUT", when: "the studio did not answer within 10 seconds" },
];

const relayOf = (ctx: ServiceContext): ViewerRelay => {
  const relay = ctx.services.viewer;
  if (!relay) throw noViewer("The viewer relay is not enabled in this service");
  return relay;
};

const clientIdOf = (ctx: ServiceContext): string | undefined => {
  const q = ctx.request?.query?.client_id;
  if (typeof q === "string" && q) return q;
  const h = ctx.request?.headers?.["x-viewer-client"];
  const v = Array.isArray(h) ? h[0] : h;
  return v || undefined;
};

const Camera = z
  .object({
    rotation: z.array(z.number()).length(3).optional().describe("Euler angles in degrees about x, y, z from the reset view"),
    zoom: z
      .number()
      .meta({ exclusiveMinimum: 0 })
      .optional()
      .describe("zoom factor relative to the fitted view (1 = fit); 0 or less is 400 INVALID_CAMERA"),
  })
  .nullable();

export const ScreenshotResult = z.object({
  image: z.string().describe("base64 image data (no data: prefix)"),
  format: z.string(),
  width: z.number().int(),
  height: z.number().int(),
  size_bytes: z.number().int(),
});

export const screenshotOp = defineOperation({
  id: "view_screenshot",
  method: "POST",
  path: "/api/view/screenshot",
  tag,
  summary: "Render the studio's 3D view to an image of the requested size and format",
  description: CLIENT_NOTE,
  input: z.object({
    width: publishedInt(1, MAX_SCREENSHOT_SIDE).default(1920).describe(`pixels, 1 to ${MAX_SCREENSHOT_SIDE}`),
    height: publishedInt(1, MAX_SCREENSHOT_SIDE).default(1080).describe(`pixels, 1 to ${MAX_SCREENSHOT_SIDE}`),
    format: z
      .string()
      .meta({ enum: [...SCREENSHOT_FORMATS, "jpg"] })
      .default("png")
      .describe("png, jpeg (or jpg) or webp"),
    quality: z.number().meta({ minimum: 0, maximum: 1 }).default(0.92).describe("0 to 1, for jpeg and webp"),
    transparent: z.boolean().default(false).describe("transparent background (png and webp)"),
    camera: Camera.default(null).describe("camera override: rotation (3 numbers), zoom (number)"),
  }),
  output: ScreenshotResult,
  errors: [
    { status: 400, code: "INVALID_FORMAT", when: "format is not png, jpeg or webp" },
    { status: 400, code: "INVALID_DIMENSIONS", when: "width or height is not an integer from 1 to 8192" },
    { status: 400, code: "INVALID_QUALITY", when: "quality is outside 0 to 1" },
    { status: 400, code: "INVALID_CAMERA", when: "camera zoom is 0 or less" },
    ...VIEWER_ERRORS,
  ],
  handler: async (input, ctx) => {
    const format = input.format.toLowerCase() === "jpg" ? "jpeg" : input.format.toLowerCase();
    if (!(SCREENSHOT_FORMATS as readonly string[]).includes(format))
      fail("INVALID_FORMAT", `Unsupported screenshot format ${JSON.stringify(input.format)}: use png, jpeg or webp`, {
        format: input.format,
      });
    for (const [k, v] of [
      ["width", input.width],
      ["height", input.height],
    ] as const)
      if (!Number.isInteger(v) || v < 1 || v > MAX_SCREENSHOT_SIDE)
        fail("INVALID_DIMENSIONS", `${k} must be an integer from 1 to ${MAX_SCREENSHOT_SIDE}, got ${v}`, { [k]: v });
    if (!(input.quality >= 0 && input.quality <= 1))
      fail("INVALID_QUALITY", `quality must be from 0 to 1, got ${input.quality}`, { quality: input.quality });
    const zoom = input.camera?.zoom;
    if (zoom !== undefined && !(zoom > 0)) fail("INVALID_CAMERA", `camera.zoom must be greater than 0, got ${zoom}`, { zoom });
    const params = { ...input, format };
    const r = (await relayOf(ctx).request(clientIdOf(ctx), "screenshot", params)) as { image?: unknown; format?: unknown };
    if (typeof r?.image !== "string") throw serviceError("VIEWER_ERROR", "The studio sent no image");
    const image = r.image.replace(/^data:[^,]*,/, "");
    const size = Buffer.from(image, "base64").length;
    return { image, format, width: input.width, height: input.height, size_bytes: size };
  },
  mcp: "svc_screenshot",
  assistant: { name: "take_screenshot", replacesStructure: false },
});

const LatticeInfo = z.object({
  a: z.number(),
  b: z.number(),
  c: z.number(),
  alpha: z.number(),
  beta: z.number(),
  gamma: z.number(),
  volume: z.number(),
  matrix: z.array(z.array(z.number())),
});

export const StructureInfoResult = z.object({
  formula: z.string(),
  reduced_formula: z.string(),
  n_atoms: z.number().int(),
  elements: z.array(z.string()),
  element_counts: z.record(z.string(), z.number()),
  has_lattice: z.boolean(),
  lattice: LatticeInfo.nullable(),
  symmetry: z
    .object({
      space_group: z.string(),
      space_group_number: z.number().int(),
      crystal_system: z.string(),
      point_group: z.string(),
    })
    .nullable(),
  sites: z.array(
    z.object({
      index: z.number().int(),
      element: z.string(),
      xyz: z.array(z.number()),
      abc: z.array(z.number()),
      label: z.string(),
    }),
  ),
  density: z.number().nullable(),
  is_molecule: z.boolean(),
});

/**
 * Default of the largest structure whose symmetry structure-info analyses (the configuration's
 * `symmetryMaxAtoms`, ATOMSTUDIO_SYMMETRY_MAX_ATOMS); above it `symmetry` is null. Supercells are reduced by their pure translations before the
 * symmetry search (core translations.ts), which keeps a 4,000-atom supercell near 0.1 s.
 */
export const SYMMETRY_MAX_ATOMS = 10_000;

/** structure-info with symmetry left out (null): the core's summary computed as for a molecule, then the lattice parts added. */
export const infoWithoutSymmetry = (input: Structure | Record<string, unknown>): StructureInfo => {
  const s = input instanceof Structure ? input : fromDict(input);
  const lattice = s.lattice;
  if (!lattice) return structureInfo(s);
  const info = structureInfo(s.with({ lattice: null }));
  const d = latticeDict(lattice);
  const frac = s.frac;
  return {
    ...info,
    has_lattice: true,
    is_molecule: false,
    lattice: { a: d.a, b: d.b, c: d.c, alpha: d.alpha, beta: d.beta, gamma: d.gamma, volume: d.volume, matrix: d.matrix },
    symmetry: null,
    density: density(s),
    sites: info.sites.map((site, i) => ({
      ...site,
      abc: [frac[3 * i] as number, frac[3 * i + 1] as number, frac[3 * i + 2] as number],
    })),
  };
};

export const structureInfoOp = defineOperation({
  id: "view_structure_info",
  method: "GET",
  path: "/api/view/structure-info",
  tag,
  summary: "Summary of the structure loaded in the studio (formula, lattice, symmetry, sites)",
  description: `${CLIENT_NOTE} Computed by the service from the structure the studio reports. symmetry is null for molecules and for structures of more than ${SYMMETRY_MAX_ATOMS} atoms (configurable).`,
  input: z.object({}),
  output: StructureInfoResult,
  errors: [{ status: 404, code: "NO_STRUCTURE_LOADED", when: "the studio has no structure loaded" }, ...VIEWER_ERRORS],
  handler: async (_input, ctx) => {
    const r = (await relayOf(ctx).request(clientIdOf(ctx), "get_structure", {})) as { structure?: unknown } | null;
    const dict = r?.structure;
    if (!dict || typeof dict !== "object" || !Array.isArray((dict as { sites?: unknown }).sites))
      throw serviceError("NO_STRUCTURE_LOADED", "The studio has no structure loaded");
    const structure = StructureJSON.parse(dict);
    const sites = (structure as { sites: unknown[] }).sites;
    if (sites.length > ctx.config.symmetryMaxAtoms) return infoWithoutSymmetry(structure);
    // The symmetry search runs in the compute pool (compute/README.md), off the event loop.
    return compute(ctx).run("structureInfo", { structure }, { signal: ctx.request?.signal });
  },
  mcp: "svc_structure_info",
  assistant: { name: "get_structure_info", replacesStructure: false },
});

export const SelectionResult = z.object({
  selected_indices: z.array(z.number().int()),
  n_selected: z.number().int(),
  selected_atoms: z.array(
    z.object({ index: z.number().int(), element: z.string(), xyz: z.array(z.number()), label: z.string() }),
  ),
  has_selection: z.boolean(),
});

export const selectionOp = defineOperation({
  id: "view_selection",
  method: "GET",
  path: "/api/view/selection",
  tag,
  summary: "The atoms selected in the studio (indices of the structure's own sites, never of periodic images)",
  description: CLIENT_NOTE,
  input: z.object({}),
  output: SelectionResult,
  errors: VIEWER_ERRORS,
  handler: async (_input, ctx) => {
    const r = (await relayOf(ctx).request(clientIdOf(ctx), "get_selection", {})) as Partial<
      z.infer<typeof SelectionResult>
    > | null;
    const atoms = Array.isArray(r?.selected_atoms) ? r.selected_atoms : [];
    const indices = Array.isArray(r?.selected_indices) ? r.selected_indices : atoms.map((a) => a.index);
    return { selected_indices: indices, n_selected: indices.length, selected_atoms: atoms, has_selection: indices.length > 0 };
  },
  mcp: "svc_selection",
  assistant: { name: "get_selection", replacesStructure: false },
});

export const viewerOps = [screenshotOp, structureInfoOp, selectionOp];
