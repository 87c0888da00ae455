/**
 * `GET /api/chat/providers`: every hosted provider, OpenAI-compatible provider and agent as
 * ProviderInfo. Hosted providers are available when their key variable is set; Ollama when its
 * tag list answers within 2 s (its models are that list); agents when their program is on PATH.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENTS } from "./agents/registry.ts";
import { agentRoot, findOnPath } from "./agents/runner.ts";
import { baseUrlOf, COMPAT_PROVIDERS, HOSTED_PROVIDERS, type ProviderSpec, serverKeyOf } from "./providers/table.ts";
import type { ModelInfo, ProviderInfo } from "./types.ts";

export const OLLAMA_PROBE_TIMEOUT_MS = 2000;
/** How long `<agent> --version` may take (Gemini CLI starts Node and loads its bundle). */
export const AGENT_VERSION_TIMEOUT_MS = 15_000;

// `--version` runs once per installed program file (path and modification time), not per listing.
const versions = new Map<string, Promise<string | null>>();

/** The agent program's own version (`claude --version` → `2.1.197`), or null when it does not answer. */
export const agentVersion = async (program: string, env: NodeJS.ProcessEnv): Promise<string | null> => {
  const key = `${program}:${(await stat(program).catch(() => null))?.mtimeMs ?? 0}`;
  let found = versions.get(key);
  if (!found) {
    // In a scratch directory of its own: whatever the program leaves there is removed.
    found = mkdtemp(join(tmpdir(), "atomstudio-version-")).then(
      (cwd) =>
        new Promise<string | null>((resolve) => {
          execFile(
            program,
            ["--version"],
            { cwd, env: { PATH: env.PATH, HOME: env.HOME }, timeout: AGENT_VERSION_TIMEOUT_MS, killSignal: "SIGKILL" },
            (err, stdout) => {
              void rm(cwd, { recursive: true, force: true });
              resolve(err ? null : (/\d+\.\d+\.\d+[\w.+-]*/.exec(stdout)?.[0] ?? null));
            },
          );
        }),
    );
    versions.set(key, found);
  }
  return found;
};
/** Ollama's default context length (num_ctx) when a model does not say. */
const OLLAMA_DEFAULT_CONTEXT = 4096;

/** `http://host:11434/v1` → `http://host:11434/api/tags`. */
export const ollamaTagsUrl = (baseUrl: string): string => `${baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}/api/tags`;

export const probeOllama = async (baseUrl: string): Promise<{ models: ModelInfo[] } | { error: string }> => {
  const url = ollamaTagsUrl(baseUrl);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(OLLAMA_PROBE_TIMEOUT_MS) });
    if (!res.ok) return { error: `Ollama at ${url} answered HTTP ${res.status}` };
    const body = (await res.json()) as { models?: Array<{ name?: string; model?: string }> };
    const models = (body.models ?? [])
      .map((t) => t.name ?? t.model)
      .filter((n): n is string => typeof n === "string")
      .map((n) => ({ id: n, name: n, context_window: OLLAMA_DEFAULT_CONTEXT }));
    return { models };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.name === "TimeoutError" ? `no answer within ${OLLAMA_PROBE_TIMEOUT_MS / 1000} s` : (e.cause?.code ?? e.message);
    return { error: `Ollama is not reachable at ${url} (${why})` };
  }
};

const keyed = (
  p: ProviderSpec,
  type: ProviderInfo["type"],
  endpoint: ProviderInfo["endpoint"],
  env: NodeJS.ProcessEnv,
): ProviderInfo => {
  const hasKey = Boolean(serverKeyOf(p, env));
  const custom = p.baseUrl === null;
  return {
    id: p.id,
    name: p.name,
    type,
    // `custom` takes its URL and key from each request, so it is always usable.
    available: custom || hasKey,
    has_api_key: hasKey,
    models: p.models,
    supports_tools: p.supportsTools,
    supports_vision: p.supportsVision,
    endpoint,
    status_message: custom || hasKey ? null : `Set ${p.keyVar} to use ${p.name}`,
  };
};

export const listProviders = async (env: NodeJS.ProcessEnv): Promise<ProviderInfo[]> => {
  const hosted = HOSTED_PROVIDERS.map((p) => keyed(p, "api", "/api/chat/stream", env));
  const compat = await Promise.all(
    COMPAT_PROVIDERS.map(async (p): Promise<ProviderInfo> => {
      if (!p.keyless) return keyed(p, "openai-compat", "/api/chat/stream-openai-compat", env);
      const probe = await probeOllama(baseUrlOf(p, env) as string);
      const ok = "models" in probe;
      return {
        id: p.id,
        name: p.name,
        type: "openai-compat",
        available: ok,
        has_api_key: false,
        models: ok ? probe.models : [],
        supports_tools: p.supportsTools,
        supports_vision: p.supportsVision,
        endpoint: "/api/chat/stream-openai-compat",
        status_message: ok ? null : probe.error,
      };
    }),
  );
  const agents = await Promise.all(
    AGENTS.map(async (a): Promise<ProviderInfo> => {
      const found = await findOnPath(a.program, env.PATH);
      const version = found ? await agentVersion(found, env) : null;
      const signedIn = a.signedIn(env);
      return {
        id: a.id,
        name: a.name,
        type: "cli-agent",
        available: found !== null,
        has_api_key: signedIn,
        models: a.models,
        supports_tools: true,
        supports_vision: false,
        endpoint: "/api/chat/stream-cli-agent",
        status_message: !found
          ? `Program ${a.program} not found on PATH (working directories under ${agentRoot(env)})`
          : signedIn
            ? null
            : `${a.name} is not signed in: ${a.signIn}`,
        version,
        signed_in: signedIn,
      };
    }),
  );
  return [...hosted, ...compat, ...agents];
};
