/**
 * Provider tables (decisions §6). Each entry is data: URL, key variable, default model and a
 * short model list; `ATOMSTUDIO_<KEY>_BASE_URL` and `ATOMSTUDIO_<KEY>_MODEL` override the URL and
 * the default model.
 */
import type { ModelInfo } from "../types.ts";

export interface ProviderSpec {
  id: string;
  name: string;
  baseUrl: string | null;
  /** Environment variable holding the key; null: no key needed (local) or only from the request (custom). */
  keyVar: string | null;
  /** Whether the provider works without any key (local). */
  keyless?: boolean;
  defaultModel: string;
  models: ModelInfo[];
  supportsTools: boolean;
  supportsVision: boolean;
}

const m = (id: string, context_window: number, name = id): ModelInfo => ({ id, name, context_window });

/** Providers of `POST /api/chat/stream-openai-compat`; the first is the default. */
/** OpenAI is both an OpenAI-compatible provider and a hosted one (official SDK): one entry. */
const OPENAI: ProviderSpec = {
  id: "openai",
  name: "OpenAI",
  baseUrl: "https://api.openai.com/v1",
  keyVar: "OPENAI_API_KEY",
  defaultModel: "gpt-4o",
  models: [m("gpt-4o", 128000, "GPT-4o"), m("gpt-4o-mini", 128000, "GPT-4o mini"), m("gpt-4.1", 1047576, "GPT-4.1")],
  supportsTools: true,
  supportsVision: true,
};

export const COMPAT_PROVIDERS: ProviderSpec[] = [
  {
    id: "deepseek",
    name: "DeepSeek",
    baseUrl: "https://api.deepseek.com/v1",
    keyVar: "DEEPSEEK_API_KEY",
    defaultModel: "deepseek-chat",
    models: [m("deepseek-chat", 128000, "DeepSeek Chat"), m("deepseek-reasoner", 128000, "DeepSeek Reasoner")],
    supportsTools: true,
    supportsVision: false,
  },
  {
    id: "qwen",
    name: "Qwen (DashScope)",
    baseUrl: "https://dashscope.aliyuncs.com/compatible-mode/v1",
    keyVar: "DASHSCOPE_API_KEY",
    defaultModel: "qwen-plus",
    models: [m("qwen-plus", 131072, "Qwen Plus"), m("qwen-max", 32768, "Qwen Max"), m("qwen-turbo", 1000000, "Qwen Turbo")],
    supportsTools: true,
    supportsVision: false,
  },
  {
    id: "kimi",
    name: "Kimi (Moonshot)",
    baseUrl: "https://api.moonshot.cn/v1",
    keyVar: "MOONSHOT_API_KEY",
    defaultModel: "moonshot-v1-32k",
    models: [m("moonshot-v1-32k", 32768, "Moonshot v1 32k"), m("moonshot-v1-128k", 131072, "Moonshot v1 128k")],
    supportsTools: true,
    supportsVision: false,
  },
  {
    id: "ollama",
    name: "Ollama (local)",
    baseUrl: "http://localhost:11434/v1",
    keyVar: null,
    keyless: true,
    defaultModel: "llama3.2",
    models: [],
    supportsTools: true,
    supportsVision: false,
  },
  {
    id: "openrouter",
    name: "OpenRouter",
    baseUrl: "https://openrouter.ai/api/v1",
    keyVar: "OPENROUTER_API_KEY",
    defaultModel: "openai/gpt-4o-mini",
    models: [m("openai/gpt-4o-mini", 128000, "GPT-4o mini"), m("anthropic/claude-sonnet-4.5", 200000, "Claude Sonnet 4.5")],
    supportsTools: true,
    supportsVision: true,
  },
  {
    id: "together",
    name: "Together AI",
    baseUrl: "https://api.together.xyz/v1",
    keyVar: "TOGETHER_API_KEY",
    defaultModel: "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    models: [
      m("meta-llama/Llama-3.3-70B-Instruct-Turbo", 131072, "Llama 3.3 70B Instruct Turbo"),
      m("deepseek-ai/DeepSeek-V3", 131072, "DeepSeek V3"),
    ],
    supportsTools: true,
    supportsVision: false,
  },
  OPENAI,
  {
    id: "custom",
    name: "Custom (OpenAI-compatible)",
    baseUrl: null,
    keyVar: null,
    defaultModel: "default",
    models: [],
    supportsTools: true,
    supportsVision: false,
  },
];

/** Hosted providers of `POST /api/chat/stream`; the first is the default. */
export const HOSTED_PROVIDERS: ProviderSpec[] = [
  {
    id: "anthropic",
    name: "Anthropic",
    baseUrl: "https://api.anthropic.com",
    keyVar: "ANTHROPIC_API_KEY",
    defaultModel: "claude-sonnet-4-6",
    models: [
      m("claude-sonnet-4-6", 200000, "Claude Sonnet 4.6"),
      m("claude-opus-4-5", 200000, "Claude Opus 4.5"),
      m("claude-haiku-4-5", 200000, "Claude Haiku 4.5"),
    ],
    supportsTools: true,
    supportsVision: true,
  },
  OPENAI,
];

const envKey = (id: string) => id.toUpperCase().replace(/[^A-Z0-9]/g, "_");

/** The provider's configured base URL (environment first). */
export const baseUrlOf = (p: ProviderSpec, env: NodeJS.ProcessEnv): string | null =>
  env[`ATOMSTUDIO_${envKey(p.id)}_BASE_URL`] || p.baseUrl;

export const defaultModelOf = (p: ProviderSpec, env: NodeJS.ProcessEnv): string =>
  env[`ATOMSTUDIO_${envKey(p.id)}_MODEL`] || p.defaultModel;

export const serverKeyOf = (p: ProviderSpec, env: NodeJS.ProcessEnv): string | undefined =>
  p.keyVar ? env[p.keyVar] || undefined : undefined;
