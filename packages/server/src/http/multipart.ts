/**
 * multipart/form-data bodies (a file upload from a form or `curl -F`): the first file becomes
 * `content` (UTF-8 text) with its `filename`; other fields are copied as strings. Operations
 * then validate the result like any JSON body.
 */
import Busboy, { type BusboyHeaders, type BusboyInstance } from "@fastify/busboy";
import { AtomStudioError } from "atomstudio-core";
import type { FastifyInstance } from "fastify";

export const registerMultipart = (app: FastifyInstance, limit: number): void => {
  app.addContentTypeParser("multipart/form-data", (req, payload, done) => {
    const body: Record<string, string> = {};
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      done(err, undefined);
    };
    let bb: BusboyInstance;
    try {
      bb = new Busboy({ headers: req.headers as BusboyHeaders, limits: { fileSize: limit, files: 1 } });
    } catch (e) {
      return fail(new AtomStudioError("MALFORMED_REQUEST", `Bad multipart body: ${(e as Error).message}`, undefined, 422));
    }
    bb.on("file", (_field: string, file: NodeJS.ReadableStream, filename: string) => {
      if (filename) body.filename = filename;
      file.on("data", (d: Buffer) => {
        size += d.length;
        chunks.push(d);
      });
      file.on("limit", () => {
        tooLarge = true;
      });
    });
    bb.on("field", (name: string, value: string) => {
      body[name] = value;
    });
    bb.on("error", (e: Error) =>
      fail(new AtomStudioError("MALFORMED_REQUEST", `Bad multipart body: ${e.message}`, undefined, 422)),
    );
    bb.on("finish", () => {
      if (tooLarge)
        return fail(new AtomStudioError("PAYLOAD_TOO_LARGE", `Uploaded file is larger than ${limit} bytes`, undefined, 413));
      if (chunks.length || size) body.content = Buffer.concat(chunks).toString("utf8");
      if (!failed) done(null, body);
    });
    payload.pipe(bb);
  });
};
