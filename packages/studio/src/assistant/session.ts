/**
 * One conversation with whichever provider is picked: OpenAI-compatible providers get the studio's
 * tools and a tool loop (stream → tool calls → run them on the studio → stream again); hosted
 * providers stream text; command-line agents get the prompt, the current structure and this
 * service's MCP tools, and stream their events.
 */
import { majorityElement } from "atomstudio-core";
import type { StudioApi } from "../studio.ts";
import { type Fetcher, streamEvents } from "./stream.ts";
import { executeTool, loadTools, type ToolOutcome, type ToolSet } from "./tools.ts";

export interface ModelInfo {
  id: string;
  name: string;
  context_window: number;
}

export interface ProviderInfo {
  id: string;
  name: string;
  type: "api" | "openai-compat" | "cli-agent";
  available: boolean;
  has_api_key: boolean;
  models: ModelInfo[];
  supports_tools: boolean;
  supports_vision: boolean;
  endpoint: string;
  status_message: string | null;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface SessionCallbacks {
  /** A new assistant message starts (text deltas follow). */
  assistantStart(): void;
  text(delta: string): void;
  thinking(text: string): void;
  toolUse(name: string, input: unknown): void;
  toolResult(name: string | null, output: ToolOutcome | unknown): void;
  error(message: string, code?: string): void;
  done(usage?: { input_tokens: number; output_tokens: number } | null): void;
}

/** Tool rounds per user message before the loop stops. */
export const MAX_TOOL_ROUNDS = 8;

export const loadProviders = async (fetcher: Fetcher): Promise<ProviderInfo[]> => {
  const res = await fetcher("/api/chat/providers");
  if (!res.ok) throw new Error(`Provider list: HTTP ${res.status}`);
  return ((await res.json()) as { providers: ProviderInfo[] }).providers;
};

interface DictLike {
  lattice?: { matrix?: number[][] } | null;
  sites?: Array<{ species?: Array<{ element: string; occu: number }> }>;
}

/** One line on the loaded structure, for the system prompt. */
export const structureSummary = (api: StudioApi): string => {
  const s = api.getStructure() as DictLike | null;
  if (!s) return "No structure is loaded in the studio.";
  const counts = new Map<string, number>();
  for (const site of s.sites ?? []) {
    const main = majorityElement(site.species ?? []);
    if (main) counts.set(main, (counts.get(main) ?? 0) + 1);
  }
  const formula = [...counts].map(([e, n]) => `${e}${n === 1 ? "" : n}`).join("");
  const m = s.lattice?.matrix;
  const cell = m
    ? `periodic, cell vector lengths ${m.map((v) => Math.hypot(...v).toFixed(3)).join(", ")} Å`
    : "a molecule (no lattice)";
  const sel = api.getSelection();
  return `The studio shows ${formula || "an empty structure"} (${s.sites?.length ?? 0} sites; ${cell}).${
    sel.has_selection ? ` Selected sites: ${sel.selected_indices.join(", ")}.` : ""
  }`;
};

export const systemPrompt = (api: StudioApi, withTools: boolean): string =>
  [
    "You are the assistant of AtomStudio, a tool for building and editing crystal and molecular structures.",
    structureSummary(api),
    withTools
      ? "Use the tools to edit, build and view the structure: they act on the structure shown in the studio. Site indices are 0-based; positions are Cartesian, in Angstrom. Say briefly what you did."
      : "Answer concisely; you cannot change the structure yourself in this mode.",
  ].join(" ");

export class AssistantSession {
  readonly history: ChatMessage[] = [];
  private tools: ToolSet | undefined;

  constructor(
    private readonly api: StudioApi,
    private readonly fetcher: Fetcher,
  ) {}

  clear(): void {
    this.history.length = 0;
  }

  async send(
    text: string,
    provider: ProviderInfo,
    model: string | null,
    cb: SessionCallbacks,
    signal?: AbortSignal,
  ): Promise<void> {
    this.history.push({ role: "user", content: text });
    try {
      if (provider.type === "cli-agent") await this.runAgent(text, provider, model, cb, signal);
      else if (provider.type === "api") await this.runHosted(provider, model, cb, signal);
      else await this.runCompat(provider, model, cb, signal);
    } catch (err) {
      const e = err as Error & { code?: string };
      if (e.name === "AbortError" || signal?.aborted) cb.error("Stopped.", "ABORTED");
      else cb.error(e.message, e.code);
    }
  }

  private async runCompat(
    provider: ProviderInfo,
    model: string | null,
    cb: SessionCallbacks,
    signal?: AbortSignal,
  ): Promise<void> {
    this.tools ??= await loadTools(this.fetcher, this.api);
    const useTools = provider.supports_tools && this.tools.definitions.length > 0;
    for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
      const body: Record<string, unknown> = {
        provider: provider.id,
        messages: [{ role: "system", content: systemPrompt(this.api, useTools) }, ...this.history],
        ...(model ? { model } : {}),
        ...(useTools ? { tools: this.tools.definitions, tool_choice: "auto" } : {}),
      };
      cb.assistantStart();
      let text = "";
      const calls: Array<{ id: string; name: string; arguments: string }> = [];
      for await (const ev of streamEvents(this.fetcher, provider.endpoint, body, signal)) {
        const e = ev as {
          text?: string;
          tool_call?: { id: string; name: string; arguments: string };
          error?: string;
          code?: string;
        };
        if (typeof e.text === "string") {
          text += e.text;
          cb.text(e.text);
        } else if (e.tool_call) calls.push(e.tool_call);
        else if (e.error) {
          cb.error(e.error, e.code);
          return;
        }
      }
      this.history.push({
        role: "assistant",
        content: text || null,
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: "function" as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      });
      if (!calls.length) return cb.done(null);
      for (const call of calls) {
        let input: Record<string, unknown> = {};
        let outcome: ToolOutcome;
        try {
          input = call.arguments ? (JSON.parse(call.arguments) as Record<string, unknown>) : {};
          cb.toolUse(call.name, input);
          outcome = await executeTool(this.tools, call.name, input, this.api, this.fetcher);
        } catch (err) {
          cb.toolUse(call.name, call.arguments);
          outcome = { content: `Error: arguments are not valid JSON (${(err as Error).message})`, ok: false };
        }
        cb.toolResult(call.name, outcome);
        this.history.push({ role: "tool", tool_call_id: call.id, content: outcome.content });
      }
    }
    cb.error(`Stopped after ${MAX_TOOL_ROUNDS} rounds of tool calls.`, "TOO_MANY_TOOL_ROUNDS");
  }

  private async runHosted(
    provider: ProviderInfo,
    model: string | null,
    cb: SessionCallbacks,
    signal?: AbortSignal,
  ): Promise<void> {
    const messages = this.history
      .filter((m) => (m.role === "user" || m.role === "assistant") && typeof m.content === "string" && m.content)
      .map((m) => ({ role: m.role, content: m.content as string }));
    cb.assistantStart();
    let text = "";
    for await (const ev of streamEvents(
      this.fetcher,
      provider.endpoint,
      { provider: provider.id, messages, system: systemPrompt(this.api, false), ...(model ? { model } : {}) },
      signal,
    )) {
      const e = ev as { text?: string; error?: string; code?: string };
      if (typeof e.text === "string") {
        text += e.text;
        cb.text(e.text);
      } else if (e.error) {
        cb.error(e.error, e.code);
        break;
      }
    }
    this.history.push({ role: "assistant", content: text });
    cb.done(null);
  }

  private async runAgent(
    prompt: string,
    provider: ProviderInfo,
    model: string | null,
    cb: SessionCallbacks,
    signal?: AbortSignal,
  ): Promise<void> {
    const earlier = this.history
      .slice(0, -1)
      .filter((m) => (m.role === "user" || m.role === "assistant") && m.content)
      .slice(-6)
      .map((m) => `${m.role}: ${m.content}`)
      .join("\n");
    const body = {
      agent: provider.id,
      prompt: earlier ? `Conversation so far:\n${earlier}\n\nNow: ${prompt}` : prompt,
      model: model || null,
      context: { structure_json: this.api.getStructure() },
    };
    cb.assistantStart();
    let text = "";
    for await (const ev of streamEvents(this.fetcher, provider.endpoint, body, signal)) {
      const e = ev as {
        type?: string;
        text?: string | null;
        name?: string | null;
        input?: unknown;
        output?: unknown;
        usage?: never;
      };
      switch (e.type) {
        case "text":
          text += e.text ?? "";
          cb.text(e.text ?? "");
          break;
        case "thinking":
          cb.thinking(e.text ?? "");
          break;
        case "tool_use":
          cb.toolUse(e.name ?? "tool", e.input);
          break;
        case "tool_result":
          cb.toolResult(e.name ?? null, e.output);
          break;
        case "error":
          cb.error(e.text ?? "agent error", (e as { code?: string }).code);
          break;
        case "done":
          this.history.push({ role: "assistant", content: text });
          return cb.done(e.usage ?? null);
      }
    }
    this.history.push({ role: "assistant", content: text });
  }
}
