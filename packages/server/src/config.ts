/** Service configuration from flags and environment, with safe defaults (decisions §7). */
export interface ServiceConfig {
  host: string;
  port: number;
  /** Bearer token required on /api and /mcp when set (ATOMSTUDIO_TOKEN). */
  token: string | undefined;
  allowUnauthenticated: boolean;
  /** Extra origins allowed by CORS (ATOMSTUDIO_CORS_ORIGINS, comma separated); empty: same origin only. */
  corsOrigins: string[];
  /** Request body cap in bytes (ATOMSTUDIO_MAX_BODY_MB, default 64 MiB). */
  bodyLimit: number;
  redisUrl: string | undefined;
  logLevel: string;
}

export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);

export const loadConfig = (flags: Partial<ServiceConfig> = {}, env: NodeJS.ProcessEnv = process.env): ServiceConfig => {
  const config: ServiceConfig = {
    host: flags.host ?? env.ATOMSTUDIO_HOST ?? "127.0.0.1",
    port: flags.port ?? Number(env.ATOMSTUDIO_PORT ?? 8000),
    token: flags.token ?? (env.ATOMSTUDIO_TOKEN || undefined),
    allowUnauthenticated: flags.allowUnauthenticated ?? env.ATOMSTUDIO_ALLOW_UNAUTHENTICATED === "1",
    corsOrigins:
      flags.corsOrigins ??
      (env.ATOMSTUDIO_CORS_ORIGINS ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    bodyLimit: flags.bodyLimit ?? Math.round(Number(env.ATOMSTUDIO_MAX_BODY_MB ?? 64) * 1024 * 1024),
    redisUrl: flags.redisUrl ?? (env.ATOMSTUDIO_REDIS_URL || undefined),
    logLevel: flags.logLevel ?? env.ATOMSTUDIO_LOG_LEVEL ?? "info",
  };
  if (!Number.isInteger(config.port) || config.port < 0 || config.port > 65535) throw new Error(`Invalid port ${config.port}`);
  if (!isLoopback(config.host) && !config.token && !config.allowUnauthenticated)
    throw new Error(
      `Refusing to listen on ${config.host} without authentication: set ATOMSTUDIO_TOKEN, or pass --allow-unauthenticated if you really mean it.`,
    );
  return config;
};
