// The posts one saved, newest first, each with its provider as shown; remove one
// with a click.
import { h, fill } from "../dom.js";
import { t } from "../i18n.js";
import { api, current } from "../session.js";
import { dateTime, money } from "../format.js";
import { say, attempt } from "../notice.js";

export async function render(main) {
  main.append(h("h2", {}, t("page.favourites")));
  if (!current()) {
    main.append(h("p", {}, t("favourites.signInFirst")));
    return;
  }
  const list = h("ul", { class: "cards", "aria-label": t("page.favourites") });
  const total = h("p", { class: "meta" });
  main.append(total, list);

  async function load() {
    const reply = await api("/v1/favourites", { query: { expand: "posts", limit: 100 } });
    total.textContent = t("favourites.count", { count: reply.total });
    fill(list, reply.items.length ? reply.items.map((item) => h("li", { dataset: { id: item.postId } },
      item.post
        ? h("a", { href: `#/post/${item.postId}`, class: "title" }, item.post.title)
        : h("span", { class: "title gone" }, t("favourites.gone")),
      h("div", { class: "meta" },
        item.post ? [t(`kind.${item.post.kind}`, {}, item.post.kind), item.post.price ? ` · ${money(item.post.price)}` : ""] : "",
        item.provider ? ` · ${item.provider.displayName ?? ""}` : "",
        item.provider?.email ? [" · ", h("a", { href: `mailto:${item.provider.email}` }, item.provider.email)] : "",
        ` · ${t("favourites.saved", { when: dateTime(item.addedAt) })}`),
      h("button", { type: "button", class: "secondary", onclick: () => attempt(async () => {
        await api(`/v1/favourites/${encodeURIComponent(item.postId)}`, { method: "DELETE" });
        say(t("post.removedNotice"), "ok");
        await load();
      }) }, t("favourites.remove")))) : h("li", { class: "empty" }, t(current()?.user.anonymous ? "favourites.noneGuest" : "favourites.none")));
  }
  await load();
}
