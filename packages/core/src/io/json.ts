/**
 * pymatgen's structure dictionary as a file (`Structure.to(filename="x.json")`, or what the
 * service emits). A JSON array of dictionaries is read as frames.
 */
import { isAtomStudioError } from "../errors.ts";
import { fromDict, toDict } from "../pymatgen.ts";
import type { Structure } from "../structure.ts";
import { extensionOf, FrameBudget, formatError, head, type ReadLimits, type StructureFormat } from "./util.ts";

export const readJson = (content: string, limits?: ReadLimits): Structure[] => {
  let raw: unknown;
  try {
    raw = JSON.parse(content);
  } catch (e) {
    throw formatError(`JSON: not valid JSON (${(e as Error).message})`);
  }
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) throw formatError("JSON: an empty array holds no structure");
  const budget = new FrameBudget(limits, "JSON");
  for (const d of list) {
    const sites = (d as { sites?: unknown } | null)?.sites;
    budget.frame(Array.isArray(sites) ? sites.length : 0);
  }
  return list.map((d, k) => {
    try {
      return fromDict(d);
    } catch (e) {
      if (!isAtomStudioError(e)) throw e;
      throw formatError(`JSON${list.length > 1 ? ` item ${k}` : ""}: ${e.message}`, { code: e.code, ...(e.details ?? {}) });
    }
  });
};

export const jsonFormat: StructureFormat = {
  id: "json",
  name: "pymatgen JSON",
  extensions: ["json"],
  detect(content, filename) {
    if (extensionOf(filename) === "json") return 1;
    const h = head(content, 4096).trimStart();
    if (!h.startsWith("{") && !h.startsWith("[")) return 0;
    return /"sites"\s*:/.test(h) ? 0.9 : 0.3;
  },
  read: readJson,
  write: (s) => JSON.stringify(toDict(s)),
  writeFrames: (frames) => JSON.stringify(frames.map(toDict)),
};
