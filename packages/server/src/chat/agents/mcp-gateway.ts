/**
 * How an agent reaches this service's MCP tools when the service has a bearer token
 * (decisions §9: agents never get `ATOMSTUDIO_TOKEN`).
 *
 * Each agent run gets its own credential: 32 random bytes, minted when the run starts and revoked
 * when it ends. It opens only this gateway, a stateless streamable-HTTP MCP endpoint on
 * 127.0.0.1 (its own listener, so the credential can never open `/api` or the service's `/mcp`,
 * and cannot be used from another machine even when the service listens on every address). The
 * gateway serves the same tools as `/mcp`, run in process, limited to the run's
 * `available_tools` when the request named some. At worst an agent can call those `svc_*` tools
 * during its own run.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { ServiceContext } from "../../context.ts";
import { localInvoke } from "../../mcp/invoke.ts";
import { createMcpServer } from "../../mcp/server.ts";
import type { Operation } from "../../registry/operation.ts";

/** What an agent is given to reach MCP: a URL, and the bearer credential when one is needed. */
export interface McpAccess {
  url: string;
  token: string | null;
  /** Ends the credential (idempotent). */
  revoke(): void;
}

interface Grant {
  operations: readonly Operation[];
}

const digest = (token: string) => createHash("sha256").update(token).digest("hex");

const answer = (res: ServerResponse, status: number, code: string, error: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify({ error, code }));
};

export class AgentMcpGateway {
  private server: Server | null = null;
  private starting: Promise<string> | null = null;
  // Keyed by the credential's SHA-256: a lookup does not compare secrets byte by byte.
  private readonly grants = new Map<string, Grant>();

  constructor(
    private readonly ctx: ServiceContext,
    private readonly operations: () => readonly Operation[],
  ) {}

  /** A credential for one run, for the given `svc_*` tools (null: every tool). */
  async mint(tools: readonly string[] | null): Promise<McpAccess> {
    const origin = await this.start();
    const token = randomBytes(32).toString("base64url");
    const key = digest(token);
    const all = this.operations().filter((op) => op.mcp);
    this.grants.set(key, { operations: tools ? all.filter((op) => tools.includes(op.mcp as string)) : all });
    return { url: `${origin}/mcp`, token, revoke: () => void this.grants.delete(key) };
  }

  /** Live credentials (tests: none is left after a run). */
  get live(): number {
    return this.grants.size;
  }

  async close(): Promise<void> {
    this.grants.clear();
    const server = this.server;
    this.server = null;
    this.starting = null;
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  private start(): Promise<string> {
    this.starting ??= new Promise<string>((resolve, reject) => {
      const server = createServer((req, res) => void this.handle(req, res));
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        this.server = server;
        resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      });
    });
    return this.starting;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/mcp") return answer(res, 404, "NOT_FOUND", "Only /mcp is served here");
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
    const grant = m ? this.grants.get(digest(m[1] as string)) : undefined;
    if (!grant) return answer(res, 401, "UNAUTHORIZED", "Missing, invalid or expired agent credential");
    // Agents are not browsers: a page that learned the URL gets nothing.
    if (req.headers.origin !== undefined) return answer(res, 403, "FORBIDDEN_ORIGIN", "Browsers may not use this endpoint");
    if (req.method !== "POST")
      return answer(res, 405, "METHOD_NOT_ALLOWED", "This MCP endpoint is stateless: POST JSON-RPC messages to it", {
        allow: "POST",
      });
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req, this.ctx.config.bodyLimit));
    } catch (err) {
      const tooLarge = (err as Error).message === "too large";
      return answer(res, tooLarge ? 413 : 422, tooLarge ? "PAYLOAD_TOO_LARGE" : "MALFORMED_REQUEST", "Body is not valid JSON");
    }
    const query = Object.fromEntries(url.searchParams);
    const server = createMcpServer({
      operations: grant.operations,
      invoke: localInvoke(this.ctx, { headers: req.headers, query }),
      onInternalError: (err, requestId) => this.ctx.log.error({ err, requestId }, "agent MCP tool call failed"),
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (err) {
      this.ctx.log.error({ err }, "agent MCP transport failed");
      if (!res.headersSent) answer(res, 500, "INTERNAL_ERROR", "Internal server error");
      else res.end();
    }
  }
}

const readBody = (req: IncomingMessage, limit: number): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error("too large"));
        req.destroy();
      } else chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
