/**
 * The service's bearer token (decisions §7): when the service has one, the studio asks for it
 * once and keeps it in localStorage; every /api request carries it, and the relay WebSocket
 * passes it as ?token= (browsers cannot set headers on WebSocket upgrades).
 */
const KEY = "atomstudio.token";

export const storedToken = (): string | null => {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
};

export const storeToken = (token: string | null): void => {
  try {
    if (token) localStorage.setItem(KEY, token);
    else localStorage.removeItem(KEY);
  } catch {
    // storage disabled: the token lives for this page only
  }
};

/** Check the token once at start-up; ask for one (and keep it) while the service says 401. */
export const ensureToken = async (ask: (message: string) => string | null = (m) => window.prompt(m)): Promise<void> => {
  for (let attempt = 0; attempt < 3; attempt++) {
    const r = await apiFetch("/api/health");
    if (r.status !== 401) return;
    const entered = ask(
      attempt === 0
        ? "This AtomStudio service needs its access token (ATOMSTUDIO_TOKEN):"
        : "That token was not accepted. Token:",
    );
    if (!entered) return;
    storeToken(entered.trim());
  }
};

/** fetch for the service's API, with the token when there is one. */
export const apiFetch = (path: string, init: RequestInit = {}): Promise<Response> => {
  const token = storedToken();
  const headers = new Headers(init.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  // A FormData body carries its own multipart content type (with the boundary) from fetch.
  if (init.body && !(init.body instanceof FormData) && !headers.has("content-type")) {
    headers.set("content-type", "application/json");
  }
  return fetch(path, { ...init, headers });
};

/** POST a JSON body to the service with the token; the caller reads the response. */
export const postJson = (path: string, body: unknown): Promise<Response> =>
  apiFetch(path, { method: "POST", body: JSON.stringify(body) });
