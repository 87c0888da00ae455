/**
 * Chat-completion-chunk stream → the service's normalized events: `{text}` for content and one
 * `{tool_call: {id, name, arguments}}` per call, accumulated per `index` across chunks and emitted
 * whole when the choice finishes (or when the stream ends). Usage-only chunks (empty `choices`)
 * and `reasoning_content` deltas are ignored.
 */
import type { ChatStreamEvent } from "../types.ts";

interface ToolCallDelta {
  index?: number;
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: string | null } | null;
}

export interface ChunkLike {
  choices?: Array<{
    index?: number;
    delta?: { content?: string | null; tool_calls?: ToolCallDelta[] | null; [k: string]: unknown } | null;
    finish_reason?: string | null;
  }> | null;
}

interface Pending {
  id: string;
  name: string;
  arguments: string;
}

export class ChunkNormalizer {
  private pending = new Map<number, Pending>();

  push(chunk: ChunkLike): ChatStreamEvent[] {
    const out: ChatStreamEvent[] = [];
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta ?? {};
      if (typeof delta.content === "string" && delta.content.length > 0) out.push({ text: delta.content });
      for (const [pos, tc] of (delta.tool_calls ?? []).entries()) {
        const index = typeof tc.index === "number" ? tc.index : pos;
        const cur = this.pending.get(index) ?? { id: "", name: "", arguments: "" };
        if (tc.id) cur.id = tc.id;
        const name = tc.function?.name;
        // Providers send the name once; a few repeat it on every delta.
        if (name && name !== cur.name) cur.name += name;
        if (tc.function?.arguments) cur.arguments += tc.function.arguments;
        this.pending.set(index, cur);
      }
      if (choice.finish_reason) out.push(...this.flush());
    }
    return out;
  }

  /** Emit every accumulated tool call, in index order. */
  flush(): ChatStreamEvent[] {
    const out: ChatStreamEvent[] = [...this.pending.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, p]) => ({ tool_call: { id: p.id || `call_${index}`, name: p.name, arguments: p.arguments || "{}" } }));
    this.pending.clear();
    return out;
  }
}
