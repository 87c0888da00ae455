/**
 * The workflows this browser created, kept in localStorage so the panel finds them again after
 * a reload or on the next visit ("close the browser, come back") and reattaches to the running
 * ones. The service keeps the workflows themselves (in Redis); only their ids and names are here.
 */

export interface SavedWorkflow {
  id: string;
  name: string;
  createdAt: number;
  /** The last run started from this studio, if any. */
  runId?: string;
}

export const SAVED_KEY = "atomstudio.workflows";
/** The oldest are forgotten beyond this many. */
export const SAVED_LIMIT = 50;

/** The part of the Storage interface used (localStorage in the studio, a Map in unit tests). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

const valid = (x: unknown): x is SavedWorkflow => {
  const r = x as SavedWorkflow;
  return !!r && typeof r.id === "string" && r.id !== "" && typeof r.name === "string" && typeof r.createdAt === "number";
};

/** The saved list, newest first; a missing, unreadable or foreign value reads as empty. */
export const loadSaved = (store: KeyValueStore | null): SavedWorkflow[] => {
  try {
    const parsed = JSON.parse(store?.getItem(SAVED_KEY) ?? "[]") as unknown;
    return Array.isArray(parsed) ? parsed.filter(valid).slice(0, SAVED_LIMIT) : [];
  } catch {
    return [];
  }
};

const write = (store: KeyValueStore | null, list: SavedWorkflow[]): SavedWorkflow[] => {
  const kept = list.slice(0, SAVED_LIMIT);
  try {
    store?.setItem(SAVED_KEY, JSON.stringify(kept));
  } catch {
    // storage full or disabled: the list lives for this page only
  }
  return kept;
};

/** Add or update one entry (moved to the front). */
export const remember = (store: KeyValueStore | null, entry: SavedWorkflow): SavedWorkflow[] =>
  write(store, [entry, ...loadSaved(store).filter((w) => w.id !== entry.id)]);

export const forget = (store: KeyValueStore | null, id: string): SavedWorkflow[] =>
  write(
    store,
    loadSaved(store).filter((w) => w.id !== id),
  );

/** localStorage when the page may use it. */
export const browserStore = (): KeyValueStore | null => {
  try {
    return globalThis.localStorage ?? null;
  } catch {
    return null;
  }
};
