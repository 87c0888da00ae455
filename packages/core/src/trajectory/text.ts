/**
 * A line cursor over one big string: trajectory files are read without splitting them into
 * millions of line strings (a 10,000-atom × 1,000-frame file has 10 million lines). Numbers are
 * scanned straight from the text with the exact fast path of `io/util.ts`.
 */
import { parseNum } from "../io/util.ts";

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

const POW10 = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/**
 * The number in text[start, end); NaN when it is not one. Mantissas of at most 15 digits scaled
 * by at most 10^22 are exact in doubles, so one division gives the correctly rounded value that
 * Number() gives (Clinger's fast path); other forms go through the strict parser.
 */
export const numberAt = (text: string, start: number, end: number): number => {
  let i = start;
  let neg = false;
  let c = text.charCodeAt(i);
  if (c === 45 || c === 43) {
    neg = c === 45;
    i++;
  }
  let mant = 0;
  let digits = 0;
  let scale = 0;
  let any = false;
  for (; i < end; i++) {
    c = text.charCodeAt(i);
    if (c < 48 || c > 57) break;
    if (digits > 0 || c !== 48) digits++;
    mant = mant * 10 + (c - 48);
    any = true;
  }
  if (i < end && text.charCodeAt(i) === 46) {
    for (i++; i < end; i++) {
      c = text.charCodeAt(i);
      if (c < 48 || c > 57) break;
      if (digits > 0 || c !== 48) digits++;
      mant = mant * 10 + (c - 48);
      scale--;
      any = true;
    }
  }
  if (!any) return Number.NaN;
  if (i < end || digits > 15 || scale < -22) return parseNum(text.slice(start, end));
  const v = scale === 0 ? mant : mant / (POW10[-scale] as number);
  return neg ? -v : v;
};

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
