/**
 * multipart/form-data bodies (`@fastify/multipart`), read into the JSON shape operations validate:
 *
 * - a file in a field named `file` or `content` becomes `content` (UTF-8 text) and `filename`:
 *   the single-file text upload of `/api/structure/parse`;
 * - a file in any other field streams straight to a private file (uploads.ts: 0600 in the
 *   service's 0700 folder, hashed while written, byte for byte so gzip and bzip2 survive; one
 *   within the first MiB stays in memory until an operation holds it): the
 *   request's `uploadedFiles` map holds it under the field's name, and the body gets the
 *   placeholder `{content: "", encoding: "latin1", filename}` so the field validates. Operations
 *   that read uploads (the analysis routes) take the file from the map; the file is deleted when
 *   the response is sent unless the operation moved it into the sha256 cache;
 * - a field named `params` holding a JSON object is merged into the body (lists and nested
 *   options), and other fields are copied as strings.
 *
 * The whole body is capped at `limit` bytes (files and fields together, checked on the declared
 * Content-Length first and again while reading): past it, 413 PAYLOAD_TOO_LARGE.
 */
import multipart from "@fastify/multipart";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ReceivedFile, UploadStore } from "./uploads.ts";

const MAX_FILES = 16;
const MAX_FIELDS = 64;
const TEXT_FILE_FIELDS = new Set(["file", "content"]);

const tooLarge = (limit: number) =>
  new AtomStudioError("PAYLOAD_TOO_LARGE", `The multipart body is larger than ${limit} bytes`, { limit }, 413);
const malformed = (why: string) => new AtomStudioError("MALFORMED_REQUEST", `Bad multipart body: ${why}`, undefined, 422);

const uploads = new WeakMap<FastifyRequest, Map<string, ReceivedFile>>();

/** The files a multipart request streamed to disk, by field name (empty for JSON bodies). */
export const uploadedFiles = (req: FastifyRequest): ReadonlyMap<string, ReceivedFile> => uploads.get(req) ?? new Map();

const readParts = async (req: FastifyRequest, limit: number, store: () => UploadStore): Promise<Record<string, unknown>> => {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const body: Record<string, unknown> = {};
  const seen = new Set<string>();
  let total = 0;
  const count = (n: number) => {
    total += n;
    if (total > limit) throw tooLarge(limit);
  };
  try {
    for await (const part of req.parts()) {
      if (seen.has(part.fieldname)) throw malformed(`field ${part.fieldname} is given twice`);
      seen.add(part.fieldname);
      if (part.type === "file" && TEXT_FILE_FIELDS.has(part.fieldname)) {
        const chunks: Buffer[] = [];
        for await (const chunk of part.file as AsyncIterable<Buffer>) {
          count(chunk.length);
          chunks.push(chunk);
        }
        body.content = Buffer.concat(chunks).toString("utf8");
        if (part.filename) body.filename = part.filename;
      } else if (part.type === "file") {
        const received = await store().receive(part.file as AsyncIterable<Buffer>, count);
        const filename = part.filename ? { filename: part.filename } : {};
        const map = uploads.get(req) ?? new Map<string, ReceivedFile>();
        uploads.set(req, map);
        map.set(part.fieldname, { ...received, ...filename });
        body[part.fieldname] = { content: "", encoding: "latin1", ...filename };
      } else {
        const value = String(part.value ?? "");
        count(value.length);
        if (part.fieldname === "params") {
          let parsed: unknown;
          try {
            parsed = JSON.parse(value);
          } catch {
            throw malformed("the params field is not JSON");
          }
          if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw malformed("params must be a JSON object");
          for (const [k, v] of Object.entries(parsed)) if (!(k in body)) body[k] = v;
        } else body[part.fieldname] = value;
      }
    }
  } catch (e) {
    if (e instanceof AtomStudioError) throw e;
    const err = e as { statusCode?: number; message?: string };
    if (err.statusCode === 413) throw tooLarge(limit);
    throw malformed(err.message ?? "unreadable");
  }
  return body;
};

export const registerMultipart = async (app: FastifyInstance, limit: number, store: () => UploadStore): Promise<void> => {
  await app.register(multipart, {
    // one byte over the cap, so the running count (which names the cap) sees it first
    limits: { fileSize: limit + 1, fieldSize: limit + 1, files: MAX_FILES, fields: MAX_FIELDS, parts: MAX_FILES + MAX_FIELDS },
    throwFileSizeLimit: true,
  });
  app.addHook("preValidation", async (req) => {
    if (req.isMultipart()) req.body = await readParts(req, limit, store);
  });
  // uploads not moved into the sha256 cache are deleted once the request is over, however it ended
  const cleanUp = async (req: FastifyRequest) => {
    const files = uploads.get(req);
    if (!files) return;
    uploads.delete(req);
    await Promise.all([...files.values()].map((f) => store().discard(f)));
  };
  app.addHook("onResponse", cleanUp);
  app.addHook("onRequestAbort", cleanUp);
};
