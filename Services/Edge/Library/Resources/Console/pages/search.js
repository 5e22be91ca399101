// Search: posts around a named place or the map's centre, by words, kinds and open
// status, sorted as asked; pins and a list with the matched words marked. Left open,
// the list follows the posts as they change (a live query over the socket).
import { h, fill, field, highlighted } from "../dom.js";
import { t } from "../i18n.js";
import { api } from "../session.js";
import { watch } from "../events.js";
import { createMap, pins } from "../map.js";
import { distance, openStatus, rating } from "../format.js";
import { say, explain } from "../notice.js";

const kinds = ["offer", "restaurant", "sight", "tip"];
const sorts = ["distance", "title", "-title", "newest", "rating"];

export async function render(main, _parameters, query) {
  const input = {
    q: h("input", { name: "q", type: "search", placeholder: t("search.wordsExample"), autocomplete: "off", value: query.get("q") ?? "" }),
    place: h("input", { name: "place", type: "text", value: query.get("place") ?? (query.has("lat") ? "" : "Utrecht") }),
    radius: h("input", { name: "radius", type: "number", min: "0.1", max: "500", step: "0.1", value: query.get("radius") ?? "5" }),
    openNow: h("input", { name: "openNow", type: "checkbox", checked: ["on", "true"].includes(query.get("openNow")) }),
    sort: h("select", { name: "sort" }, sorts.map((sort) => h("option", { value: sort, selected: query.get("sort") === sort }, t(`sort.${sort}`)))),
  };
  const chosenKinds = new Set((query.get("kinds") ?? "").split(",").filter(Boolean));
  const kindBoxes = kinds.map((kind) => h("input", { type: "checkbox", name: "kinds", value: kind, checked: chosenKinds.has(kind) }));
  const useMap = h("button", { type: "button", class: "secondary" }, t("search.useMapCentre"));
  const form = h("form", { role: "search", "aria-label": t("search.form") },
    field(t("search.words"), input.q), field(t("search.near"), input.place, t("search.nearHint")),
    field(t("search.radius"), input.radius),
    h("fieldset", { class: "kinds" }, h("legend", {}, t("search.kinds")),
      kinds.map((kind, i) => h("label", { class: "check" }, kindBoxes[i], t(`kind.${kind}`)))),
    h("label", { class: "check" }, input.openNow, t("search.openNow")),
    field(t("search.sort"), input.sort),
    h("div", { class: "actions" }, h("button", { type: "submit" }, t("search.go")), useMap));
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" });
  const live = h("p", { class: "live", "aria-live": "polite" });
  const list = h("ol", { class: "hits", "aria-label": t("search.results") });
  const mapElement = h("div", { class: "map", role: "region", "aria-label": t("search.map") });
  main.append(h("h2", {}, t("page.search")), form, status, live, h("div", { class: "results" }, mapElement, list));

  const map = await createMap(mapElement);
  const layer = pins(map);
  let point = query.has("lat") ? { lat: Number(query.get("lat")), lon: Number(query.get("lon")) } : null;
  let stop = null;
  let hits = new Map();
  let sort = input.sort.value;
  // Where the last search was, so the count can follow the live list.
  let centre = null;

  useMap.addEventListener("click", () => {
    const centre = map.getCenter();
    point = { lat: Number(centre.lat.toFixed(5)), lon: Number(centre.lng.toFixed(5)) };
    input.place.value = "";
    search();
  });
  input.place.addEventListener("input", () => { point = null; });

  function sorted() {
    const all = [...hits.values()];
    const byTitle = (a, b) => a.title.localeCompare(b.title);
    const order = {
      distance: (a, b) => (a.distance ?? 0) - (b.distance ?? 0),
      title: byTitle,
      "-title": (a, b) => byTitle(b, a),
      newest: (a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
      rating: (a, b) => (b.rating?.average ?? 0) - (a.rating?.average ?? 0),
    }[sort];
    return order ? all.sort(order) : all;
  }

  function draw(center) {
    layer.clear();
    const rows = sorted().map((hit) => {
      layer.add(hit.lat, hit.lon, hit.title, { onclick: () => { location.hash = `#/post/${hit.id}`; } });
      return h("li", { dataset: { id: hit.id } },
        h("a", { href: `#/post/${hit.id}`, class: "title" }, highlighted(hit.title, hit.highlights?.title)),
        h("div", { class: "meta" }, t(`kind.${hit.kind}`, {}, hit.kind), hit.distance !== null ? ` · ${distance(hit.distance)}` : "",
          hit.openStatus ? " · " : "", openStatus(hit.openStatus, hit.nextChange), " · ", rating(hit.rating)));
    });
    fill(list, rows.length ? rows : h("li", { class: "empty" }, t("search.nothing")));
    if (centre) status.textContent = t("search.found", { count: hits.size, where: where(centre) });
    if (center) {
      layer.area(center.lat, center.lon, Number(input.radius.value) * 1000, { color: "#888" });
      layer.fit([center.lat, center.lon]);
    }
  }

  function parameters() {
    const chosen = kindBoxes.filter((box) => box.checked).map((box) => box.value);
    return {
      ...(point ? point : { place: input.place.value.trim() }),
      radius: Math.round(Number(input.radius.value) * 1000),
      q: input.q.value.trim() || undefined,
      kinds: chosen.length ? chosen : undefined,
      openNow: input.openNow.checked || undefined,
      sort: input.sort.value,
    };
  }

  async function search() {
    const spec = parameters();
    // Punctuation alone has no words to look for: search without, and say so.
    if (spec.q && !/[\p{L}\p{N}]/u.test(spec.q)) {
      say(t("search.noWords", { q: spec.q }), "info");
      spec.q = undefined;
    }
    sort = spec.sort;
    const address = new URLSearchParams(Object.entries({ ...spec, kinds: spec.kinds?.join(","), radius: input.radius.value })
      .filter(([, value]) => value !== undefined && value !== ""));
    history.replaceState(null, "", `/#/search?${address}`);
    status.textContent = t("search.searching");
    stop?.();
    try {
      const reply = await api("/v1/search", { query: { ...spec, kinds: spec.kinds?.join(",") } });
      hits = new Map(reply.hits.map((hit) => [hit.id, hit]));
      centre = reply.center;
      draw(reply.center);
    } catch (error) {
      status.textContent = "";
      say(explain(error), "error");
      return;
    }
    // The same search, kept open: what enters, changes and leaves it arrives on the socket.
    live.textContent = "";
    stop = watch("search", { search: spec }, (event) => {
      switch (event.type) {
        case "watch.opened":
          hits = new Map(event.hits.map((hit) => [hit.id, hit]));
          live.textContent = t("search.live");
          main.dataset.live = "open";
          break;
        case "watch.entered":
        case "watch.changed":
          hits.set(event.hit.id, event.hit);
          live.textContent = t(event.type === "watch.entered" ? "search.entered" : "search.changed", { title: event.hit.title });
          break;
        case "watch.left":
          live.textContent = t("search.left", { title: hits.get(event.postId)?.title ?? "" });
          hits.delete(event.postId);
          break;
        default:
          live.textContent = t("search.liveEnded", { detail: event.detail ?? "" });
          delete main.dataset.live;
          return;
      }
      draw(null);
    });
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });
  input.sort.addEventListener("change", () => search());
  if (query.has("place") || query.has("lat") || query.has("q")) search();
  return () => stop?.();
}

function where(center) {
  return center.place ? `${center.place.name} (${center.place.countryCode})` : `${center.lat.toFixed(4)}, ${center.lon.toFixed(4)}`;
}
