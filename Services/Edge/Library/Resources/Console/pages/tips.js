// Travel tips by city and category: posts of kind `tip` there, grouped by their
// category, with pins.
import { h, fill, field } from "../dom.js";
import { t } from "../i18n.js";
import { api } from "../session.js";
import { createMap, pins } from "../map.js";

export async function render(main, _parameters, query) {
  main.append(h("h2", {}, t("page.tips")));
  const city = h("input", { name: "city", value: query.get("city") ?? "Köln", required: true });
  const category = h("input", { name: "category", value: query.get("category") ?? "", placeholder: t("tips.anyCategory") });
  const form = h("form", { "aria-label": t("page.tips") }, field(t("trips.city"), city), field(t("edit.category"), category),
    h("div", { class: "actions" }, h("button", { type: "submit" }, t("search.go")), h("a", { href: "#/edit", class: "button secondary" }, t("tips.add"))));
  const groups = h("div", { class: "groups" });
  const mapElement = h("div", { class: "map", role: "region", "aria-label": t("search.map") });
  main.append(form, h("div", { class: "results" }, mapElement, groups));
  const map = await createMap(mapElement, [50.9375, 6.9603], 13);
  const layer = pins(map);

  async function load() {
    history.replaceState(null, "", `/#/tips?${new URLSearchParams({ city: city.value, category: category.value })}`);
    const reply = await api("/v1/posts", { query: { kind: "tip", city: city.value.trim(), category: category.value.trim(), limit: 100 } });
    const byCategory = new Map();
    for (const post of reply.posts) {
      const name = post.category ?? t("tips.uncategorised");
      if (!byCategory.has(name)) byCategory.set(name, []);
      byCategory.get(name).push(post);
    }
    layer.clear();
    for (const post of reply.posts) layer.add(post.lat, post.lon, post.title, { onclick: () => { location.hash = `#/post/${post.id}`; } });
    layer.fit();
    fill(groups, byCategory.size ? [...byCategory].sort(([a], [b]) => a.localeCompare(b)).map(([name, posts]) => h("section", {},
      h("h3", {}, name), h("ul", { class: "cards" }, posts.map((post) => h("li", {},
        h("a", { href: `#/post/${post.id}`, class: "title" }, post.title), post.text ? h("p", {}, post.text) : null)))))
      : h("p", { class: "empty" }, t("tips.none", { city: city.value })));
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load();
  });
  await load();
}
