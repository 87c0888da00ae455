// The one Vite feature the studio's code uses, typed here instead of `vite/client` (whose
// global DOM types would leak into the rest of the monorepo's single TypeScript program).
interface ImportMeta {
  glob<M = unknown>(pattern: string): Record<string, () => Promise<M>>;
}
