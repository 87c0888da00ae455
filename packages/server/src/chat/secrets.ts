/**
 * Keys never appear in a response, an event, an error message or a log line (decisions §7).
 * Every text that may carry upstream or agent output goes through `redact` before it leaves.
 */

/** Environment variables whose values are secrets the service may hold. */
export const SECRET_ENV_VARS = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "CLAUDE_CODE_OAUTH_TOKEN",
  "OPENAI_API_KEY",
  "CODEX_API_KEY",
  "DEEPSEEK_API_KEY",
  "DASHSCOPE_API_KEY",
  "MOONSHOT_API_KEY",
  "OPENROUTER_API_KEY",
  "TOGETHER_API_KEY",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "ATOMSTUDIO_TOKEN",
];

const PATTERNS: RegExp[] = [
  /\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, // OpenAI-style and Anthropic (sk-ant-…) keys
  /\bAIza[0-9A-Za-z_-]{20,}/g, // Google API keys
  /(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
];

export const REDACTED = "[redacted]";

/** Every key the server holds (by the variables above), plus the ones given: what error text must never carry. */
export const heldSecrets = (env: NodeJS.ProcessEnv, ...given: (string | null | undefined)[]): string[] =>
  [...SECRET_ENV_VARS.map((v) => env[v]), ...given].filter((s): s is string => typeof s === "string" && s.length >= 4);

/** Replace every known secret (server-held keys, plus `extra`, e.g. a key sent in the request) and key-shaped strings. */
export const redact = (text: string, extra: readonly (string | null | undefined)[] = [], env: NodeJS.ProcessEnv): string => {
  let out = text;
  const secrets = [...SECRET_ENV_VARS.map((v) => env[v]), ...extra].filter(
    (s): s is string => typeof s === "string" && s.length >= 4,
  );
  for (const s of secrets.sort((a, b) => b.length - a.length)) out = out.split(s).join(REDACTED);
  for (const re of PATTERNS)
    out = out.replace(re, (_m, p1) => (typeof p1 === "string" && /^Bearer/i.test(p1) ? `${p1}${REDACTED}` : REDACTED));
  return out;
};

/** `redact` applied to every string inside a JSON-like value (tool inputs and outputs of agents). */
export const redactDeep = <T>(value: T, clean: (s: string) => string): T => {
  if (typeof value === "string") return clean(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, clean)) as T;
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactDeep(v, clean)])) as T;
  return value;
};
