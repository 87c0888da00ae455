/**
 * A loopback peer speaking the chat-completions streaming format (OpenAI's documented
 * chat.completion.chunk SSE, fixtures in ../fixtures/openai-compat/). The request's `model`
 * picks the scenario: a fixture name (`content`, `tool-call-split`, `tool-calls-parallel`,
 * `usage-final`, `reasoning`, `malformed`), `drop` (connection cut mid-stream), or
 * `error-401` / `error-429` / `error-500`. `error-401` echoes the key it saw, as OpenAI does.
 * `tool-then-text` is a conversation: a tool call (`make_supercell`), then, once the request
 * carries a `tool` message, a text answer. `uff-then-text` is the same with `optimize_structure`
 * and `calculator: "uff"` (which the studio runs itself).
 */
import { fixture, type Peer, sendJson, startPeer, streamSse } from "./serve.ts";

export const startOpenAICompatPeer = (): Promise<Peer> =>
  startPeer(async (req, res, body) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions"))
      return sendJson(res, 404, { error: { message: "not found" } });
    const model = String(body?.model ?? "content");
    if (model === "error-401") {
      const key = (req.headers.authorization ?? "").replace(/^Bearer\s+/i, "");
      return sendJson(res, 401, fixture("openai-compat/error-401.json").replace("{KEY}", key));
    }
    if (model === "error-429") return sendJson(res, 429, fixture("openai-compat/error-429.json"));
    if (model === "error-500") return sendJson(res, 500, fixture("openai-compat/error-500.json"));
    if (model === "tool-then-text" || model === "uff-then-text") {
      const answered = Array.isArray(body?.messages) && body.messages.some((m) => (m as { role?: string }).role === "tool");
      const call = model === "uff-then-text" ? "openai-compat/tool-call-uff.sse" : "openai-compat/tool-call-split.sse";
      return streamSse(res, fixture(answered ? "openai-compat/content.sse" : call));
    }
    if (model === "drop") return streamSse(res, fixture("openai-compat/drop.sse"), { drop: true });
    return streamSse(res, fixture(`openai-compat/${model}.sse`));
  });
