/**
 * The shape every command-line agent module has: how to invoke it non-interactively, which
 * files give it this service's MCP server, and how its JSON lines map to AgentStreamEvent.
 */
import type { AgentStreamEvent, ModelInfo, Usage } from "../types.ts";

export interface AgentInvocation {
  prompt: string;
  model: string | null;
  maxTurns: number;
  workdir: string;
  /** This service's MCP endpoint (`http://host:port/mcp`). */
  mcpUrl: string;
  /** Environment variable that holds the service's bearer token for the MCP endpoint, when one is needed. */
  mcpTokenVar: string | null;
  /** MCP tool names (`svc_*`) the agent may call; null: all of them. */
  availableTools: string[] | null;
}

/** Per-run line mapper; keeps what it needs across lines (tool names by id, usage). */
export interface AgentLineParser {
  /** One parsed JSON line → zero or more events (never `done`: the runner ends the stream). */
  line(obj: Record<string, unknown>): AgentStreamEvent[];
  /** Token usage seen so far (reported by the final `done`). */
  usage(): Usage | null;
}

export interface AgentSpec {
  id: string;
  name: string;
  /** Program looked up on PATH. */
  program: string;
  /** Variables passed through to the agent besides PATH and HOME (its own credentials). */
  keyVars: string[];
  /** Model used when the request names none; null: the agent's own default. */
  defaultModel: string | null;
  models: ModelInfo[];
  /** Write the agent's config files into the working directory; returns them (relative paths). */
  prepare(inv: AgentInvocation): Promise<string[]>;
  args(inv: AgentInvocation): string[];
  parser(): AgentLineParser;
}

export const MCP_SERVER_NAME = "atomstudio";

export const asRecord = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
