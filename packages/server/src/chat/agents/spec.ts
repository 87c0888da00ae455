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
  /**
   * The run's own HOME (mode 0700, under the agent root, removed after the run): the agent's
   * configuration for this run is written there, so nothing of the service user's own agent
   * configuration (other MCP servers, hooks, logins) applies, and concurrent runs never share it.
   */
  home: string;
  /** Model endpoint for this agent (`ATOMSTUDIO_<AGENT>_BASE_URL`); null: the vendor's own. */
  baseUrl: string | null;
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
  /** Tool calls started so far (the runner stops an agent that has no turn limit of its own past `max_turns`). */
  toolCalls?(): number;
}

export interface AgentSpec {
  id: string;
  name: string;
  /** Program looked up on PATH. */
  program: string;
  /** Variables passed through to the agent besides PATH and HOME (its own credentials). */
  keyVars: string[];
  /** How to tell the user to sign in, when the agent says it is not (AGENT_AUTH). */
  signIn: string;
  /** Sign-in state without running the model: a key variable, or a login file in the service user's HOME. */
  signedIn(env: NodeJS.ProcessEnv): boolean;
  /** Whether the agent enforces max_turns itself (claude --max-turns); else the runner counts tool calls. */
  ownTurnLimit: boolean;
  /** Model used when the request names none; null: the agent's own default. */
  defaultModel: string | null;
  models: ModelInfo[];
  /** Write the agent's configuration for this run into `inv.home`; returns the files written. */
  prepare(inv: AgentInvocation): Promise<string[]>;
  args(inv: AgentInvocation): string[];
  /** Variables the run adds to the minimal environment (a base URL, a config location). */
  env?(inv: AgentInvocation): Record<string, string>;
  /**
   * Whether a line of output (or the end of stderr) says the agent is not signed in or its key was
   * refused: the run then fails with 401 AGENT_AUTH instead of AGENT_CRASHED.
   */
  authFailure(text: string): boolean;
  parser(): AgentLineParser;
}

export const MCP_SERVER_NAME = "atomstudio";

export const asRecord = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
