// One post: its photos, text, price, opening hours and status now, rating, and the
// provider's contact as they chose to show it; save it, rate it, write to the
// provider, or edit it when it is one's own.
import { h, fill } from "../dom.js";
import { t } from "../i18n.js";
import { api, current, ensureSession } from "../session.js";
import { createMap, pins } from "../map.js";
import { dateTime, money, openStatus, rating } from "../format.js";
import { say, attempt } from "../notice.js";

export async function render(main, [id]) {
  const { post } = await api(`/v1/posts/${encodeURIComponent(id)}`);
  const session = current();
  const own = session?.user.id === post.ownerId;
  const [provider, hit, saved] = await Promise.all([
    api("/v1/users", { query: { ids: post.ownerId } }).then((reply) => reply.users[0] ?? null, () => null),
    // The post's open status now: geo judges it, as it does for every hit.
    api("/v1/nearest", { query: { lat: post.lat, lon: post.lon, k: 20 } })
      .then((reply) => reply.hits.find((hit) => hit.id === post.id) ?? null, () => null),
    session ? api("/v1/favourites/contains", { query: { ids: post.id } }).then((reply) => reply.contains?.[post.id] === true, () => false) : false,
  ]);

  const save = h("button", { type: "button", "aria-pressed": String(saved) }, t(saved ? "post.saved" : "post.save"));
  let isSaved = saved;
  save.addEventListener("click", () => attempt(async () => {
    await ensureSession();
    await api(`/v1/favourites/${encodeURIComponent(post.id)}`, { method: isSaved ? "DELETE" : "PUT" });
    isSaved = !isSaved;
    save.setAttribute("aria-pressed", String(isSaved));
    save.textContent = t(isSaved ? "post.saved" : "post.save");
    say(t(isSaved ? "post.savedNotice" : "post.removedNotice"), "ok");
  }));

  const ratingLine = h("p", {}, rating(post.rating));
  const stars = h("div", { class: "stars", role: "group", "aria-label": t("post.rate") },
    [1, 2, 3, 4, 5].map((count) => h("button", {
      type: "button", class: "secondary", "aria-label": t("post.stars", { count }), "aria-pressed": "false",
      onclick: () => attempt(async () => {
        const reply = await api(`/v1/posts/${encodeURIComponent(post.id)}/rating`, { method: "PUT", json: { stars: count } });
        fill(ratingLine, rating(reply.rating));
        // The chosen stars say so (to a screen reader too).
        for (const button of stars.querySelectorAll("button")) {
          button.setAttribute("aria-pressed", String(button.getAttribute("aria-label") === t("post.stars", { count })));
        }
        say(t("post.rated", { count }), "ok");
      }),
    }, "★".repeat(count))));

  const contact = provider ? h("section", { class: "provider" }, h("h3", {}, t("post.provider")),
    h("p", {}, provider.displayName ?? provider.username ?? t("account.anonymous")),
    provider.email ? h("p", {}, h("a", { href: `mailto:${provider.email}` }, provider.email)) : null,
    provider.phone ? h("p", {}, h("a", { href: `tel:${provider.phone}` }, provider.phone)) : null,
    !own && session && !session.user.anonymous
      ? h("a", { href: `#/chat/new?to=${encodeURIComponent(post.ownerId)}`, class: "button" }, t("post.message")) : null) : null;

  const mapElement = h("div", { class: "map small", role: "region", "aria-label": t("post.where") });
  main.append(h("article", { class: "post" },
    h("h2", {}, post.title),
    h("p", { class: "meta" }, t(`kind.${post.kind}`, {}, post.kind), post.category ? ` · ${post.category}` : "",
      post.place ? ` · ${post.place.city}, ${post.place.countryCode}` : ""),
    post.images.length ? h("div", { class: "photos" }, post.images.map((image, index) =>
      h("img", { src: `/v1/images/${image.id}`, width: image.width, height: image.height, loading: "lazy",
                 alt: t("post.photo", { number: index + 1, title: post.title }) }))) : null,
    post.text ? h("p", { class: "text" }, post.text) : null,
    post.price ? h("p", { class: "price" }, money(post.price)) : null,
    post.hours ? h("section", { class: "hours" }, h("h3", {}, t("post.hours"), " ", openStatus(hit?.openStatus, hit?.nextChange)),
      hit?.hoursComment ? h("p", { class: "comment" }, hit.hoursComment) : null,
      // The standard spelling, one rule a line: what the owner wrote reads the same, in the specification's words.
      h("ul", {}, (post.hoursNormalized ?? post.hours).split(";").map((line) => h("li", {}, line.trim())))) : null,
    post.tags.length ? h("p", { class: "tags" }, post.tags.map((tag) => h("span", { class: "tag" }, tag))) : null,
    ratingLine,
    h("div", { class: "actions" }, save, own ? h("a", { href: `#/edit/${post.id}`, class: "button" }, t("post.edit")) : null),
    session ? stars : null,
    contact,
    mapElement,
    h("p", { class: "meta" }, t("post.updated", { when: dateTime(post.updatedAt) }))));

  const map = await createMap(mapElement, [post.lat, post.lon], 15);
  const layer = pins(map);
  layer.add(post.lat, post.lon, post.title);
  if (post.notifyRadius) layer.area(post.lat, post.lon, post.notifyRadius);
}
