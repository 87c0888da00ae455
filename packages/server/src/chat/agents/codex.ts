/**
 * Codex: `codex exec --json` prints JSON Lines: `thread.started`, `turn.started`,
 * `item.started` / `item.updated` / `item.completed` (items `agent_message`, `reasoning`,
 * `command_execution`, `file_change`, `mcp_tool_call`, `web_search`, `todo_list`, `error`),
 * `turn.completed` with `usage`, `turn.failed`, `error`. MCP: `-c mcp_servers.atomstudio.url=…`
 * (streamable HTTP) on the command line; nothing is written for it.
 */
import { type AgentStreamEvent, agentError, agentEvent } from "../types.ts";
import { type AgentSpec, asRecord, MCP_SERVER_NAME, num } from "./spec.ts";

const toml = (v: unknown) => JSON.stringify(v); // TOML basic strings and arrays of them read as JSON does

export const codex: AgentSpec = {
  id: "codex",
  name: "Codex CLI",
  program: "codex",
  keyVars: ["OPENAI_API_KEY", "CODEX_API_KEY"],
  defaultModel: "gpt-5-codex",
  models: [
    { id: "gpt-5-codex", name: "GPT-5 Codex", context_window: 400000 },
    { id: "gpt-5", name: "GPT-5", context_window: 400000 },
  ],
  async prepare() {
    return [];
  },
  args(inv) {
    const prefix = `mcp_servers.${MCP_SERVER_NAME}`;
    // Every value is glued to its option (`--flag=value`), so no value can be read as an option.
    return [
      "exec",
      "--json",
      "--skip-git-repo-check",
      ...(inv.model ? [`--model=${inv.model}`] : []),
      `--config=${prefix}.url=${toml(inv.mcpUrl)}`,
      ...(inv.mcpTokenVar ? [`--config=${prefix}.bearer_token_env_var=${toml(inv.mcpTokenVar)}`] : []),
      ...(inv.availableTools?.length ? [`--config=${prefix}.enabled_tools=${toml(inv.availableTools)}`] : []),
      "--",
      inv.prompt,
    ];
  },
  parser() {
    const announced = new Set<string>();
    let usage = { input_tokens: 0, output_tokens: 0 };
    let sawUsage = false;
    const toolUse = (item: Record<string, unknown>): AgentStreamEvent | null => {
      const id = String(item.id ?? "");
      if (announced.has(id)) return null;
      announced.add(id);
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
          return null;
      }
    };
    return {
      usage: () => (sawUsage ? usage : null),
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
              out.push(agentError(String(item.message ?? "agent error"), "AGENT_ERROR"));
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
          out.push(agentError(String(obj.message ?? "agent error"), "AGENT_ERROR"));
        }
        return out;
      },
    };
  },
};
