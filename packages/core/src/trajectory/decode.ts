/**
 * A file as it travels in JSON, `{content, filename?, encoding: "text" | "base64"}`, to text.
 * gzip and bzip2 are recognised by their magic bytes (not by the name). gzip is inflated here
 * (fflate, isomorphic); bzip2 needs a decoder from the host (the service passes a pure-JS one),
 * so the core stays free of Node-only code. Output is capped before it can grow: a small
 * compressed upload cannot become gigabytes of text.
 */
import { Gunzip } from "fflate";
import { AtomStudioError, fail } from "../errors.ts";

export interface EncodedFile {
  content: string;
  filename?: string | undefined;
  encoding?: "text" | "base64" | undefined;
}

/** Decompresses bzip2 bytes, throwing once the output would pass `maxBytes`. */
export type Bunzip2 = (bytes: Uint8Array, maxBytes: number) => Uint8Array;

export interface DecodeOptions {
  /** Largest decoded text, bytes. */
  maxBytes: number;
  bunzip2?: Bunzip2;
}

const tooLarge = (maxBytes: number): AtomStudioError =>
  new AtomStudioError(
    "PAYLOAD_TOO_LARGE",
    `The decompressed file is larger than ${maxBytes} bytes`,
    { max_bytes: maxBytes },
    413,
  );

export const isGzip = (b: Uint8Array): boolean => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;
export const isBzip2 = (b: Uint8Array): boolean => b.length > 3 && b[0] === 0x42 && b[1] === 0x5a && b[2] === 0x68;

const B64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

export const base64ToBytes = (s: string): Uint8Array => {
  if (!B64.test(s)) fail("INVALID_ENCODING", "content is not valid base64");
  const clean = s.replace(/\s+/g, "");
  if (typeof atob === "function") {
    let bin: string;
    try {
      bin = atob(clean);
    } catch {
      // the alphabet is right but the length is not (one character left over, e.g. "0")
      return fail("INVALID_ENCODING", "content is not valid base64 (truncated)");
    }
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  return fail("INVALID_ENCODING", "no base64 decoder in this environment");
};

/** The gzip trailer's ISIZE: the decoded size modulo 2³² (of the last member). */
const gzipTrailerSize = (b: Uint8Array): number =>
  ((b[b.length - 4] as number) | ((b[b.length - 3] as number) << 8) | ((b[b.length - 2] as number) << 16)) +
  (b[b.length - 1] as number) * 2 ** 24;

export const gunzipCapped = (bytes: Uint8Array, maxBytes: number): Uint8Array => {
  if (bytes.length < 18) fail("INVALID_ENCODING", "The gzip data is truncated");
  // A declared size over the cap fails at once; a forged small one is still caught as output grows.
  const declared = gzipTrailerSize(bytes);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const parts: Uint8Array[] = [];
  let size = 0;
  const g = new Gunzip((chunk) => {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    parts.push(chunk);
  });
  try {
    // Feed in slices so the cap is checked as output grows, not after.
    const step = 1 << 16;
    for (let i = 0; i < bytes.length; i += step) g.push(bytes.subarray(i, i + step), i + step >= bytes.length);
  } catch (e) {
    if (e instanceof AtomStudioError) throw e;
    fail("INVALID_ENCODING", `The gzip data is corrupt: ${(e as Error).message}`);
  }
  // The trailer must match what came out: a truncated stream inflates silently otherwise.
  if (size % 2 ** 32 !== declared)
    fail("INVALID_ENCODING", "The gzip data is truncated or corrupt (its trailer does not match its content)");
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/** Bytes to text: gunzip / bunzip2 when the magic bytes say so, then UTF-8. */
export const bytesToText = (bytes: Uint8Array, opts: DecodeOptions): string => {
  let b = bytes;
  if (isGzip(b)) b = gunzipCapped(b, opts.maxBytes);
  else if (isBzip2(b)) {
    if (!opts.bunzip2) fail("INVALID_ENCODING", "bzip2 files cannot be decoded here");
    b = (opts.bunzip2 as Bunzip2)(b, opts.maxBytes);
  }
  if (b.length > opts.maxBytes) throw tooLarge(opts.maxBytes);
  return new TextDecoder("utf-8").decode(b);
};

/** The text of a JSON-carried file. */
export const decodeFile = (file: EncodedFile, opts: DecodeOptions): string => {
  if (file.encoding === "base64") return bytesToText(base64ToBytes(file.content), opts);
  if (file.content.length > opts.maxBytes) throw tooLarge(opts.maxBytes);
  return file.content;
};
