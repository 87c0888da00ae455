/**
 * Who owns a viewer client id (packages/server/SECURITY.md, "Viewer relay"). The first
 * connection to use an id claims it with a secret (its own `client_secret`, or one the service
 * issues in the welcome message); later connections get the id only with the same secret, so a
 * client cannot take over another studio by connecting with its id. A claim outlives its
 * connection by `CLAIM_TTL_MS`, so a studio that reconnects (network change, reload, another
 * service process behind a load balancer) keeps its id and nobody else can grab it meanwhile.
 *
 * Only a SHA-256 of the secret is kept. In one process the claims live in memory; with
 * `ATOMSTUDIO_REDIS_URL` they live in Redis (redis.ts), shared by every process.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** How long an id stays reserved for its owner after the owner's last connection ended. */
export const CLAIM_TTL_MS = 24 * 3600_000;

/** Client ids a studio may ask for. */
export const CLIENT_ID = /^[\w.:-]{1,128}$/;
/** Secrets a studio may bring (the service issues 43 base64url characters). */
export const CLIENT_SECRET = /^[\w-]{16,128}$/;

export const newClientSecret = (): string => randomBytes(32).toString("base64url");

export const secretHash = (secret: string): string => createHash("sha256").update(secret).digest("hex");

export const sameHash = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export interface ClientClaims {
  /** Claim `id` for `secret` when it is free, or prove an earlier claim with the same secret. */
  claim(id: string, secret: string): Promise<boolean>;
  /** The id's last connection ended: the claim lasts `CLAIM_TTL_MS` from now. */
  release(id: string): void;
}

/** Claims of one process. At most `max` are kept: beyond, the oldest released ones are forgotten. */
export class LocalClaims implements ClientClaims {
  /** id → hash of the secret and when the claim ends (Infinity while connected); oldest first. */
  readonly #claims = new Map<string, { hash: string; expires: number }>();

  constructor(
    readonly ttlMs = CLAIM_TTL_MS,
    readonly max = 10_000,
  ) {}

  async claim(id: string, secret: string): Promise<boolean> {
    return this.claimNow(id, secret);
  }

  claimNow(id: string, secret: string): boolean {
    const hash = secretHash(secret);
    const held = this.#claims.get(id);
    if (held && held.expires > Date.now() && !sameHash(held.hash, hash)) return false;
    this.#claims.delete(id);
    this.#claims.set(id, { hash, expires: Number.POSITIVE_INFINITY });
    this.#trim();
    return true;
  }

  release(id: string): void {
    const held = this.#claims.get(id);
    if (held) held.expires = Date.now() + this.ttlMs;
  }

  #trim(): void {
    if (this.#claims.size <= this.max) return;
    const now = Date.now();
    for (const [id, c] of this.#claims) if (c.expires <= now) this.#claims.delete(id);
    for (const [id, c] of this.#claims) {
      if (this.#claims.size <= this.max) break;
      if (c.expires !== Number.POSITIVE_INFINITY) this.#claims.delete(id);
    }
  }
}
