// The console's one WebSocket to /v1/events: signed in with the session's token
// (sent again when it is refreshed), opened again after a drop with a growing wait,
// carrying chat messages, fence crossings and live queries. Watches are kept here
// and opened again on every new socket; their handlers get each event.
import { current, ensureSession, onChange } from "./session.js";

const typeListeners = new Map();
const watches = new Map();
let socket = null;
let socketUser = null;
let ready = false;
let retry = 1_000;
let reconnectTimer = null;

/** Calls `handler(event)` for each event of `type` (`chat.message`, `fence.entered`, …); returns a function that stops it. */
export function on(type, handler) {
  if (!typeListeners.has(type)) typeListeners.set(type, new Set());
  typeListeners.get(type).add(handler);
  connect();
  return () => typeListeners.get(type)?.delete(handler);
}

/**
 * A live query: `spec` is `{search: {…}}`, `{within: {…}}` or `{usersNear: {…}}` as
 * EDGE.md gives them; `handler` gets `watch.opened` (with `reset`), `watch.entered`,
 * `watch.changed`, `watch.left`, `watch.closed` and `error` messages for it. Signs
 * in anonymously when nobody is. Returns a function that ends it.
 */
export function watch(id, spec, handler) {
  watches.set(id, { spec, handler });
  ensureSession().then(() => {
    connect();
    if (ready) send({ type: "watch", id, ...spec });
  }, (error) => handler({ type: "error", id, detail: error.message }));
  return () => {
    if (watches.get(id)?.handler !== handler) return;
    watches.delete(id);
    if (ready) send({ type: "unwatch", id });
  };
}

/** Whether the socket is open and signed in: for tests and the status line. */
export function isReady() {
  return ready;
}

function send(message) {
  socket?.send(JSON.stringify(message));
}

function connect() {
  if (socket || !current()) return;
  clearTimeout(reconnectTimer);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const opened = new WebSocket(`${scheme}://${location.host}/v1/events`);
  socket = opened;
  socketUser = current().user.id;
  opened.addEventListener("open", () => send({ type: "auth", token: current()?.accessToken }));
  opened.addEventListener("message", (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    if (event.type === "ready") {
      ready = true;
      retry = 1_000;
      document.documentElement.dataset.live = "ready";
      for (const [id, { spec }] of watches) send({ type: "watch", id, ...spec });
      return;
    }
    if (event.id !== undefined && watches.has(event.id)) watches.get(event.id).handler(event);
    for (const handler of typeListeners.get(event.type) ?? []) handler(event);
  });
  opened.addEventListener("close", (close) => {
    if (socket !== opened) return;
    socket = null;
    ready = false;
    delete document.documentElement.dataset.live;
    // 4401: the token was refused or ran out; the session refreshes and reconnects.
    if (close.code === 4401 || !current()) return;
    if (watches.size > 0 || typeListeners.size > 0) {
      reconnectTimer = setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30_000);
    }
  });
}

// A new token goes to the open socket; signing out closes it; signing in opens it
// when something is listening.
onChange((session) => {
  if (!session || session.user.id !== socketUser) {
    const closing = socket;
    socket = null;
    ready = false;
    delete document.documentElement.dataset.live;
    closing?.close(1000);
  }
  if (!session) return;
  if (socket && ready) send({ type: "auth", token: session.accessToken });
  else if (!socket && (watches.size > 0 || typeListeners.size > 0)) connect();
});
