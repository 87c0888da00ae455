/**
 * Claude Code: `claude -p --output-format stream-json --verbose` prints one JSON object per line:
 * `system` (init), `assistant` (message with text / thinking / tool_use blocks), `user` (tool_result
 * blocks), and a final `result` with `usage`. MCP: `--mcp-config <file>` naming this service's
 * streamable-HTTP endpoint; its tools are allowed with `--allowedTools mcp__atomstudio[__tool]`.
 */
import { join } from "node:path";
import { type AgentStreamEvent, agentError, agentEvent, type Usage } from "../types.ts";
import { writeNoFollow } from "./files.ts";
import { type AgentSpec, asRecord, MCP_SERVER_NAME, num } from "./spec.ts";

const MCP_FILE = "atomstudio-mcp.claude.json";
const MCP_PREFIX = `mcp__${MCP_SERVER_NAME}__`;

const toolResultOutput = (content: unknown): string | Record<string, unknown> | null => {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((c) => (typeof asRecord(c)?.text === "string" ? (asRecord(c)?.text as string) : JSON.stringify(c)))
      .join("\n");
  return asRecord(content);
};

export const claude: AgentSpec = {
  id: "claude",
  name: "Claude Code",
  program: "claude",
  keyVars: ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"],
  defaultModel: null,
  models: [
    { id: "default", name: "Claude Code default", context_window: 200000 },
    { id: "sonnet", name: "Claude Sonnet (alias)", context_window: 200000 },
    { id: "opus", name: "Claude Opus (alias)", context_window: 200000 },
    { id: "haiku", name: "Claude Haiku (alias)", context_window: 200000 },
  ],
  async prepare(inv) {
    const server: Record<string, unknown> = { type: "http", url: inv.mcpUrl };
    // Claude Code expands ${VAR} in MCP configs: the token itself is never written to disk.
    if (inv.mcpTokenVar) server.headers = { Authorization: `Bearer \${${inv.mcpTokenVar}}` };
    await writeNoFollow(inv.workdir, MCP_FILE, `${JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: server } }, null, 2)}\n`);
    return [MCP_FILE];
  },
  args(inv) {
    const allowed = inv.availableTools?.length
      ? inv.availableTools.map((t) => `mcp__${MCP_SERVER_NAME}__${t}`)
      : [`mcp__${MCP_SERVER_NAME}`];
    // Every value is glued to its option (`--flag=value`), so no value can be read as an option.
    return [
      "-p",
      "--output-format=stream-json",
      "--verbose",
      `--max-turns=${inv.maxTurns}`,
      ...(inv.model && inv.model !== "default" ? [`--model=${inv.model}`] : []),
      `--mcp-config=${join(inv.workdir, MCP_FILE)}`,
      "--strict-mcp-config",
      `--allowedTools=${allowed.join(",")}`,
      "--",
      inv.prompt,
    ];
  },
  parser() {
    const toolNames = new Map<string, string>();
    let usage: Usage | null = null;
    return {
      usage: () => usage,
      line(obj) {
        const out: AgentStreamEvent[] = [];
        const message = asRecord(obj.message);
        const blocks = Array.isArray(message?.content) ? (message.content as unknown[]) : [];
        if (obj.type === "system" && obj.subtype === "init" && Array.isArray(obj.mcp_servers)) {
          const ours = obj.mcp_servers.map(asRecord).find((m) => m?.name === MCP_SERVER_NAME);
          if (ours && ours.status !== "connected")
            out.push(agentError(`Claude Code could not use AtomStudio's MCP server (${String(ours.status)})`, "AGENT_WARNING"));
        } else if (obj.type === "assistant") {
          for (const b of blocks.map(asRecord)) {
            if (b?.type === "text" && typeof b.text === "string") out.push(agentEvent("text", { text: b.text }));
            else if (b?.type === "thinking" && typeof b.thinking === "string")
              out.push(agentEvent("thinking", { text: b.thinking }));
            else if (b?.type === "tool_use") {
              // This service's tools keep their own names (svc_…), as the other agents report them.
              const name = String(b.name ?? "tool").replace(MCP_PREFIX, "");
              if (typeof b.id === "string") toolNames.set(b.id, name);
              out.push(agentEvent("tool_use", { name, input: asRecord(b.input) ?? {} }));
            }
          }
        } else if (obj.type === "user") {
          for (const b of blocks.map(asRecord))
            if (b?.type === "tool_result")
              out.push(
                agentEvent("tool_result", {
                  name: toolNames.get(String(b.tool_use_id)) ?? null,
                  output: toolResultOutput(b.content),
                }),
              );
        } else if (obj.type === "result") {
          const u = asRecord(obj.usage);
          if (u) usage = { input_tokens: num(u.input_tokens), output_tokens: num(u.output_tokens) };
          if (obj.is_error === true || (typeof obj.subtype === "string" && obj.subtype !== "success"))
            out.push(
              agentError(
                `Claude Code ended with ${String(obj.subtype ?? "an error")}${typeof obj.result === "string" ? `: ${obj.result}` : ""}`,
                "AGENT_ERROR",
              ),
            );
        }
        return out;
      },
    };
  },
};
