/** Shared bits of the loopback peers: start an HTTP server on 127.0.0.1, record requests, stream fixtures. */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

export const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));

export const fixture = (rel: string): string => readFileSync(`${FIXTURES}${rel}`, "utf8");

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  xApiKey: string | undefined;
  body: Record<string, unknown> | null;
}

export interface Peer {
  /** Origin, `http://127.0.0.1:port`. */
  origin: string;
  port: number;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export type Route = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown> | null) => void | Promise<void>;

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let data = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => {
      data += d;
    });
    req.on("end", () => resolve(data));
    req.on("error", reject);
  });

export const startPeer = async (route: Route): Promise<Peer> => {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const text = await readBody(req);
    let body: Record<string, unknown> | null = null;
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
    } catch {
      body = null;
    }
    requests.push({
      method: req.method ?? "",
      path: (req.url ?? "").split("?")[0] as string,
      authorization: req.headers.authorization,
      xApiKey: req.headers["x-api-key"] as string | undefined,
      body,
    });
    try {
      await route(req, res, body);
    } catch (err) {
      res.destroy(err as Error);
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Stream an SSE fixture event by event (split on blank lines), with a small pause between events. */
export const streamSse = async (res: ServerResponse, sse: string, opts: { drop?: boolean } = {}): Promise<void> => {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  for (const block of sse.split(/\n\n/).filter((b) => b.trim())) {
    res.write(`${block}\n\n`);
    await sleep(2);
  }
  if (opts.drop) {
    res.socket?.destroy();
    return;
  }
  res.end();
};

export const sendJson = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
};
