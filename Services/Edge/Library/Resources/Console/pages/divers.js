// Divers near a place: discoverable people whose home is within a radius, with a
// certification if asked, in 500 m bands (never their exact homes); the list follows
// them as they move, join or hide (a live query of people).
import { h, fill, field } from "../dom.js";
import { t } from "../i18n.js";
import { api, current } from "../session.js";
import { watch } from "../events.js";
import { createMap, pins } from "../map.js";
import { distance } from "../format.js";

const certifications = ["", "OWD", "AOWD", "Rescue", "Divemaster", "Instructor"];

export async function render(main, _parameters, query) {
  main.append(h("h2", {}, t("page.divers")));
  if (!current()) {
    main.append(h("p", {}, t("divers.signInFirst")));
    return;
  }
  const place = h("input", { name: "place", value: query.get("place") ?? "Vlissingen", required: true });
  const radius = h("input", { name: "radius", type: "number", min: "1", max: "500", value: query.get("radius") ?? "30" });
  const certification = h("select", { name: "certification" },
    certifications.map((value) => h("option", { value, selected: value === (query.get("certification") ?? "") }, value || t("divers.any"))));
  const form = h("form", { "aria-label": t("page.divers") }, field(t("search.near"), place), field(t("search.radius"), radius),
    field(t("divers.certification"), certification), h("div", { class: "actions" }, h("button", { type: "submit" }, t("search.go"))));
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" });
  const list = h("ol", { class: "hits", "aria-label": t("divers.list") });
  const mapElement = h("div", { class: "map", role: "region", "aria-label": t("search.map") });
  main.append(form, status, h("div", { class: "results" }, mapElement, list));
  const map = await createMap(mapElement, [51.45, 3.6], 10);
  const layer = pins(map);
  let people = new Map();
  let center = null;
  let stop = null;

  async function draw() {
    const ids = [...people.keys()];
    const profiles = ids.length ? (await api("/v1/users", { query: { ids: ids.join(",") } })).users : [];
    const byId = new Map(profiles.map((profile) => [profile.id, profile]));
    const rows = [...people.values()].sort((a, b) => a.distance - b.distance).map((person) => {
      const profile = byId.get(person.userId);
      // Attributes by their label in the page's language, where the console knows one.
      const attributes = Object.entries(profile?.attributes ?? {})
        .map(([key, value]) => `${t(`attribute.${key}`, {}, key)}: ${value}`).join(", ");
      return h("li", { dataset: { id: person.userId } }, h("strong", {}, profile?.displayName ?? t("chat.someone")),
        h("div", { class: "meta" }, t("divers.within", { distance: distance(person.distance) }), attributes ? ` · ${attributes}` : ""),
        h("a", { href: `#/chat/new?to=${encodeURIComponent(person.userId)}` }, t("post.message")));
    });
    fill(list, rows.length ? rows : h("li", { class: "empty" }, t("divers.none")));
    status.textContent = t(rows.length === 1 ? "divers.foundOne" : "divers.found", { count: rows.length,
      where: center?.place ? `${center.place.name} (${center.place.countryCode})` : place.value.trim() });
    if (center) {
      layer.clear();
      layer.add(center.lat, center.lon, center.place?.name ?? "");
      layer.area(center.lat, center.lon, Number(radius.value) * 1000);
      map.fitBounds(layer.group.getLayers()[1].getBounds());
    }
  }

  function search() {
    stop?.();
    const spec = { place: place.value.trim(), radius: Number(radius.value) * 1000 };
    if (certification.value) spec.attributes = { certification: certification.value };
    history.replaceState(null, "", `/#/divers?${new URLSearchParams({ place: spec.place, radius: radius.value, certification: certification.value })}`);
    status.textContent = t("search.searching");
    stop = watch("divers", { usersNear: spec }, (event) => {
      if (event.type === "watch.opened") {
        people = new Map(event.users.map((user) => [user.userId, user]));
        center = event.center;
        main.dataset.live = "open";
      } else if (event.type === "watch.entered" || event.type === "watch.changed") {
        people.set(event.user.userId, event.user);
      } else if (event.type === "watch.left") {
        people.delete(event.userId);
      } else {
        status.textContent = event.detail ?? t("search.liveEnded", { detail: "" });
        return;
      }
      draw();
    });
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });
  search();
  return () => stop?.();
}
