/**
 * multipart/form-data bodies (`@fastify/multipart`), read into the JSON shape operations validate:
 *
 * - a file in a field named `file` or `content` becomes `content` (UTF-8 text) and `filename`:
 *   the single-file text upload of `/api/structure/parse`;
 * - a file in any other field becomes `{content, encoding: "latin1", filename}` under that
 *   field's name: one character per byte, so gzip, bzip2 and other binary files survive byte for
 *   byte (and cost a copy, not a base64 round trip);
 * - a field named `params` holding a JSON object is merged into the body (lists and nested
 *   options), and other fields are copied as strings.
 *
 * The whole body is capped at `limit` bytes (files and fields together, checked on the declared
 * Content-Length first and again while reading): past it, 413 PAYLOAD_TOO_LARGE.
 */
import multipart from "@fastify/multipart";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyInstance, FastifyRequest } from "fastify";

const MAX_FILES = 16;
const MAX_FIELDS = 64;
const TEXT_FILE_FIELDS = new Set(["file", "content"]);

const tooLarge = (limit: number) =>
  new AtomStudioError("PAYLOAD_TOO_LARGE", `The multipart body is larger than ${limit} bytes`, { limit }, 413);
const malformed = (why: string) => new AtomStudioError("MALFORMED_REQUEST", `Bad multipart body: ${why}`, undefined, 422);

const readParts = async (req: FastifyRequest, limit: number): Promise<Record<string, unknown>> => {
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
      if (part.type === "file") {
        const chunks: Buffer[] = [];
        for await (const chunk of part.file as AsyncIterable<Buffer>) {
          count(chunk.length);
          chunks.push(chunk);
        }
        const bytes = Buffer.concat(chunks);
        if (TEXT_FILE_FIELDS.has(part.fieldname)) {
          body.content = bytes.toString("utf8");
          if (part.filename) body.filename = part.filename;
        } else
          body[part.fieldname] = {
            content: bytes.toString("latin1"),
            encoding: "latin1",
            ...(part.filename ? { filename: part.filename } : {}),
          };
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

export const registerMultipart = async (app: FastifyInstance, limit: number): Promise<void> => {
  await app.register(multipart, {
    // one byte over the cap, so the running count (which names the cap) sees it first
    limits: { fileSize: limit + 1, fieldSize: limit + 1, files: MAX_FILES, fields: MAX_FIELDS, parts: MAX_FILES + MAX_FIELDS },
    throwFileSizeLimit: true,
  });
  app.addHook("preValidation", async (req) => {
    if (req.isMultipart()) req.body = await readParts(req, limit);
  });
};
