/**
 * The running studio's API for other parts of the studio (the assistant panel): available once
 * the studio has started. Also on `window.atomstudio` for the console and browser tests.
 */
import type { StudioApi } from "./studio.ts";

export type { SelectionResult, StudioApi } from "./studio.ts";

let current: StudioApi | undefined;
const waiting: ((api: StudioApi) => void)[] = [];

export const setStudioApi = (api: StudioApi): void => {
  current = api;
  for (const fn of waiting.splice(0)) fn(api);
};

/** The studio API, or undefined before start-up. */
export const studioApi = (): StudioApi | undefined => current;

/** Resolves with the studio API once the studio has started. */
export const whenStudioReady = (): Promise<StudioApi> =>
  current ? Promise.resolve(current) : new Promise((resolve) => waiting.push(resolve));

declare global {
  interface Window {
    atomstudio?: StudioApi;
  }
}
