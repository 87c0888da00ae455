/** The service for bench/md.ts: the real app with a body cap large enough for a 10,000-atom × 1,000-frame file. Prints the port. */
import { loadConfig } from "../packages/server/src/config.ts";
import { buildApp } from "../packages/server/src/http/app.ts";

const config = loadConfig({ host: "127.0.0.1", port: 0, logLevel: "error", bodyLimit: 2 ** 31 - 1 }, {});
const { app } = await buildApp({ config, plugins: [] });
await app.listen({ host: "127.0.0.1", port: 0 });
const addr = app.server.address();
process.stdout.write(`${typeof addr === "object" && addr ? addr.port : 0}\n`);
