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

const MCP_FILE = "atomstudio-mcp.json";
/** Claude Code's own words when it has no usable credential ("Not logged in · Please run /login", "Invalid API key · …"). */
const AUTH_FAILURE =
  /not logged in|invalid api key|please run \/login|authentication_error|authentication_failed|oauth token (has )?expired/i;
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
  signIn:
    "Set ANTHROPIC_API_KEY in the service's environment (or CLAUDE_CODE_OAUTH_TOKEN, from `claude setup-token`, to use a Claude subscription).",
  signedIn: (env) => ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"].some((k) => Boolean(env[k])),
  authFailure: (text) => AUTH_FAILURE.test(text),
  ownTurnLimit: true,
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
    return [
      await writeNoFollow(inv.home, MCP_FILE, `${JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: server } }, null, 2)}\n`),
    ];
  },
  env(inv): Record<string, string> {
    return inv.baseUrl ? { ANTHROPIC_BASE_URL: inv.baseUrl } : {};
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
      `--mcp-config=${join(inv.home, MCP_FILE)}`,
      "--strict-mcp-config",
      `--allowedTools=${allowed.join(",")}`,
      "--",
      inv.prompt,
    ];
  },
  parser() {
    const toolNames = new Map<string, string>();
    let usage: Usage | null = null;
    let mcpReported = false;
    return {
      usage: () => usage,
      line(obj) {
        const out: AgentStreamEvent[] = [];
        const message = asRecord(obj.message);
        const blocks = Array.isArray(message?.content) ? (message.content as unknown[]) : [];
        if (obj.type === "system" && Array.isArray(obj.mcp_servers)) {
          // Claude Code connects to MCP servers in the background: `pending` while it connects, then
          // `connected`; only a final `failed` or `needs-auth` is a problem, and it is said once.
          const ours = obj.mcp_servers.map(asRecord).find((m) => m?.name === MCP_SERVER_NAME);
          if (!mcpReported && (ours?.status === "failed" || ours?.status === "needs-auth")) {
            mcpReported = true;
            out.push(agentError(`Claude Code could not use AtomStudio's MCP server (${String(ours.status)})`, "AGENT_WARNING"));
          }
        } else if (obj.type === "system" && obj.subtype === "api_retry") {
          // A refused key is retried for minutes (10 attempts, growing delays): report it at once
          // (the runner stops the run with AGENT_AUTH); other retries are notices.
          const status = typeof obj.error_status === "number" ? obj.error_status : null;
          const what = `${String(obj.error ?? "error")}${status ? `, HTTP ${status}` : ""}`;
          if (status === 401 || status === 403 || obj.error === "authentication_failed")
            out.push(agentError(`Claude Code: the model API refused the key (${what})`, "AGENT_ERROR"));
          else
            out.push(
              agentError(
                `Claude Code is retrying the model API (${what}; attempt ${String(obj.attempt ?? "?")})`,
                "AGENT_WARNING",
              ),
            );
        } else if (obj.type === "assistant" && message?.model === "<synthetic>") {
          // Claude Code's own notices dressed as assistant messages (not logged in, API errors):
          // the `result` line that follows carries the same text and says it is an error.
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
          const said = typeof obj.result === "string" ? obj.result : null;
          if (typeof obj.subtype === "string" && obj.subtype !== "success")
            out.push(agentError(`Claude Code ended with ${obj.subtype}${said ? `: ${said}` : ""}`, "AGENT_ERROR"));
          // `subtype: success` with `is_error: true` is how it reports a refusal to run (no login).
          else if (obj.is_error === true)
            out.push(agentError(`Claude Code reported an error: ${said ?? "no detail"}`, "AGENT_ERROR"));
        }
        return out;
      },
    };
  },
};
