/**
 * Rewrites the table of docs/errors.md from packages/server/src/errors/codes.ts (the text around
 * the table is kept). Run after adding a code: `node --import tsx tools/gen-error-table.ts`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { errorTableMarkdown } from "../packages/server/src/errors/codes.ts";

const path = join(resolve(import.meta.dirname, ".."), "docs/errors.md");
const lines = readFileSync(path, "utf8").split("\n");
const start = lines.findIndex((l) => l.startsWith("| code | status | meaning |"));
let end = start;
while (end < lines.length && lines[end]?.startsWith("|")) end++;
lines.splice(start, end - start, ...errorTableMarkdown().split("\n"));
writeFileSync(path, lines.join("\n"));
