// Chat: one's conversations, and one conversation's messages, new ones arriving as
// they are sent (the socket's chat.message events), read marks moved as they are
// seen. `#/chat/new?to=<userId>` starts one with a user; by email it is looked up.
import { h, fill, field } from "../dom.js";
import { t } from "../i18n.js";
import { api, current } from "../session.js";
import { on } from "../events.js";
import { dateTime } from "../format.js";
import { say, explain, attempt } from "../notice.js";
import { pushSupported, pushEnabled, enablePush } from "../push.js";

const names = new Map();

/** Display names of users, asked for once each. */
async function nameUsers(ids) {
  const unknown = [...new Set(ids)].filter((id) => !names.has(id));
  if (unknown.length) {
    const reply = await api("/v1/users", { query: { ids: unknown.join(",") } }).catch(() => ({ users: [] }));
    for (const user of reply.users) names.set(user.id, user.displayName ?? user.username ?? t("account.anonymous"));
  }
}

const nameOf = (id) => (id === current()?.user.id ? t("chat.you") : names.get(id) ?? t("chat.someone"));

/** "Notify me in this browser", or what is on: pushes while no console page is open. */
async function notifications() {
  const line = h("p", { class: "notify" });
  const enabled = await pushEnabled().catch(() => false);
  if (enabled) {
    line.append(t("chat.notifyOn"));
    return line;
  }
  const button = h("button", { type: "button" }, t("chat.notify"));
  button.addEventListener("click", () => attempt(async () => {
    const answer = await enablePush().catch((error) => {
      throw error?.status ? error : new Error(t("chat.notifyFailed"));
    });
    fill(line, answer === "granted" ? t("chat.notifyOn") : t("chat.notifyDenied"));
  }));
  line.append(button);
  return line;
}

export async function render(main, [conversationId], query) {
  main.append(h("h2", {}, t("page.chat")));
  const session = current();
  if (!session || session.user.anonymous) {
    main.append(h("p", {}, t("chat.signInFirst")));
    return;
  }
  if (pushSupported()) main.append(await notifications());
  const conversations = h("ul", { class: "conversations", "aria-label": t("chat.conversations") });
  const pane = h("section", { class: "conversation", "aria-label": t("chat.conversation") });
  main.append(h("div", { class: "chat" }, h("nav", { "aria-label": t("chat.conversations") }, conversations), pane));

  async function listConversations() {
    const reply = await api("/v1/conversations", { query: { limit: 50 } });
    await nameUsers(reply.conversations.flatMap((conversation) => conversation.peerIds));
    fill(conversations, h("li", {}, h("a", { href: "#/chat/new" }, t("chat.new"))),
      reply.conversations.map((conversation) => h("li", {},
        h("a", { href: `#/chat/${conversation.id}`, "aria-current": conversation.id === conversationId ? "page" : null },
          conversation.peerIds.map(nameOf).join(", "),
          conversation.unread ? h("span", { class: "badge", "aria-label": t("chat.unread", { count: conversation.unread }) }, String(conversation.unread)) : null),
        conversation.lastMessage ? h("div", { class: "meta" }, conversation.lastMessage.text.slice(0, 60)) : null)));
  }

  // A list that scrolls takes the focus, so the keyboard can scroll it too.
  const messages = h("ol", { class: "messages", "aria-live": "polite", "aria-label": t("chat.messages"), tabindex: "0" });
  const text = h("input", { name: "text", autocomplete: "off", required: true, maxlength: 4000 });
  const to = h("input", { name: "to", type: "email", autocomplete: "off" });
  const sendForm = h("form", { class: "send", "aria-label": t("chat.send") });
  let current_ = conversationId && conversationId !== "new" ? conversationId : null;
  let recipient = query.get("to");
  let lastSeq = 0;
  const shown = new Set();

  function append(message) {
    if (shown.has(message.id)) return;
    shown.add(message.id);
    lastSeq = Math.max(lastSeq, message.seq);
    messages.append(h("li", { class: message.senderId === current()?.user.id ? "mine" : "theirs", dataset: { seq: message.seq } },
      h("div", { class: "meta" }, `${nameOf(message.senderId)} · ${dateTime(message.sentAt)}`), h("p", {}, message.text)));
    messages.lastElementChild.scrollIntoView({ block: "nearest" });
  }

  async function markRead() {
    if (current_ && lastSeq > 0) await api(`/v1/conversations/${encodeURIComponent(current_)}/read`, { method: "POST", json: { seq: lastSeq } }).catch(() => {});
  }

  if (current_) {
    const reply = await api(`/v1/conversations/${encodeURIComponent(current_)}/messages`, { query: { limit: 100 } });
    await nameUsers(reply.messages.map((message) => message.senderId));
    reply.messages.forEach(append);
    fill(sendForm, field(t("chat.message"), text), h("button", { type: "submit" }, t("chat.sendButton")));
    pane.append(messages, sendForm);
    if (sessionStorage.getItem("hereabouts.focusMessage")) {
      sessionStorage.removeItem("hereabouts.focusMessage");
      text.focus();
    }
    // Marked read before the list is drawn, or the list may still count them.
    await markRead();
  } else {
    if (recipient) await nameUsers([recipient]);
    fill(sendForm, recipient ? h("p", {}, t("chat.to", { name: nameOf(recipient) })) : field(t("chat.toEmail"), to),
      field(t("chat.message"), text), h("button", { type: "submit" }, t("chat.sendButton")));
    pane.append(sendForm);
  }

  sendForm.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      if (!current_ && !recipient) recipient = (await api("/v1/users/lookup", { query: { email: to.value.trim() } })).user.id;
      const body = current_ ? { conversationId: current_, text: text.value } : { to: recipient, text: text.value };
      const { message } = await api("/v1/messages", { method: "POST", json: body, headers: { "Idempotency-Key": crypto.randomUUID() } });
      text.value = "";
      if (!current_) {
        // The conversation's own page follows; the focus goes back to its message field.
        sessionStorage.setItem("hereabouts.focusMessage", "1");
        location.hash = `#/chat/${message.conversationId}`;
        return;
      }
      append(message);
      text.focus();
    });
  });

  const stop = on("chat.message", async ({ message }) => {
    if (message.conversationId === current_) {
      await nameUsers([message.senderId]);
      append(message);
      await markRead();
    } else {
      // A first message from someone: their name is looked up before it is said.
      await nameUsers([message.senderId]);
      say(t("chat.arrived", { name: nameOf(message.senderId) }));
    }
    listConversations().catch((error) => say(explain(error), "error"));
  });
  await listConversations();
  return stop;
}
