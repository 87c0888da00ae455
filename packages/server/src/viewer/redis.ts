/**
 * The relay across service processes (decisions §5): with `ATOMSTUDIO_REDIS_URL` set, a request
 * that reaches a process without the chosen studio is published on the channel of the process
 * that holds it, which runs it on its socket and publishes the reply back.
 *
 * Redis keys (prefix `atomstudio:viewer:`):
 * - `clients` (hash): client id → `{node, active}` for every connected studio of every process;
 * - `alive:<node>` (string with a 15 s expiry, refreshed every 5 s): the process is up, so its
 *   entries in `clients` are real (a process that died without cleaning up is skipped);
 * - `owner:<id>` (string, expiry CLAIM_TTL_MS, refreshed while connected): SHA-256 of the secret
 *   that owns the client id (claims.ts), so a studio keeps its id on whichever process it reaches;
 * - channel `node:<node>`: requests `{type: "request", id, from, client_id, command, params}`
 *   to that process and replies `{type: "reply", id, ok, result | error}` to it.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { CLAIM_TTL_MS, type ClientClaims, LocalClaims, sameHash, secretHash } from "./claims.ts";
import { errorPayload, noViewer, type ViewerClientInfo, type ViewerHub, viewerError, viewerTimeout } from "./hub.ts";

const PREFIX = "atomstudio:viewer:";
const CLIENTS = `${PREFIX}clients`;
const aliveKey = (node: string) => `${PREFIX}alive:${node}`;
const channel = (node: string) => `${PREFIX}node:${node}`;
const ownerKey = (id: string) => `${PREFIX}owner:${id}`;
const ALIVE_MS = 15_000;
const HEARTBEAT_MS = 5_000;
/** Activity is written to Redis at most this often per client. */
const ACTIVITY_WRITE_MS = 250;

interface Entry {
  node: string;
  active: number;
}

interface Waiting {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class RedisBridge implements ClientClaims {
  readonly node: string = randomUUID();
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #waiting = new Map<string, Waiting>();
  readonly #lastWrite = new Map<string, number>();
  /** Claims made while Redis could not be reached (this process's studios only). */
  readonly #localClaims = new LocalClaims();
  #heartbeat: ReturnType<typeof setInterval> | undefined;

  constructor(
    url: string,
    readonly hub: ViewerHub,
    readonly log: { warn: (o: unknown, m?: string) => void },
  ) {
    const opts = { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: true };
    this.#pub = new Redis(url, opts);
    this.#sub = new Redis(url, opts);
    for (const r of [this.#pub, this.#sub])
      r.on("error", (e: Error) => log.warn({ err: e.message }, "viewer relay: redis error"));
  }

  async start(): Promise<void> {
    await Promise.all([this.#pub.connect(), this.#sub.connect()]);
    this.#sub.on("message", (_ch: string, raw: string) => void this.#onMessage(raw));
    await this.#sub.subscribe(channel(this.node));
    await this.#beat();
    this.#heartbeat = setInterval(() => void this.#beat().catch(() => {}), HEARTBEAT_MS);
    this.#heartbeat.unref?.();
    this.hub.onChange = (event, client) => void this.#publishClient(event, client).catch(() => {});
    for (const c of this.hub.list()) await this.#publishClient("connect", c);
  }

  async stop(): Promise<void> {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.hub.onChange = undefined;
    for (const w of this.#waiting.values()) {
      clearTimeout(w.timer);
      w.reject(noViewer("The service is shutting down"));
    }
    this.#waiting.clear();
    try {
      const mine = this.hub.list().map((c) => c.id);
      if (mine.length) await this.#pub.hdel(CLIENTS, ...mine);
      await this.#pub.del(aliveKey(this.node));
    } catch {
      // best effort
    }
    this.#sub.disconnect();
    this.#pub.disconnect();
  }

  async #beat(): Promise<void> {
    const batch = this.#pub.multi().set(aliveKey(this.node), "1", "PX", ALIVE_MS);
    // Connected studios keep their ids however long they stay.
    for (const c of this.hub.list()) batch.pexpire(ownerKey(c.id), CLAIM_TTL_MS);
    await batch.exec();
  }

  async claim(id: string, secret: string): Promise<boolean> {
    const hash = secretHash(secret);
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        if ((await this.#pub.set(ownerKey(id), hash, "PX", CLAIM_TTL_MS, "NX")) === "OK") return true;
        const held = await this.#pub.get(ownerKey(id));
        // Expired between the two commands: try again.
        if (held === null) continue;
        if (!sameHash(held, hash)) return false;
        await this.#pub.pexpire(ownerKey(id), CLAIM_TTL_MS);
        return true;
      }
      return false;
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, "viewer relay: redis unavailable, claiming the client id locally");
      return this.#localClaims.claimNow(id, secret);
    }
  }

  release(id: string): void {
    this.#localClaims.release(id);
    void this.#pub.pexpire(ownerKey(id), CLAIM_TTL_MS).catch(() => {});
  }

  async #publishClient(event: "connect" | "disconnect" | "active", c: ViewerClientInfo): Promise<void> {
    if (event === "disconnect") {
      this.#lastWrite.delete(c.id);
      // Only remove the entry if it is still ours (the id may have reconnected elsewhere).
      const raw = await this.#pub.hget(CLIENTS, c.id);
      if (raw && (JSON.parse(raw) as Entry).node === this.node) await this.#pub.hdel(CLIENTS, c.id);
      return;
    }
    const now = Date.now();
    if (event === "active" && now - (this.#lastWrite.get(c.id) ?? 0) < ACTIVITY_WRITE_MS) return;
    this.#lastWrite.set(c.id, now);
    await this.#pub.hset(CLIENTS, c.id, JSON.stringify({ node: this.node, active: c.lastActive } satisfies Entry));
  }

  /** Where the named client (or the most recently active one) lives, across processes. */
  async #locate(clientId: string | undefined): Promise<{ id: string; node: string } | undefined> {
    const all = await this.#pub.hgetall(CLIENTS);
    const entries = Object.entries(all).map(([id, raw]) => ({ id, ...(JSON.parse(raw) as Entry) }));
    // This process's own clients are known exactly, whatever Redis holds.
    for (const c of this.hub.list()) {
      const e = entries.find((x) => x.id === c.id);
      if (e) Object.assign(e, { node: this.node, active: Math.max(e.active, c.lastActive) });
      else entries.push({ id: c.id, node: this.node, active: c.lastActive });
    }
    const nodes = [...new Set(entries.map((e) => e.node).filter((n) => n !== this.node))];
    const alive = new Set([this.node]);
    if (nodes.length) {
      const flags = await this.#pub.mget(...nodes.map(aliveKey));
      nodes.forEach((n, i) => {
        if (flags[i]) alive.add(n);
      });
    }
    const live = entries.filter((e) => alive.has(e.node) && (e.node !== this.node || this.hub.has(e.id)));
    if (clientId) return live.find((e) => e.id === clientId);
    let best: (typeof live)[number] | undefined;
    for (const e of live) if (!best || e.active > best.active) best = e;
    return best;
  }

  async request(clientId: string | undefined, command: string, params: unknown, timeoutMs: number): Promise<unknown> {
    let target: { id: string; node: string } | undefined;
    try {
      target = await this.#locate(clientId);
    } catch (e) {
      // Redis is down: this process can still serve its own studios.
      this.log.warn({ err: (e as Error).message }, "viewer relay: redis unavailable, answering locally");
      return this.hub.request(clientId, command, params, timeoutMs);
    }
    if (!target) throw clientId ? noViewer(`No studio with client id ${clientId} is connected`) : noViewer();
    if (target.node === this.node) return this.hub.request(target.id, command, params, timeoutMs);
    const id = randomUUID();
    const reply = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(viewerTimeout(timeoutMs, target.id));
      }, timeoutMs);
      this.#waiting.set(id, { resolve, reject, timer });
    });
    const receivers = await this.#pub.publish(
      channel(target.node),
      JSON.stringify({ type: "request", id, from: this.node, client_id: target.id, command, params, timeout_ms: timeoutMs }),
    );
    if (receivers === 0) {
      const w = this.#waiting.get(id);
      if (w) {
        clearTimeout(w.timer);
        this.#waiting.delete(id);
        w.reject(noViewer("The service process holding the studio is gone"));
      }
    }
    return reply;
  }

  async #onMessage(raw: string): Promise<void> {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    if (msg.type === "reply" && typeof msg.id === "string") {
      const w = this.#waiting.get(msg.id);
      if (!w) return;
      this.#waiting.delete(msg.id);
      clearTimeout(w.timer);
      if (msg.ok === true) w.resolve(msg.result);
      else w.reject(viewerError(msg.error));
      return;
    }
    if (msg.type === "request" && typeof msg.id === "string" && typeof msg.from === "string") {
      const timeout = typeof msg.timeout_ms === "number" ? msg.timeout_ms : this.hub.timeoutMs;
      let out: Record<string, unknown>;
      try {
        const result = await this.hub.request(msg.client_id as string, msg.command as string, msg.params, timeout);
        out = { type: "reply", id: msg.id, ok: true, result };
      } catch (e) {
        out = { type: "reply", id: msg.id, ok: false, error: errorPayload(e) };
      }
      await this.#pub.publish(channel(msg.from), JSON.stringify(out)).catch(() => {});
    }
  }
}
