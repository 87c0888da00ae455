#!/usr/bin/env node
/** `atomstudio serve [--host H] [--port P] [--allow-unauthenticated]` — the command line. */
import { parseArgs } from "node:util";
import { loadConfig } from "./config.ts";
import { buildApp } from "./http/app.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "./jobs/embedded-redis.ts";
import { VERSION } from "./version.ts";

const usage = `AtomStudio ${VERSION}
usage:
  atomstudio serve [--host 127.0.0.1] [--port 8000] [--allow-unauthenticated]
  atomstudio mcp [--url http://127.0.0.1:8000] [--token T] [--viewer-client ID]   (MCP over stdio)
configuration: ATOMSTUDIO_* environment variables, listed in the README's configuration table`;

const serve = async (args: string[]): Promise<void> => {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      "allow-unauthenticated": { type: "boolean" },
    },
  });
  const config = loadConfig({
    ...(values.host ? { host: values.host } : {}),
    ...(values.port ? { port: Number(values.port) } : {}),
    ...(values["allow-unauthenticated"] ? { allowUnauthenticated: true } : {}),
  });
  // The embedded Redis (README "Workflows"): the job queue when no shared Redis is configured.
  let embedded: EmbeddedRedis | undefined;
  let queueNote = config.redisUrl ? "job queue: Redis" : "job queue: none (workflows answer 503)";
  if (!config.redisUrl && config.embeddedRedis) {
    try {
      embedded = await startEmbeddedRedis(config.dataDir, { env: config.environment });
      config.queueUrl = embedded.url;
      queueNote = `job queue: embedded redis-server (${config.dataDir})`;
    } catch (e) {
      process.stderr.write(
        `atomstudio: the embedded redis-server did not start (${(e as Error).message}); workflow routes answer 503 QUEUE_UNAVAILABLE. Install Debian's redis-server (scripts/setup-system) or set ATOMSTUDIO_REDIS_URL.\n`,
      );
    }
  }
  const { app } = await buildApp({ config });
  await app.listen({ host: config.host, port: config.port });
  const addr = app.server.address();
  const port = typeof addr === "object" && addr ? addr.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const enabled = [
    config.token ? "bearer token required" : "no token (loopback only)",
    config.corsOrigins.length ? `CORS: ${config.corsOrigins.join(", ")}` : "CORS: same origin",
    ...(config.allowedHosts.length ? [`host names: ${config.allowedHosts.join(", ")}`] : []),
    config.redisUrl ? "viewer relay: Redis" : "viewer relay: in-process",
    queueNote,
  ];
  process.stdout.write(
    `AtomStudio ${VERSION} listening on http://${host}:${port}  (API docs: http://${host}:${port}/api/docs; ${enabled.join("; ")})\n`,
  );
  const stop = async () => {
    await app.close();
    await embedded?.stop();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
};

const main = async (): Promise<void> => {
  const [command, ...rest] = process.argv.slice(2);
  if (command === "serve") return serve(rest);
  if (command === "mcp") return (await import("./mcp/stdio.ts")).mcpCommand(rest);
  if (command === "--version" || command === "version") return void process.stdout.write(`${VERSION}\n`);
  process.stdout.write(`${usage}\n`);
  if (command && command !== "help" && command !== "--help") process.exitCode = 2;
};

main().catch((err: unknown) => {
  process.stderr.write(`atomstudio: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
