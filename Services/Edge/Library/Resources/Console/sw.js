// The console's service worker: shows a pushed message as a notification (one per
// conversation, the newest replacing the last) and opens its conversation on a click.
self.addEventListener("push", (event) => {
  const push = event.data ? event.data.json() : {};
  event.waitUntil(self.registration.showNotification(push.title || "Hereabouts", {
    body: push.body ?? "",
    tag: push.tag,
    renotify: Boolean(push.tag),
    data: push.data ?? {},
  }));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const conversation = event.notification.data?.conversationId;
  const url = new URL(conversation ? `/#/chat/${encodeURIComponent(conversation)}` : "/#/chat", self.location.origin).href;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const open = windows.find((client) => new URL(client.url).origin === self.location.origin);
    if (open) {
      await open.focus();
      return open.navigate ? open.navigate(url) : undefined;
    }
    return self.clients.openWindow(url);
  })());
});
