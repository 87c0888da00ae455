/**
 * A loopback peer speaking the Anthropic Messages streaming format (message_start,
 * content_block_start / delta / stop, ping, message_delta, message_stop, error; fixtures in
 * ../fixtures/anthropic/). The request's `model` picks the scenario: `thinking`,
 * `overloaded` (error event mid-stream), `error-401`; anything else streams the plain message.
 */
import { fixture, type Peer, sendJson, startPeer, streamSse } from "./serve.ts";

export const startAnthropicPeer = (): Promise<Peer> =>
  startPeer(async (req, res, body) => {
    if (req.method !== "POST" || !req.url?.startsWith("/v1/messages"))
      return sendJson(res, 404, { type: "error", error: { type: "not_found_error", message: "Not found" } });
    const model = String(body?.model ?? "");
    if (model === "error-401") return sendJson(res, 401, fixture("anthropic/error-401.json"));
    if (model === "thinking") return streamSse(res, fixture("anthropic/thinking-stream.sse"));
    if (model === "overloaded") return streamSse(res, fixture("anthropic/overloaded-midstream.sse"));
    return streamSse(res, fixture("anthropic/messages-stream.sse"));
  });
