/**
 * `POST /api/chat/stream`: the two hosted providers through their official SDKs. Each is a small
 * module of the same shape: open the upstream stream (errors here are ordinary responses), then
 * yield text deltas.
 */
import Anthropic from "@anthropic-ai/sdk";
import { z } from "zod";
import { serviceError } from "../../errors/codes.ts";
import { checkChatRanges, MaxTokens, streamError, upstreamError } from "../errors.ts";
import { heldSecrets } from "../secrets.ts";
import type { SseStream } from "../sse.ts";
import { type ChunkLike, ChunkNormalizer } from "./normalize.ts";
import { openaiClient } from "./openai-compat.ts";
import { baseUrlOf, defaultModelOf, HOSTED_PROVIDERS, type ProviderSpec, serverKeyOf } from "./table.ts";

export const HostedRequest = z.object({
  messages: z
    .array(z.object({ role: z.enum(["system", "user", "assistant"]), content: z.string() }))
    .meta({ minItems: 1 })
    .describe("at least one message (an empty list is 400 EMPTY_MESSAGES)"),
  provider: z.string().default(HOSTED_PROVIDERS[0]!.id),
  model: z.string().nullish(),
  temperature: z.number().nullish(),
  max_tokens: MaxTokens,
  system: z.string().nullish(),
});
export type HostedRequest = z.output<typeof HostedRequest>;

interface HostedCall {
  req: HostedRequest;
  model: string;
  baseURL: string;
  apiKey: string;
  signal: AbortSignal;
}

/** Opens the upstream stream (throws before any byte was sent) and returns its text deltas. */
type HostedModule = (call: HostedCall) => Promise<AsyncIterable<string>>;

const anthropic: HostedModule = async ({ req, model, baseURL, apiKey, signal }) => {
  const client = new Anthropic({ apiKey, authToken: null, baseURL, maxRetries: 0, logLevel: "off", openTelemetry: false });
  const system = [req.system, ...req.messages.filter((m) => m.role === "system").map((m) => m.content)]
    .filter(Boolean)
    .join("\n\n");
  const stream = await client.messages.create(
    {
      model,
      max_tokens: req.max_tokens,
      ...(req.temperature != null ? { temperature: req.temperature } : {}),
      ...(system ? { system } : {}),
      messages: req.messages.filter((m) => m.role !== "system") as Anthropic.MessageParam[],
      stream: true,
    },
    { signal },
  );
  return (async function* () {
    for await (const ev of stream)
      if (ev.type === "content_block_delta" && ev.delta.type === "text_delta" && ev.delta.text) yield ev.delta.text;
  })();
};

const openai: HostedModule = async ({ req, model, baseURL, apiKey, signal }) => {
  const client = openaiClient(baseURL, apiKey);
  const messages = [...(req.system ? [{ role: "system" as const, content: req.system }] : []), ...req.messages];
  const stream = await client.chat.completions.create(
    {
      model,
      messages,
      // max_tokens is deprecated there and refused by its reasoning models
      max_completion_tokens: req.max_tokens,
      ...(req.temperature != null ? { temperature: req.temperature } : {}),
      stream: true,
    },
    { signal },
  );
  return (async function* () {
    const normalizer = new ChunkNormalizer();
    for await (const chunk of stream)
      for (const ev of normalizer.push(chunk as unknown as ChunkLike)) if ("text" in ev) yield ev.text;
  })();
};

export const HOSTED_MODULES: Record<string, HostedModule> = { anthropic, openai };

export const streamHosted = async (req: HostedRequest, sse: SseStream, env: NodeJS.ProcessEnv): Promise<void> => {
  checkChatRanges(req);
  const spec: ProviderSpec | undefined = HOSTED_PROVIDERS.find((p) => p.id === req.provider);
  const mod = spec && HOSTED_MODULES[spec.id];
  if (!spec || !mod)
    throw serviceError(
      "UNKNOWN_PROVIDER",
      `Unknown provider ${JSON.stringify(req.provider)}; known: ${HOSTED_PROVIDERS.map((p) => p.id).join(", ")}`,
      { provider: req.provider, known: HOSTED_PROVIDERS.map((p) => p.id) },
    );
  const apiKey = serverKeyOf(spec, env);
  if (!apiKey)
    throw serviceError("MISSING_API_KEY", `No API key for ${spec.id}: set ${spec.keyVar}`, {
      provider: spec.id,
      env: spec.keyVar,
    });
  const secrets = heldSecrets(env, apiKey);
  let deltas: AsyncIterable<string>;
  try {
    deltas = await mod({
      req,
      model: req.model || defaultModelOf(spec, env),
      baseURL: baseUrlOf(spec, env) as string,
      apiKey,
      signal: sse.signal,
    });
  } catch (err) {
    throw upstreamError(err, spec.id, secrets);
  }
  sse.open();
  try {
    for await (const text of deltas) sse.send({ text });
  } catch (err) {
    if (!sse.signal.aborted) sse.send(streamError(err, spec.id, secrets));
  }
  sse.done();
};
