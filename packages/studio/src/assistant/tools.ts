/**
 * The assistant's tools: the server-backed ones of `GET /api/tools` (assistant) and the studio's
 * client-only viewer tools, as OpenAI-style function definitions, and their execution against the
 * studio (interface "Assistant tools and MCP mapping").
 */
// Type only (erased from the bundle): the wire shape of GET /api/tools is declared once, by the registry.
import type { AssistantToolDefinition } from "../../../server/src/registry/tools.ts";
import { type OptimizeMessage, runUffInWorker, type UffRequest } from "../optimize/uff-client.ts";
import type { StudioApi } from "../studio.ts";
import type { Fetcher } from "./stream.ts";

export type ServerTool = AssistantToolDefinition;

export interface ToolSet {
  server: Map<string, ServerTool>;
  viewer: Set<string>;
  /** OpenAI-style function tools for the chat-completions request. */
  definitions: Array<{ type: "function"; function: { name: string; description: string; parameters: Record<string, unknown> } }>;
}

export const loadTools = async (fetcher: Fetcher, api: StudioApi): Promise<ToolSet> => {
  let server: ServerTool[] = [];
  try {
    const res = await fetcher("/api/tools");
    if (res.ok) server = ((await res.json()) as { assistant?: ServerTool[] }).assistant ?? [];
  } catch {
    // service without tools: viewer tools only
  }
  const viewer = api.viewerToolDefinitions;
  return {
    server: new Map(server.map((t) => [t.name, t])),
    viewer: new Set(viewer.map((t) => t.name)),
    definitions: [...server, ...viewer].map((t) => ({
      type: "function" as const,
      function: { name: t.name, description: t.description, parameters: t.input_schema },
    })),
  };
};

export interface ToolOutcome {
  /** What the model gets back (JSON text, or `Error: …`). */
  content: string;
  ok: boolean;
  /** Whether the studio's structure was replaced. */
  changedStructure?: boolean;
  /** A screenshot, for the panel to show. */
  image?: { data: string; format: string };
}

/** Large fields are not sent back to the model: it gets the summary, the studio keeps the rest. */
const summarize = (body: Record<string, unknown>): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === "structure") out.structure = "(applied to the studio)";
    else if (k === "image") out.image = "(shown to the user)";
    else out[k] = v;
  }
  return out;
};

/** A relaxation the studio computes itself: the same request and final message as the optimization WebSocket. */
export type LocalOptimizer = (request: UffRequest) => Promise<OptimizeMessage>;

/** Calculators the service lists as `runs_in: "browser"`, by id: UFF in a Web Worker. */
export const BROWSER_CALCULATORS: Record<string, LocalOptimizer> = {
  uff: (request) => runUffInWorker(request).done,
};

/** optimize_structure with a browser calculator runs here; the service would refuse it. */
const runLocally = async (input: Record<string, unknown>, run: LocalOptimizer, api: StudioApi): Promise<ToolOutcome> => {
  const current = api.getStructure();
  if (!current) return { content: "Error: no structure is loaded in the studio", ok: false };
  const final = await run({
    structure: current,
    fmax: typeof input.fmax === "number" ? input.fmax : 0.05,
    max_steps: typeof input.max_steps === "number" ? input.max_steps : 200,
    frozen_atoms: Array.isArray(input.frozen_atoms) ? (input.frozen_atoms as number[]) : [],
    optimize_cell: input.optimize_cell === true,
  });
  if (final.type !== "result")
    return { content: `Error: ${String(final.code ?? final.type)}: ${String(final.error ?? "")}`, ok: false };
  api.setStructure(final.structure, { keepView: true });
  const { type: _type, ...result } = final;
  return { content: JSON.stringify(summarize({ ...result, computed_in: "browser" })), ok: true, changedStructure: true };
};

export const executeTool = async (
  tools: ToolSet,
  name: string,
  input: Record<string, unknown>,
  api: StudioApi,
  fetcher: Fetcher,
  browserCalculators: Record<string, LocalOptimizer> = BROWSER_CALCULATORS,
): Promise<ToolOutcome> => {
  if (tools.viewer.has(name)) {
    try {
      const result = await api.viewerTools[name]?.(input);
      return { content: JSON.stringify(result ?? { ok: true }), ok: true };
    } catch (err) {
      return { content: `Error: ${(err as Error).message}`, ok: false };
    }
  }
  const tool = tools.server.get(name);
  if (!tool) return { content: `Error: unknown tool ${name}`, ok: false };
  const local = typeof input.calculator === "string" ? browserCalculators[input.calculator] : undefined;
  if (local && tool.endpoint.path === "/api/optimize/structure") return runLocally(input, local, api);
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) body[tool.rename?.[k] ?? k] = v;
  if (tool.inject) {
    const current = api.getStructure();
    if (!current) return { content: "Error: no structure is loaded in the studio", ok: false };
    body[tool.inject] = current;
  }
  // Viewer endpoints are answered by a studio over the relay: ask for this one.
  const headers: Record<string, string> = { "content-type": "application/json" };
  const client = api.clientId();
  if (client) headers["x-viewer-client"] = client;
  let res: Response;
  // path parameters (`/api/workflow/:id`) come from the input
  let path = tool.endpoint.path.replace(/:(\w+)/g, (_m, key: string) => {
    const v = body[key];
    delete body[key];
    return encodeURIComponent(String(v ?? ""));
  });
  const init: RequestInit = { method: tool.endpoint.method, headers };
  if (tool.endpoint.method === "GET") {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(body)) q.set(k, typeof v === "string" ? v : JSON.stringify(v));
    if ([...q.keys()].length) path += `?${q}`;
  } else init.body = JSON.stringify(body);
  try {
    res = await fetcher(path, init);
  } catch (err) {
    return { content: `Error: ${(err as Error).message}`, ok: false };
  }
  const out = (await res.json().catch(() => ({ error: `HTTP ${res.status}` }))) as Record<string, unknown>;
  if (!res.ok) return { content: `Error: ${String(out.error ?? `HTTP ${res.status}`)}`, ok: false };
  let changedStructure = false;
  if (tool.replaces_structure && out.structure) {
    api.setStructure(out.structure, { keepView: true });
    changedStructure = true;
  }
  const image = typeof out.image === "string" ? { data: out.image, format: String(out.format ?? "png") } : undefined;
  return { content: JSON.stringify(summarize(out)), ok: true, changedStructure, ...(image ? { image } : {}) };
};
