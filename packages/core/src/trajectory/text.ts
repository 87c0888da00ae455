/**
 * A line cursor over one big string: trajectory files are read without splitting them into
 * millions of line strings (a 10,000-atom × 1,000-frame file has 10 million lines). Numbers are
 * scanned straight from the text with the exact fast path of `io/util.ts`.
 */
import { fastNumber } from "../io/util.ts";

export class LineCursor {
  readonly text: string;
  /** Start of the current line and the index of its end (exclusive, before \r?\n). */
  start = 0;
  end = 0;
  /** Start of the next line. */
  next = 0;
  /** 1-based number of the current line. */
  lineNo = 0;

  constructor(text: string) {
    this.text = text;
  }

  get done(): boolean {
    return this.next >= this.text.length;
  }

  /** Advance to the next line; false at the end of the text. */
  advance(): boolean {
    const t = this.text;
    if (this.next >= t.length) return false;
    this.start = this.next;
    let nl = t.indexOf("\n", this.start);
    if (nl < 0) nl = t.length;
    this.next = nl + 1;
    this.end = nl > this.start && t.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    this.lineNo++;
    return true;
  }

  get line(): string {
    return this.text.slice(this.start, this.end);
  }

  isBlank(): boolean {
    const t = this.text;
    for (let i = this.start; i < this.end; i++) {
      const c = t.charCodeAt(i);
      if (c !== 32 && c !== 9) return false;
    }
    return true;
  }

  startsWith(prefix: string): boolean {
    return this.text.startsWith(prefix, this.start);
  }

  /** A saved position, to rewind to (`restore`). */
  mark(): [number, number, number, number] {
    return [this.start, this.end, this.next, this.lineNo];
  }

  restore(m: [number, number, number, number]): void {
    [this.start, this.end, this.next, this.lineNo] = m;
  }
}

/** The number in text[start, end), NaN when it is not one: the structure readers' allocation-free parser. */
export const numberAt = fastNumber;

/** Token boundaries of text[from, end): writes [start0, end0, start1, end1, …] into `out`, returns the count. */
export const tokenize = (text: string, from: number, end: number, out: Int32Array, max: number): number => {
  let i = from;
  let n = 0;
  while (n < max) {
    while (i < end) {
      const c = text.charCodeAt(i);
      if (c !== 32 && c !== 9) break;
      i++;
    }
    if (i >= end) break;
    out[2 * n] = i;
    while (i < end) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 9) break;
      i++;
    }
    out[2 * n + 1] = i;
    n++;
  }
  return n;
};
