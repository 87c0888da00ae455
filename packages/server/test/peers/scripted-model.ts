/**
 * A scripted model endpoint on loopback that speaks each agent vendor's wire format, as the real
 * command-line agents use it: Anthropic Messages streaming (`POST /v1/messages`, Claude Code with
 * `ANTHROPIC_BASE_URL`), the OpenAI Responses API (`POST /v1/responses`, Codex through a custom
 * model provider) and the Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`,
 * Gemini CLI with `GOOGLE_GEMINI_BASE_URL`).
 *
 * It plays the recorded conversation of `fixtures/agents/scripted/conversation.json`: while the
 * history holds no tool result, it asks for `svc_supercell` (under whatever name the agent
 * offered this service's tool: `mcp__atomstudio__svc_supercell`, `svc_supercell`, …) with the
 * recorded arguments; once a tool result is there, it answers with the recorded text. A request
 * that offers no such tool gets a text saying so, which the tests then see. Modes: `always-tool`
 * (asks for the tool on every turn: turn limits), `reject-key` (the vendor's 401/400 for a bad
 * key), `hang` (never answers: timeouts and cancellation).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { fixture, type Peer, startPeer } from "./serve.ts";

export const CONVERSATION = JSON.parse(fixture("agents/scripted/conversation.json")) as {
  prompt: string;
  tool: string;
  arguments: Record<string, unknown>;
  answer: string;
};

export type ScriptMode = "conversation" | "always-tool" | "reject-key" | "hang";
/** What the model asks for and answers: the recorded conversation unless a test plays another. */
export interface Script {
  tool: string;
  arguments: Record<string, unknown>;
  answer: string;
}
export type Vendor = "anthropic" | "openai" | "gemini";

export interface ModelCall {
  vendor: Vendor;
  path: string;
  /** The name under which the agent offered this service's tool, if it did. */
  offeredTool: string | null;
  toolResultSeen: boolean;
  /** What the tool result said, as the agent sent it back to the model. */
  toolResultText: string | null;
  apiKey: string | undefined;
  /** Every tool name the request offered (diagnostics). */
  toolNames: string[];
  body: Record<string, unknown>;
}

export interface ScriptedModel extends Peer {
  mode: ScriptMode;
  script: Script;
  calls: ModelCall[];
}

const fill = (template: string, vars: Record<string, string>): string =>
  template.replace(/__([A-Z_]+)__/g, (m, k: string) => vars[k] ?? m);

/** The argument JSON as it appears inside a JSON string (partial_json, arguments). */
const jsonInString = (v: unknown) => JSON.stringify(JSON.stringify(v)).slice(1, -1);

const names = (list: unknown): string[] => {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      if (typeof o.name === "string") out.push(o.name);
      for (const k of ["functionDeclarations", "tools", "function"]) if (k in o) walk(o[k]);
    }
  };
  walk(list);
  return out;
};

const isTool = (tool: string) => (n: string) => n === tool || n.endsWith(`__${tool}`) || n.endsWith(`_${tool}`);

const offered = (tools: unknown, tool: string): string | null => names(tools).find(isTool(tool)) ?? null;

/** Codex offers an MCP server's tools grouped in a `namespace` tool; its calls then name the namespace. */
const namespaceOf = (tools: unknown, tool: string): string | null => {
  for (const t of Array.isArray(tools) ? (tools as Array<Record<string, unknown>>) : [])
    if (t.type === "namespace" && names(t.tools).some(isTool(tool))) return String(t.name);
  return null;
};

const textOf = (v: unknown): string => {
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(textOf).join("\n");
  if (v && typeof v === "object")
    return Object.values(v as Record<string, unknown>)
      .map(textOf)
      .join("\n");
  return "";
};

/** The tool result in a request's history, per wire format. */
const toolResult = (vendor: Vendor, body: Record<string, unknown>): string | null => {
  if (vendor === "anthropic") {
    for (const m of (body.messages as Array<{ content?: unknown }>) ?? [])
      if (Array.isArray(m.content))
        for (const b of m.content as Array<Record<string, unknown>>) if (b.type === "tool_result") return textOf(b.content);
  } else if (vendor === "openai") {
    for (const item of (body.input as Array<Record<string, unknown>>) ?? [])
      if (typeof item.type === "string" && item.type.endsWith("_output")) return textOf(item.output);
  } else {
    for (const c of (body.contents as Array<{ parts?: Array<Record<string, unknown>> }>) ?? [])
      for (const p of c.parts ?? []) if (p.functionResponse) return textOf(p.functionResponse);
  }
  return null;
};

const sse = (res: ServerResponse, text: string) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.end(text);
};

export const startScriptedModel = async (mode: ScriptMode = "conversation"): Promise<ScriptedModel> => {
  const calls: ModelCall[] = [];
  const state: { mode: ScriptMode; script: Script } = { mode, script: CONVERSATION };
  const route = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown> | null): void => {
    const path = (req.url ?? "").split("?")[0] as string;
    if (req.method === "HEAD" || req.method === "GET") {
      // Claude Code checks that the base URL answers; Codex may ask for the model list.
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(req.method === "GET" ? JSON.stringify({ object: "list", data: [] }) : undefined);
    }
    const vendor: Vendor | null = path.endsWith("/v1/messages")
      ? "anthropic"
      : path.endsWith("/responses")
        ? "openai"
        : path.includes(":streamGenerateContent") || path.includes(":generateContent")
          ? "gemini"
          : null;
    if (!vendor || !body) {
      res.writeHead(404, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ error: { message: `scripted model: no route ${path}` } }));
    }
    if (path.endsWith(":countTokens")) {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ totalTokens: 100 }));
    }
    const { script } = state;
    const tool = offered(body.tools, script.tool);
    const result = toolResult(vendor, body);
    const apiKey = (req.headers["x-api-key"] ?? req.headers["x-goog-api-key"] ?? req.headers.authorization) as string | undefined;
    calls.push({
      vendor,
      path,
      offeredTool: tool,
      toolResultSeen: result !== null,
      toolResultText: result,
      apiKey,
      toolNames: names(body.tools),
      body,
    });
    if (state.mode === "hang") return; // never answers; the connection stays open
    if (state.mode === "reject-key") {
      const [status, file] =
        vendor === "anthropic"
          ? [401, "anthropic-401.json"]
          : vendor === "openai"
            ? [401, "openai-401.json"]
            : [400, "gemini-400-key.json"];
      res.writeHead(status, { "content-type": "application/json" });
      return void res.end(fixture(`agents/scripted/${file}`));
    }
    const model = String(body.model ?? path.split("/models/")[1]?.split(":")[0] ?? "scripted");
    const askTool = tool !== null && (state.mode === "always-tool" || result === null);
    const vars = {
      MODEL: model,
      TOOL_NAME: tool ?? "",
      TOOL_ARGS_STRING: jsonInString(script.arguments),
      TOOL_ARGS: JSON.stringify(script.arguments),
      NAMESPACE: namespaceOf(body.tools, script.tool)
        ? `,"namespace":${JSON.stringify(namespaceOf(body.tools, script.tool))}`
        : "",
      TEXT: JSON.stringify(
        tool === null && result === null ? `The tool ${script.tool} was not offered to the model.` : script.answer,
      ).slice(1, -1),
    };
    // A side request of an agent that wants plain JSON (no stream) gets the text as a whole answer.
    if (vendor === "gemini" && path.includes(":generateContent")) {
      res.writeHead(200, { "content-type": "application/json" });
      const text = JSON.stringify({ reasoning: "The answer is complete.", next_speaker: "user" });
      return void res.end(
        JSON.stringify({
          candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
          usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 10, totalTokenCount: 20 },
        }),
      );
    }
    if (vendor === "anthropic" && body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(
        JSON.stringify({
          id: "msg_scripted_side",
          type: "message",
          role: "assistant",
          model,
          content: [{ type: "text", text: script.answer }],
          stop_reason: "end_turn",
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 10 },
        }),
      );
    }
    const file = {
      anthropic: askTool ? "anthropic-tool-use.sse" : "anthropic-text.sse",
      openai: askTool ? "responses-tool-call.sse" : "responses-text.sse",
      gemini: askTool ? "gemini-function-call.sse" : "gemini-text.sse",
    }[vendor];
    sse(res, fill(fixture(`agents/scripted/${file}`), vars));
  };
  const peer = await startPeer(route);
  const model = Object.assign(peer, { calls, mode, script: CONVERSATION as Script });
  Object.defineProperty(model, "mode", {
    get: () => state.mode,
    set: (m: ScriptMode) => {
      state.mode = m;
    },
  });
  Object.defineProperty(model, "script", {
    get: () => state.script,
    set: (s: Script) => {
      state.script = s;
    },
  });
  return model;
};
