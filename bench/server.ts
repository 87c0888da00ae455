/**
 * The service as the benchmark runs it: the real app, plus one route that is the floor: it
 * parses a request body of the same size and serializes a precomputed response body of the same
 * size, nothing else. Prints the port on stdout.
 */
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";

const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "error" }, {});
const { app } = await buildApp({ config, plugins: [] });
const floorResponses = new Map<string, unknown>();
app.post("/__bench/floor-response", async (req) => {
  const { key, body } = req.body as { key: string; body: unknown };
  floorResponses.set(key, body);
  return { ok: true };
});
app.post("/__bench/floor", async (req) => {
  const body = req.body as { __floor: string };
  return floorResponses.get(body.__floor);
});
await app.listen({ host: "127.0.0.1", port: 0 });
const addr = app.server.address();
process.stdout.write(`${typeof addr === "object" && addr ? addr.port : 0}\n`);
