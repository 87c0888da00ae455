/**
 * Codex: `codex exec --json` prints JSON Lines: `thread.started`, `turn.started`,
 * `item.started` / `item.updated` / `item.completed` (items `agent_message`, `reasoning`,
 * `command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `todo_list`, `error`),
 * `turn.completed` with `usage`, `turn.failed`, `error`. MCP: `-c mcp_servers.atomstudio.url=…`
 * (streamable HTTP) on the command line; nothing is written for it.
 */
import { type AgentStreamEvent, agentError, agentEvent } from "../types.ts";
import { privateDir, writeNoFollow } from "./files.ts";
import { type AgentInvocation, type AgentSpec, asRecord, MCP_SERVER_NAME, num } from "./spec.ts";

const toml = (v: unknown) => JSON.stringify(v); // TOML basic strings and arrays of them read as JSON does
/** The provider id under which a configured base URL is given to Codex. */
export const CODEX_PROVIDER = "atomstudio";
/** How Codex reports a refused or missing key (the API's 401, its own login check). */
const AUTH_FAILURE = /401 unauthorized|invalid_api_key|incorrect api key|not logged in|missing bearer|please login/i;

/** `$HOME/.codex/config.toml` of one run: this service's MCP server and, when configured, the model endpoint. */
export const codexConfig = (inv: AgentInvocation, keyVar: string): string => {
  const lines = ["# Written by AtomStudio for one run of `codex exec`; removed when the run ends."];
  // Top-level keys come before the first table in TOML.
  if (inv.baseUrl) lines.push(`model_provider = ${toml(CODEX_PROVIDER)}`);
  lines.push("", `[mcp_servers.${MCP_SERVER_NAME}]`, `url = ${toml(inv.mcpUrl)}`);
  if (inv.mcpTokenVar) lines.push(`bearer_token_env_var = ${toml(inv.mcpTokenVar)}`);
  if (inv.availableTools?.length) lines.push(`enabled_tools = ${toml(inv.availableTools)}`);
  // `codex exec` cannot ask anyone: without this every call of this service's tools is refused
  // ("MCP tool call requires approval"). Which tools are offered is limited by enabled_tools.
  lines.push(`default_tools_approval_mode = "approve"`);
  if (inv.baseUrl)
    lines.push(
      "",
      `[model_providers.${CODEX_PROVIDER}]`,
      `name = "AtomStudio-configured endpoint"`,
      `base_url = ${toml(inv.baseUrl)}`,
      `env_key = ${toml(keyVar)}`,
      `wire_api = "responses"`,
    );
  return `${lines.join("\n")}\n`;
};

export const codex: AgentSpec = {
  id: "codex",
  name: "Codex CLI",
  program: "codex",
  keyVars: ["OPENAI_API_KEY", "CODEX_API_KEY"],
  signIn: "Set OPENAI_API_KEY (or CODEX_API_KEY) in the service's environment.",
  signedIn: (env) => Boolean(env.OPENAI_API_KEY || env.CODEX_API_KEY),
  authFailure: (text) => AUTH_FAILURE.test(text),
  ownTurnLimit: false,
  defaultModel: "gpt-5-codex",
  models: [
    { id: "gpt-5-codex", name: "GPT-5 Codex", context_window: 400000 },
    { id: "gpt-5", name: "GPT-5", context_window: 400000 },
  ],
  async prepare(inv) {
    const dir = await privateDir(inv.home, ".codex");
    return [await writeNoFollow(dir, "config.toml", codexConfig(inv, "OPENAI_API_KEY"))];
  },
  env(inv) {
    // Where Codex reads config.toml (its default, ~/.codex, spelled out).
    return { CODEX_HOME: `${inv.home}/.codex` };
  },
  args(inv) {
    // Every value is glued to its option (`--flag=value`), so no value can be read as an option.
    return ["exec", "--json", "--skip-git-repo-check", ...(inv.model ? [`--model=${inv.model}`] : []), "--", inv.prompt];
  },
  parser() {
    const announced = new Set<string>();
    let toolCalls = 0;
    let usage = { input_tokens: 0, output_tokens: 0 };
    let sawUsage = false;
    const toolUse = (item: Record<string, unknown>): AgentStreamEvent | null => {
      const id = String(item.id ?? "");
      if (announced.has(id)) return null;
      announced.add(id);
      toolCalls++;
      switch (item.type) {
        case "command_execution":
          return agentEvent("tool_use", { name: "shell", input: { command: item.command ?? null } });
        case "mcp_tool_call":
          return agentEvent("tool_use", { name: String(item.tool ?? "tool"), input: asRecord(item.arguments) ?? {} });
        case "file_change":
          return agentEvent("tool_use", { name: "apply_patch", input: { changes: item.changes ?? [] } });
        case "web_search":
          return agentEvent("tool_use", { name: "web_search", input: { query: item.query ?? null } });
        default:
          announced.delete(id);
          toolCalls--;
          return null;
      }
    };
    return {
      usage: () => (sawUsage ? usage : null),
      toolCalls: () => toolCalls,
      line(obj) {
        const out: AgentStreamEvent[] = [];
        const item = asRecord(obj.item);
        if (obj.type === "item.started" && item) {
          const ev = toolUse(item);
          if (ev) out.push(ev);
        } else if (obj.type === "item.completed" && item) {
          const ev = toolUse(item);
          if (ev) out.push(ev);
          switch (item.type) {
            case "agent_message":
              out.push(agentEvent("text", { text: String(item.text ?? "") }));
              break;
            case "reasoning":
              out.push(agentEvent("thinking", { text: String(item.text ?? "") }));
              break;
            case "command_execution":
              out.push(
                agentEvent("tool_result", {
                  name: "shell",
                  output: {
                    output: item.aggregated_output ?? "",
                    exit_code: item.exit_code ?? null,
                    status: item.status ?? null,
                  },
                }),
              );
              break;
            case "mcp_tool_call": {
              const result = asRecord(item.result);
              const error = asRecord(item.error);
              out.push(
                agentEvent("tool_result", {
                  name: String(item.tool ?? "tool"),
                  output: error
                    ? { error: error.message ?? "tool failed" }
                    : (asRecord(result?.structured_content) ?? (result ? { content: result.content ?? [] } : null)),
                }),
              );
              break;
            }
            case "file_change":
              out.push(
                agentEvent("tool_result", {
                  name: "apply_patch",
                  output: { status: item.status ?? null, changes: item.changes ?? [] },
                }),
              );
              break;
            case "web_search":
              out.push(agentEvent("tool_result", { name: "web_search", output: null }));
              break;
            case "error":
              // Error items are notices the run goes on after (unknown model metadata, say).
              out.push(agentError(String(item.message ?? "agent error"), "AGENT_WARNING"));
              break;
          }
        } else if (obj.type === "turn.completed") {
          const u = asRecord(obj.usage);
          sawUsage = true;
          usage = {
            input_tokens: usage.input_tokens + num(u?.input_tokens),
            output_tokens: usage.output_tokens + num(u?.output_tokens),
          };
        } else if (obj.type === "turn.failed") {
          out.push(agentError(String(asRecord(obj.error)?.message ?? "turn failed"), "AGENT_ERROR"));
        } else if (obj.type === "error") {
          const message = String(obj.message ?? "agent error");
          // "Reconnecting... 2/5 (…)": a retry in progress, not the end of the run.
          out.push(agentError(message, /^Reconnecting\b/.test(message) ? "AGENT_WARNING" : "AGENT_ERROR"));
        }
        return out;
      },
    };
  },
};
