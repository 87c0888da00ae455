/** Chat records of the interface (service-interface.md, "Chat records" and "Events"). */

export interface ModelInfo {
  id: string;
  name: string;
  context_window: number;
}

export type ProviderType = "api" | "openai-compat" | "cli-agent";

export interface ProviderInfo {
  id: string;
  name: string;
  type: ProviderType;
  available: boolean;
  has_api_key: boolean;
  models: ModelInfo[];
  supports_tools: boolean;
  supports_vision: boolean;
  endpoint: "/api/chat/stream" | "/api/chat/stream-openai-compat" | "/api/chat/stream-cli-agent";
  status_message: string | null;
  /** Command-line agents: the program's own `--version` (null when it did not answer). */
  version?: string | null;
  /** Command-line agents: whether its key variable (its only sign-in, agents run with a fresh HOME) is set. */
  signed_in?: boolean;
}

export type AgentEventType = "thinking" | "text" | "tool_use" | "tool_result" | "error" | "done";

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

/**
 * One event of the agent stream. Every field is present (null when unused). Error events also
 * carry `error` and `code`, the shape decisions §3 gives to every in-stream error.
 */
export interface AgentStreamEvent {
  type: AgentEventType;
  text: string | null;
  name: string | null;
  input: Record<string, unknown> | null;
  output: Record<string, unknown> | string | null;
  usage: Usage | null;
  error?: string;
  code?: string;
}

/** Events of the text and normalized provider streams. */
export type ChatStreamEvent =
  | { text: string }
  | { tool_call: { id: string; name: string; arguments: string } }
  | { error: string; code: string; details?: Record<string, unknown> };

export const agentEvent = (type: AgentEventType, fields: Partial<Omit<AgentStreamEvent, "type">> = {}): AgentStreamEvent => ({
  type,
  text: null,
  name: null,
  input: null,
  output: null,
  usage: null,
  ...fields,
});

export const agentError = (message: string, code: string): AgentStreamEvent =>
  agentEvent("error", { text: message, error: message, code });
