/**
 * A result as the worker wrote it: JSON text, handed to an HTTP reply as is. Parsing a large
 * answer (2 MB of bands) and serialising it again cost more than the trip through the pipe.
 */
export class JsonText {
  constructor(readonly text: string) {}

  /** The names of the object's top-level fields, by one scan of the text (no parse). */
  topLevelKeys(): string[] {
    const t = this.text;
    const keys: string[] = [];
    let depth = 0;
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c === 34 /* " */) {
        const start = i + 1;
        for (i = start; i < t.length; i++) {
          const d = t.charCodeAt(i);
          if (d === 92 /* \ */) i++;
          else if (d === 34) break;
        }
        // a string at depth 1 followed by ':' is a key
        if (depth === 1) {
          let j = i + 1;
          while (j < t.length && (t.charCodeAt(j) === 32 || t.charCodeAt(j) === 10)) j++;
          if (t.charCodeAt(j) === 58 /* : */) keys.push(JSON.parse(t.slice(start - 1, i + 1)) as string);
        }
      } else if (c === 123 || c === 91) depth++;
      else if (c === 125 || c === 93) depth--;
    }
    return keys;
  }
}
