/**
 * The studio's state: the current structure with undo/redo history, its name and the selection
 * (site indices). Listeners hear every change.
 */
import type { Structure } from "atomstudio-core";

export type ChangeKind = "structure" | "selection";

export interface StoreChange {
  kind: ChangeKind;
  /** For structure changes: keep the camera (an edit) or fit the new structure (a new file). */
  keepView?: boolean;
}

const HISTORY_LIMIT = 100;

export class StudioStore {
  structure: Structure | null = null;
  name = "";
  selection: number[] = [];
  #undo: { s: Structure | null; name: string }[] = [];
  #redo: { s: Structure | null; name: string }[] = [];
  #listeners = new Set<(c: StoreChange) => void>();

  subscribe(fn: (c: StoreChange) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #emit(c: StoreChange): void {
    for (const fn of this.#listeners) fn(c);
  }

  /** Replace the structure. `record`: undoable (default). `keepView`: an edit of the same thing. */
  set(s: Structure | null, opts: { name?: string; record?: boolean; keepView?: boolean } = {}): void {
    if (opts.record ?? true) {
      this.#undo.push({ s: this.structure, name: this.name });
      if (this.#undo.length > HISTORY_LIMIT) this.#undo.shift();
      this.#redo = [];
    }
    this.structure = s;
    if (opts.name !== undefined) this.name = opts.name;
    const n = s?.length ?? 0;
    // An edit keeps the selection where the indices still exist; a new structure starts empty.
    this.selection = opts.keepView ? this.selection.filter((i) => i < n) : [];
    this.#emit({ kind: "structure", keepView: !!opts.keepView });
    this.#emit({ kind: "selection" });
  }

  get canUndo(): boolean {
    return this.#undo.length > 0;
  }

  get canRedo(): boolean {
    return this.#redo.length > 0;
  }

  undo(): boolean {
    const prev = this.#undo.pop();
    if (!prev) return false;
    this.#redo.push({ s: this.structure, name: this.name });
    this.set(prev.s, { name: prev.name, record: false, keepView: true });
    return true;
  }

  redo(): boolean {
    const next = this.#redo.pop();
    if (!next) return false;
    this.#undo.push({ s: this.structure, name: this.name });
    this.set(next.s, { name: next.name, record: false, keepView: true });
    return true;
  }

  select(sites: number[]): void {
    const n = this.structure?.length ?? 0;
    this.selection = [...new Set(sites)].filter((i) => Number.isInteger(i) && i >= 0 && i < n).sort((a, b) => a - b);
    this.#emit({ kind: "selection" });
  }
}
