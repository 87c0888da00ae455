/** The command-line agents, in listing order. Adding one: a module with the AgentSpec shape. */
import { claude } from "./claude.ts";
import { codex } from "./codex.ts";
import { gemini } from "./gemini.ts";
import type { AgentSpec } from "./spec.ts";

export const AGENTS: AgentSpec[] = [claude, codex, gemini];

export const agentById = (id: string): AgentSpec | undefined => AGENTS.find((a) => a.id === id);
