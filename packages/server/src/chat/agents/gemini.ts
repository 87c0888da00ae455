/**
 * Gemini CLI: `gemini --skip-trust --output-format=stream-json --prompt=…` prints JSON Lines: `init`,
 * `message` (role user/assistant, `delta: true` for incremental assistant text), `tool_use`
 * (`tool_name`, `tool_id`, `parameters`), `tool_result` (`tool_id`, `status`, `output` or `error`),
 * `error` (severity, message) and a final `result` with `stats`. MCP, the turn limit and the
 * sign-in method: `~/.gemini/settings.json` in the run's own HOME (`mcpServers.atomstudio.httpUrl`,
 * `model.maxSessionTurns`, `security.auth.selectedType`).
 */
import { type AgentStreamEvent, agentError, agentEvent, type Usage } from "../types.ts";
import { privateDir, writeNoFollow } from "./files.ts";
import { type AgentSpec, asRecord, MCP_SERVER_NAME, num } from "./spec.ts";

const MCP_PREFIX = `mcp_${MCP_SERVER_NAME}_`;
/** Gemini CLI's words for a missing or refused key (its auth check, the API's 400 API_KEY_INVALID). */
const AUTH_FAILURE =
  /must specify the GEMINI_API_KEY|API key not valid|API_KEY_INVALID|Please set an Auth method|PERMISSION_DENIED/i;

export const gemini: AgentSpec = {
  id: "gemini",
  name: "Gemini CLI",
  program: "gemini",
  keyVars: [
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_GENAI_USE_VERTEXAI",
  ],
  signIn:
    "Set GEMINI_API_KEY in the service's environment (or GOOGLE_API_KEY with GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI).",
  signedIn: (env) => Boolean(env.GEMINI_API_KEY || env.GOOGLE_API_KEY || env.GOOGLE_APPLICATION_CREDENTIALS),
  authFailure: (text) => AUTH_FAILURE.test(text),
  ownTurnLimit: true,
  defaultModel: "gemini-2.5-pro",
  models: [
    { id: "gemini-2.5-pro", name: "Gemini 2.5 Pro", context_window: 1048576 },
    { id: "gemini-2.5-flash", name: "Gemini 2.5 Flash", context_window: 1048576 },
  ],
  async prepare(inv) {
    const server: Record<string, unknown> = { httpUrl: inv.mcpUrl, trust: true };
    // Gemini CLI expands $VAR in settings: the token itself is never written to disk.
    if (inv.mcpTokenVar) server.headers = { Authorization: `Bearer $${inv.mcpTokenVar}` };
    if (inv.availableTools?.length) server.includeTools = inv.availableTools;
    const dir = await privateDir(inv.home, ".gemini");
    const settings: Record<string, unknown> = {
      mcpServers: { [MCP_SERVER_NAME]: server },
      model: { maxSessionTurns: inv.maxTurns },
      // A Gemini API key is the sign-in (the CLI would otherwise pick "gateway" when a base URL is set, and refuse it).
      security: { auth: { selectedType: "gemini-api-key" } },
    };
    return [await writeNoFollow(dir, "settings.json", `${JSON.stringify(settings, null, 2)}\n`)];
  },
  env(inv): Record<string, string> {
    return inv.baseUrl ? { GOOGLE_GEMINI_BASE_URL: inv.baseUrl } : {};
  },
  args(inv) {
    // Every value is glued to its option (`--flag=value`), so no value can be read as an option.
    // --skip-trust: the working directory is the service's own (Gemini CLI refuses untrusted folders headless).
    return [
      "--skip-trust",
      "--output-format=stream-json",
      ...(inv.model ? [`--model=${inv.model}`] : []),
      `--prompt=${inv.prompt}`,
    ];
  },
  parser() {
    const toolNames = new Map<string, string>();
    let usage: Usage | null = null;
    return {
      usage: () => usage,
      line(obj) {
        const out: AgentStreamEvent[] = [];
        switch (obj.type) {
          case "message":
            if (obj.role === "assistant" && typeof obj.content === "string" && obj.content)
              out.push(agentEvent("text", { text: obj.content }));
            break;
          case "tool_use": {
            // Gemini CLI names MCP tools `mcp_<server>_<tool>`: this service's keep their own names.
            const name = String(obj.tool_name ?? "tool").replace(MCP_PREFIX, "");
            if (typeof obj.tool_id === "string") toolNames.set(obj.tool_id, name);
            out.push(agentEvent("tool_use", { name, input: asRecord(obj.parameters) ?? {} }));
            break;
          }
          case "tool_result": {
            const error = asRecord(obj.error);
            out.push(
              agentEvent("tool_result", {
                name: toolNames.get(String(obj.tool_id)) ?? null,
                output: error
                  ? { error: error.message ?? "tool failed", type: error.type ?? null }
                  : typeof obj.output === "string"
                    ? obj.output
                    : null,
              }),
            );
            break;
          }
          case "error":
            out.push(
              agentError(String(obj.message ?? "agent error"), obj.severity === "warning" ? "AGENT_WARNING" : "AGENT_ERROR"),
            );
            break;
          case "result": {
            const stats = asRecord(obj.stats);
            if (stats) usage = { input_tokens: num(stats.input_tokens), output_tokens: num(stats.output_tokens) };
            const error = asRecord(obj.error);
            if (obj.status === "error")
              out.push(agentError(String(error?.message ?? "Gemini CLI ended with an error"), "AGENT_ERROR"));
            break;
          }
        }
        return out;
      },
    };
  },
};
