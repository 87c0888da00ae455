/**
 * `atomstudio mcp`: the same MCP tools over stdio. Structure editing and building run in this
 * process (the operations' own handlers); tools that need the running service's state (viewer,
 * chat providers, calculators) are forwarded to it over HTTP. stdout carries MCP only: logs go to
 * stderr.
 */
import { parseArgs } from "node:util";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { FastifyBaseLogger } from "fastify";
import { type Environment, loadConfig, processEnvironment, readSettings } from "../config.ts";
import { operations as allOperations } from "../operations/index.ts";
import type { Operation } from "../registry/operation.ts";
import { type ServiceTarget, stdioInvoke } from "./invoke.ts";
import { createMcpServer } from "./server.ts";

export const DEFAULT_SERVICE_URL = "http://127.0.0.1:8000";

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;

/** A logger that writes JSON lines to stderr (stdout belongs to MCP). */
const stderrLogger = (level: string, bindings: Record<string, unknown> = {}): FastifyBaseLogger => {
  const min = Math.max(0, LEVELS.indexOf(level as (typeof LEVELS)[number]));
  const log: Record<string, unknown> = {
    level,
    silent: () => {},
    child: (b: Record<string, unknown>) => stderrLogger(level, { ...bindings, ...b }),
  };
  LEVELS.forEach((name, i) => {
    log[name] = (obj: unknown, msg?: string) => {
      if (i < min) return;
      const fields = typeof obj === "object" && obj !== null ? obj : { msg: obj };
      const err = (fields as { err?: unknown }).err;
      const line = { level: name, time: Date.now(), ...bindings, ...fields, ...(msg ? { msg } : {}) };
      if (err instanceof Error) (line as Record<string, unknown>).err = { message: err.message, stack: err.stack };
      process.stderr.write(`${JSON.stringify(line)}\n`);
    };
  });
  return log as unknown as FastifyBaseLogger;
};

export interface StdioOptions extends ServiceTarget {
  operations?: readonly Operation[];
}

export const parseMcpArgs = (args: string[], env: Environment = processEnvironment()): ServiceTarget => {
  const settings = readSettings(env);
  const { values } = parseArgs({
    args,
    options: { url: { type: "string" }, token: { type: "string" }, "viewer-client": { type: "string" } },
  });
  const viewerClient = values["viewer-client"] ?? settings.ATOMSTUDIO_VIEWER_CLIENT;
  return {
    url: values.url ?? settings.ATOMSTUDIO_URL ?? DEFAULT_SERVICE_URL,
    token: values.token ?? settings.ATOMSTUDIO_TOKEN,
    ...(viewerClient ? { headers: { "x-viewer-client": viewerClient } } : {}),
  };
};

/** Serve MCP on stdin/stdout until stdin closes. */
export const serveStdio = async (opts: StdioOptions): Promise<void> => {
  // In-process operations get the service's default configuration (never the network settings).
  const config = loadConfig({ host: "127.0.0.1", port: 0, token: undefined });
  const log = stderrLogger(readSettings(processEnvironment()).ATOMSTUDIO_LOG_LEVEL ?? "warn");
  const server = createMcpServer({
    operations: opts.operations ?? allOperations,
    invoke: stdioInvoke({ config, log }, opts),
    onInternalError: (err, requestId) => log.error({ err, requestId }, "MCP tool call failed"),
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  process.stdin.once("end", () => void server.close());
  await server.connect(transport);
  await closed;
};

export const mcpCommand = async (args: string[]): Promise<void> => serveStdio(parseMcpArgs(args));
