// Who is signed in: the session the edge's /v1/auth routes give, kept in the
// browser's localStorage so a reload keeps it, refreshed before the access token
// expires. Listeners hear every change (sign-in, refresh, sign-out).
import { language } from "./i18n.js";

const storageKey = "hereabouts.session";
const listeners = new Set();
let session = load();
let refreshTimer = null;
let refreshing = null;

function load() {
  try {
    return JSON.parse(localStorage.getItem(storageKey)) ?? null;
  } catch {
    return null;
  }
}

function store(next) {
  session = next;
  if (next) localStorage.setItem(storageKey, JSON.stringify(next));
  else localStorage.removeItem(storageKey);
  schedule();
  for (const listener of listeners) listener(session);
}

/** The signed-in user (`User` of the API) and tokens, or null. */
export function current() {
  return session;
}

export function onChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** An error of the API as RFC 9457 gives it: `status`, `code`, `detail`, `field`. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code ?? "internal";
    this.field = problem?.field ?? null;
  }
}

/**
 * Calls the edge: `path` with `query`, a JSON `json` body or raw `body`, the access
 * token when signed in, and the console's language for names in the reply. Answers
 * the parsed JSON (null for 204) or throws an ApiError. A 401 refreshes the session
 * once and tries again.
 */
export async function api(path, { method = "GET", query, json, body, headers = {}, raw = false } = {}) {
  const url = query ? `${path}?${new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== ""))}` : path;
  const send = () => {
    const all = { "Accept-Language": language(), ...headers };
    if (session) all.Authorization = `Bearer ${session.accessToken}`;
    if (json !== undefined) all["Content-Type"] = "application/json";
    return fetch(url, { method, headers: all, body: json !== undefined ? JSON.stringify(json) : body });
  };
  let response = await send();
  if (response.status === 401 && session?.refreshToken && !path.startsWith("/v1/auth/")) {
    if (await refresh()) response = await send();
  }
  if (raw && response.ok) return response;
  if (response.status === 204 || response.status === 304) return null;
  const type = response.headers.get("Content-Type") ?? "";
  const parsed = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) throw new ApiError(response.status, typeof parsed === "object" ? parsed : null);
  return parsed;
}

function sessionFrom(reply) {
  return { user: reply.user, accessToken: reply.accessToken, refreshToken: reply.refreshToken, expiresAt: Date.now() + reply.expiresIn * 1000 };
}

/** `login` is an email address or a username. */
export async function signIn(login, password) {
  store(sessionFrom(await api("/v1/auth/login", { method: "POST", json: { login, password } })));
}

export async function register(email, password, displayName) {
  store(sessionFrom(await api("/v1/auth/register", { method: "POST", json: { email, password, displayName: displayName || undefined } })));
}

/** Signs in with a session the edge answered (a password reset's). */
export function acceptSession(reply) {
  store(sessionFrom(reply));
}

/** A session without an account, for trying things that need a caller (live queries, favourites). */
export async function signInAnonymously() {
  store(sessionFrom(await api("/v1/auth/anonymous", { method: "POST", json: {} })));
}

/** The session, made anonymously if there is none. */
export async function ensureSession() {
  if (!session) await signInAnonymously();
  return session;
}

export async function signOut() {
  const ending = session;
  store(null);
  if (ending) {
    await fetch("/v1/auth/logout", {
      method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${ending.accessToken}` },
      body: JSON.stringify({ refreshToken: ending.refreshToken }),
    }).catch(() => {});
  }
}

/** The user after a change of the profile. */
export function updateUser(user) {
  if (session) store({ ...session, user });
}

/** A new access token with the refresh token; false (and signed out) when it is refused. */
export async function refresh() {
  if (!session) return false;
  refreshing ??= (async () => {
    try {
      const reply = await api("/v1/auth/refresh", { method: "POST", json: { refreshToken: session.refreshToken } });
      store(sessionFrom(reply));
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) store(null);
      return false;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

// Refreshes a minute before the token expires (or at once when that is past).
function schedule() {
  clearTimeout(refreshTimer);
  if (!session) return;
  refreshTimer = setTimeout(refresh, Math.max(0, session.expiresAt - Date.now() - 60_000));
}
schedule();
