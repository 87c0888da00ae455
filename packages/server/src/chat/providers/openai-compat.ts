import OpenAI from "openai";
import { z } from "zod";
import { serviceError } from "../../errors/codes.ts";
import { checkChatRanges, MaxTokens, streamError, upstreamError } from "../errors.ts";
import { heldSecrets } from "../secrets.ts";
import type { SseStream } from "../sse.ts";
import { ChunkNormalizer } from "./normalize.ts";
import { baseUrlOf, COMPAT_PROVIDERS, defaultModelOf, type ProviderSpec, serverKeyOf } from "./table.ts";

export const OpenAICompatMessage = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.union([z.string(), z.array(z.unknown()), z.null()]).default(null),
  name: z.string().nullable().default(null),
  tool_calls: z.array(z.record(z.string(), z.unknown())).nullable().default(null),
  tool_call_id: z.string().nullable().default(null),
});

export const CompatRequest = z.object({
  messages: z
    .array(OpenAICompatMessage)
    .meta({ minItems: 1 })
    .describe("at least one message (an empty list is 400 EMPTY_MESSAGES)"),
  provider: z.string().default(COMPAT_PROVIDERS[0]!.id),
  model: z.string().nullish(),
  temperature: z.number().default(0.3),
  max_tokens: MaxTokens,
  tools: z.array(z.record(z.string(), z.unknown())).nullish(),
  tool_choice: z.union([z.string(), z.record(z.string(), z.unknown())]).nullish(),
  base_url: z.string().url().nullish(),
  api_key: z.string().min(1).nullish(),
});
export type CompatRequest = z.output<typeof CompatRequest>;

export interface ResolvedTarget {
  provider: string;
  baseURL: string;
  apiKey: string | null;
  model: string;
}

/**
 * Where the request goes and with which key. A server-held key is only ever paired with its own
 * provider's configured URL: a request that overrides `base_url` must bring its own `api_key`.
 */
export const resolveCompatTarget = (req: CompatRequest, env: NodeJS.ProcessEnv): ResolvedTarget => {
  const spec: ProviderSpec | undefined = COMPAT_PROVIDERS.find((p) => p.id === req.provider);
  const model = req.model || (spec ? defaultModelOf(spec, env) : "default");
  if (req.base_url) {
    if (!req.api_key && !spec?.keyless)
      throw serviceError(
        "MISSING_API_KEY",
        "A request that overrides base_url must bring its own api_key: server-held keys are only sent to their own provider",
        { provider: req.provider },
      );
    return { provider: req.provider, baseURL: req.base_url, apiKey: req.api_key ?? null, model };
  }
  const baseURL = spec ? baseUrlOf(spec, env) : null;
  if (!spec || !baseURL)
    throw serviceError(
      "UNKNOWN_PROVIDER",
      spec
        ? `Provider ${req.provider} needs base_url (and api_key) in the request`
        : `Unknown provider ${JSON.stringify(req.provider)} and no base_url; known: ${COMPAT_PROVIDERS.map((p) => p.id).join(", ")}`,
      { provider: req.provider, known: COMPAT_PROVIDERS.map((p) => p.id) },
    );
  const apiKey = req.api_key ?? serverKeyOf(spec, env) ?? null;
  if (!apiKey && !spec.keyless)
    throw serviceError(
      "MISSING_API_KEY",
      spec.keyVar
        ? `No API key for ${spec.id}: set ${spec.keyVar} or send api_key`
        : `Provider ${spec.id} needs api_key in the request`,
      { provider: spec.id, ...(spec.keyVar ? { env: spec.keyVar } : {}) },
    );
  return { provider: spec.id, baseURL, apiKey, model };
};

/** An OpenAI SDK client that reads nothing from the environment and never retries on its own. */
export const openaiClient = (baseURL: string, apiKey: string | null): OpenAI =>
  new OpenAI({
    baseURL,
    // A local provider needs no key; the SDK insists on one, and Ollama documents this placeholder.
    apiKey: apiKey ?? "ollama",
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: 10 * 60_000,
    logLevel: "off",
  });

export const streamOpenAICompat = async (req: CompatRequest, sse: SseStream, env: NodeJS.ProcessEnv): Promise<void> => {
  checkChatRanges(req);
  const target = resolveCompatTarget(req, env);
  const secrets = heldSecrets(env, target.apiKey);
  const client = openaiClient(target.baseURL, target.apiKey);
  const body: Record<string, unknown> = {
    model: target.model,
    // Optional fields left null are omitted; `content` stays (null is valid next to tool_calls).
    messages: req.messages.map((msg) =>
      Object.fromEntries(Object.entries(msg).filter(([k, v]) => v !== null || k === "content")),
    ),
    temperature: req.temperature,
    stream: true,
  };
  // OpenAI's own API takes max_completion_tokens (its newer models refuse max_tokens); the others take max_tokens.
  if (target.provider === "openai" && !req.base_url) body.max_completion_tokens = req.max_tokens;
  else body.max_tokens = req.max_tokens;
  if (req.tools) body.tools = req.tools;
  if (req.tool_choice) body.tool_choice = req.tool_choice;
  let stream: AsyncIterable<unknown>;
  try {
    stream = (await client.chat.completions.create(body as never, { signal: sse.signal })) as unknown as AsyncIterable<unknown>;
  } catch (err) {
    throw upstreamError(err, target.provider, secrets, { callerUrl: Boolean(req.base_url) });
  }
  sse.open();
  const normalizer = new ChunkNormalizer();
  try {
    for await (const chunk of stream) for (const ev of normalizer.push(chunk as never)) sse.send(ev);
    for (const ev of normalizer.flush()) sse.send(ev);
  } catch (err) {
    if (!sse.signal.aborted) sse.send(streamError(err, target.provider, secrets, { callerUrl: Boolean(req.base_url) }));
  }
  sse.done();
};
