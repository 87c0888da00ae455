/**
 * Uploaded files on disk, private to this service: one folder per service (mode 0700, made by
 * mkdtemp under TMPDIR), each file created 0600 with O_EXCL | O_NOFOLLOW under a random name (so
 * nothing planted in the folder is followed or reused), hashed while it is received.
 *
 * A multipart upload streams straight into such a file (no buffering, no base64); one that ends
 * within the first MiB is kept in memory instead and reaches the disk only when it is held and its
 * content is not there yet (a repeated request writes nothing; a few small synchronous calls cost
 * less than the thread-pool round trips of open, write, close and rename, each of which waits for
 * a core on a loaded machine). A JSON file is likewise held from its decoded bytes. Before a
 * worker reads a file it is `hold`-en: moved (or written) under its sha256 (the cache a repeated
 * request reuses, the 16 latest kept) and pinned until the request ends. Workers get only paths
 * inside this folder, made here; callers never name a path.
 */
import { createHash, randomUUID } from "node:crypto";
import { chmodSync, closeSync, constants, mkdtempSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { open, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { provide, type ServiceContext } from "../context.ts";

declare module "../context.ts" {
  interface Services {
    uploads: UploadStore;
  }
}

/** A file received by the store: on disk under a random name (`path`) or, when small, still in memory (`bytes`). */
export interface ReceivedFile {
  path?: string;
  bytes?: Buffer;
  sha256: string;
  size: number;
  filename?: string;
}

/** A file in the sha256 cache, pinned until `release`. */
export interface HeldFile {
  path: string;
  sha256: string;
  release: () => void;
}

const CREATE_PRIVATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** Bytes gathered before one write: a multipart stream comes in 64 KiB pieces. A file within this stays in memory until held. */
const WRITE_BATCH = 1 << 20;
/** Above this, a JSON file is hashed by WebCrypto on the thread pool, not on the event loop. */
const SYNC_HASH_BYTES = 4 * 1024 * 1024;

export class UploadStore {
  readonly root: string;
  readonly keep: number;
  /** sha256 → path, oldest first. */
  #cached = new Map<string, string>();
  #pins = new Map<string, number>();

  constructor(parent: string, keep = 16) {
    this.root = mkdtempSync(join(parent, "atomstudio-files-"));
    chmodSync(this.root, 0o700);
    this.keep = keep;
  }

  #newPath(): string {
    return join(this.root, `upload-${randomUUID()}`);
  }

  /**
   * Receive a stream while hashing it: into a new private file, or kept in memory when it ends
   * within WRITE_BATCH bytes; `onChunk` may throw to stop (a size cap).
   */
  async receive(chunks: AsyncIterable<Buffer>, onChunk?: (bytes: number) => void): Promise<ReceivedFile> {
    const hash = createHash("sha256");
    let size = 0;
    let batch: Buffer[] = [];
    let batched = 0;
    let path: string | undefined;
    let handle: Awaited<ReturnType<typeof open>> | undefined;
    try {
      for await (const chunk of chunks) {
        onChunk?.(chunk.length);
        hash.update(chunk);
        size += chunk.length;
        batch.push(chunk);
        batched += chunk.length;
        if (batched >= WRITE_BATCH) {
          if (!handle) {
            path = this.#newPath();
            handle = await open(path, CREATE_PRIVATE, 0o600);
          }
          await handle.writev(batch);
          batch = [];
          batched = 0;
        }
      }
      if (!handle) return { bytes: Buffer.concat(batch, batched), sha256: hash.digest("hex"), size };
      if (batch.length) await handle.writev(batch);
    } catch (e) {
      await handle?.close();
      if (path) await unlink(path).catch(() => {});
      throw e;
    }
    await handle.close();
    return { path, sha256: hash.digest("hex"), size };
  }

  /** A file whose bytes are in memory already (a JSON body's file): hashed now, written when held. */
  async write(bytes: Buffer): Promise<ReceivedFile> {
    const sha256 =
      bytes.length > SYNC_HASH_BYTES
        ? Buffer.from(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)).toString("hex")
        : createHash("sha256").update(bytes).digest("hex");
    return { bytes, sha256, size: bytes.length };
  }

  /** Bytes to a new private file under a random name (synchronous calls for a small file, see the module's comment). */
  async #writeNew(bytes: Buffer): Promise<string> {
    const path = this.#newPath();
    if (bytes.length <= WRITE_BATCH) {
      const fd = openSync(path, CREATE_PRIVATE, 0o600);
      try {
        for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
      } finally {
        closeSync(fd);
      }
      return path;
    }
    const handle = await open(path, CREATE_PRIVATE, 0o600);
    try {
      await handle.writeFile(bytes);
    } finally {
      await handle.close();
    }
    return path;
  }

  /**
   * Move a received file under its sha256 (or drop it when that content is already there) and pin
   * it until `release`; the oldest unpinned files beyond `keep` are deleted.
   */
  async hold(file: ReceivedFile): Promise<HeldFile> {
    const { sha256 } = file;
    let path = this.#cached.get(sha256);
    if (path) {
      this.#cached.delete(sha256);
      if (file.path) await unlink(file.path).catch(() => {});
    } else {
      path = join(this.root, sha256);
      renameSync(file.path ?? (await this.#writeNew(file.bytes ?? Buffer.alloc(0))), path);
    }
    this.#cached.set(sha256, path);
    this.#pins.set(sha256, (this.#pins.get(sha256) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const n = (this.#pins.get(sha256) ?? 1) - 1;
      if (n > 0) this.#pins.set(sha256, n);
      else this.#pins.delete(sha256);
      this.#evict();
    };
    this.#evict();
    return { path, sha256, release };
  }

  /** Delete a received file that was not held (the request ended or failed first); one in memory has nothing on disk. */
  async discard(file: ReceivedFile): Promise<void> {
    if (file.path) await unlink(file.path).catch(() => {});
  }

  #evict(): void {
    for (const [sha, path] of this.#cached) {
      if (this.#cached.size <= this.keep) break;
      if (this.#pins.has(sha)) continue;
      this.#cached.delete(sha);
      // at once, so a later hold of the same content cannot be deleted by this one's late unlink
      rmSync(path, { force: true });
    }
  }

  close(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The service's store, made on first use under TMPDIR (or the system's temporary folder). */
export const uploadStore = (ctx: ServiceContext): UploadStore =>
  ctx.services.uploads ?? provide(ctx, "uploads", new UploadStore(ctx.config.environment.TMPDIR || tmpdir()));
