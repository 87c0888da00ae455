/** POST a JSON body and read the service's server-sent events (`data: <json>` … `data: [DONE]`). */
import { createParser } from "eventsource-parser";

export type Fetcher = (path: string, init?: RequestInit) => Promise<Response>;

/** A non-2xx answer before the stream: the service's ErrorResponse. */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Yields each event's parsed `data` until `[DONE]` (or the end of the body). */
export async function* streamEvents(
  fetcher: Fetcher,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): AsyncGenerator<unknown> {
  const res = await fetcher(path, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
    signal,
  });
  if (!res.ok) {
    let err = { error: `HTTP ${res.status}`, code: "HTTP_ERROR" };
    try {
      err = (await res.json()) as typeof err;
    } catch {
      // not JSON
    }
    throw new ServiceError(err.error, err.code, res.status);
  }
  if (!res.body) return;
  const queue: unknown[] = [];
  let done = false;
  const parser = createParser({
    onEvent: (e) => {
      if (e.data === "[DONE]") done = true;
      else if (!done) queue.push(JSON.parse(e.data));
    },
  });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  try {
    while (!done) {
      const { value, done: end } = await reader.read();
      if (end) break;
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length) yield queue.shift();
    }
    while (queue.length) yield queue.shift();
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
