// Web Push for the console: with the user's leave, the browser subscribes with the
// server's VAPID key and the subscription is registered as one of the user's devices,
// so messages arrive as notifications while no console page is open. The service
// worker (sw.js) shows them and opens the conversation when one is clicked.
import { api } from "./session.js";
import { language } from "./i18n.js";

/** Whether this browser can receive pushes here (a secure origin: https or localhost). */
export function pushSupported() {
  return window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** The user allowed notifications and this browser holds a subscription. */
export async function pushEnabled() {
  if (!pushSupported() || Notification.permission !== "granted") return false;
  const registration = await navigator.serviceWorker.getRegistration("/console/");
  return Boolean(registration && (await registration.pushManager.getSubscription()));
}

/** base64url text to bytes, as `applicationServerKey` takes them. */
function bytes(base64url) {
  const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(base64url.length / 4) * 4, "=");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

/** The service worker, once it is active (pushManager.subscribe needs an active one). */
async function activeWorker() {
  const registration = await navigator.serviceWorker.register("/console/sw.js", { scope: "/console/" });
  const worker = registration.installing ?? registration.waiting;
  if (worker && !registration.active) {
    await new Promise((resolve) => worker.addEventListener("statechange", () => worker.state === "activated" && resolve()));
  }
  return registration;
}

/**
 * Asks for notifications, subscribes, and registers the subscription. Answers
 * "granted", "denied" (the user or the browser said no) or throws what failed.
 */
export async function enablePush() {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") return "denied";
  const registration = await activeWorker();
  const { publicKey } = await api("/v1/push/vapid-key");
  let subscription = await registration.pushManager.getSubscription();
  // A subscription made with another key (the server's file was new) is of no use.
  const key = subscription?.options?.applicationServerKey;
  if (subscription && key && btoa(String.fromCharCode(...new Uint8Array(key))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "") !== publicKey) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(publicKey) });
  await api("/v1/devices", { method: "POST", json: { platform: "webpush", subscription: subscription.toJSON(), lang: language() } });
  return "granted";
}
