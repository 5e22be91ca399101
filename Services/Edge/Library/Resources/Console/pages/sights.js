// Sights and their fences: the sights around, each with the circle in which a
// phone is told it arrived; click the map to move "yourself" there, and see the
// fences entered and left (the reply to the move, and the socket's fence events).
import { h, fill } from "../dom.js";
import { t } from "../i18n.js";
import { api, ensureSession } from "../session.js";
import { on } from "../events.js";
import { createMap, pins } from "../map.js";
import { distance } from "../format.js";
import { say, attempt } from "../notice.js";

export async function render(main) {
  main.append(h("h2", {}, t("page.sights")), h("p", {}, t("sights.hint")));
  const list = h("ol", { class: "hits", "aria-label": t("sights.nearest") });
  const log = h("ol", { class: "log", "aria-live": "polite", "aria-label": t("sights.crossings") });
  const mapElement = h("div", { class: "map", role: "region", "aria-label": t("sights.map") });
  main.append(h("div", { class: "results" }, mapElement, h("div", {}, list, h("h3", {}, t("sights.crossings")), log)));
  const map = await createMap(mapElement, [52.0899, 5.1235], 15);
  const sights = pins(map);
  const me = pins(map);
  const titles = new Map();

  async function loadSights(lat, lon) {
    const [{ hits }, { regions }] = await Promise.all([
      api("/v1/nearest", { query: { lat, lon, k: 10, kinds: "sight" } }),
      api("/v1/fences/plan", { query: { lat, lon, max: 20 } }),
    ]);
    sights.clear();
    for (const region of regions) sights.area(region.lat, region.lon, region.radius, { color: "#e76f51" });
    for (const hit of hits) {
      titles.set(hit.id, hit.title);
      sights.add(hit.lat, hit.lon, hit.title, { color: "#e76f51", onclick: () => { location.hash = `#/post/${hit.id}`; } });
    }
    // The map's click has a keyboard's equal: a button per sight that walks there.
    fill(list, hits.map((hit) => h("li", {}, h("a", { href: `#/post/${hit.id}` }, hit.title), h("span", { class: "meta" }, ` · ${distance(hit.distance)} `),
      h("button", { type: "button", class: "secondary", onclick: () => attempt(() => moveTo(hit.lat, hit.lon)) }, t("sights.walkThere")))));
  }

  // A crossing comes twice, in either order: in the reply to the move and as an
  // event (to every socket of the user). The first is shown, the second passes;
  // crossing back forgets a second that never came.
  const seen = new Set();
  function note(kind, postId) {
    const key = `${kind}/${postId}`;
    if (seen.delete(key)) return;
    seen.add(key);
    seen.delete(`${kind === "entered" ? "exited" : "entered"}/${postId}`);
    const title = titles.get(postId) ?? postId;
    log.prepend(h("li", { class: kind, dataset: { post: postId } }, t(`sights.${kind}`, { title })));
  }

  async function moveTo(lat, lon) {
    await ensureSession();
    me.clear();
    me.add(lat, lon, t("sights.you"), { color: "#1a7f37", radius: 9 });
    if (!map.getBounds().contains([lat, lon])) map.panTo([lat, lon]);
    const reply = await api("/v1/fences/update", { method: "POST", json: { lat, lon }, headers: { "Idempotency-Key": crypto.randomUUID() } });
    for (const postId of reply.entered) note("entered", postId);
    for (const postId of reply.exited) note("exited", postId);
    say(reply.inside.length ? t("sights.inside", { titles: reply.inside.map((id) => titles.get(id) ?? id).join(", ") }) : t("sights.outside"));
    await loadSights(lat, lon);
  }

  const stops = ["entered", "exited"].map((kind) => on(`fence.${kind}`, (event) => note(kind, event.postId)));
  map.on("click", (event) => attempt(() => moveTo(Number(event.latlng.lat.toFixed(6)), Number(event.latlng.lng.toFixed(6)))));
  await loadSights(52.0899, 5.1235);
  return () => stops.forEach((stop) => stop());
}
