/** Chat provider discovery as a registry operation (HTTP, OpenAPI and the MCP tool `svc_providers`). */
import { z } from "zod";
import { listProviders } from "../chat/discovery.ts";
import { defineOperation } from "../registry/operation.ts";

const ModelInfo = z.object({ id: z.string(), name: z.string(), context_window: z.number().int() });

export const ProviderInfo = z.object({
  id: z.string().describe("provider key; unique together with type"),
  name: z.string(),
  type: z.enum(["api", "openai-compat", "cli-agent"]),
  available: z.boolean(),
  has_api_key: z.boolean().describe("whether a key is configured; the key itself is never returned"),
  models: z.array(ModelInfo),
  supports_tools: z.boolean(),
  supports_vision: z.boolean(),
  endpoint: z.enum(["/api/chat/stream", "/api/chat/stream-openai-compat", "/api/chat/stream-cli-agent"]),
  status_message: z.string().nullable().describe("why the provider is unavailable"),
  version: z.string().nullable().optional().describe("command-line agents: the program's own --version"),
  signed_in: z.boolean().optional().describe("command-line agents: whether the key variable it signs in with is set"),
});

export const providersOp = defineOperation({
  id: "providers",
  method: "GET",
  path: "/api/chat/providers",
  tag: "chat",
  summary: "List chat providers and command-line agents with their availability and models",
  description:
    "Hosted providers are available when their API key variable is set, the local Ollama when its tag list answers within 2 s, agents when their program is on PATH",
  input: z.object({}),
  output: z.object({ providers: z.array(ProviderInfo) }),
  handler: async (_input, ctx) => ({
    providers: await (ctx.services.chat?.listProviders() ?? listProviders({ ...ctx.config.environment })),
  }),
  mcp: "svc_providers",
});

export const chatOps = [providersOp];
