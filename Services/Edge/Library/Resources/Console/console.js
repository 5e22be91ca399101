// The console's search page: a map and a list of what geo.search finds around a
// named place, the words that matched in bold. Plain ES modules, no build step;
// Leaflet is Debian's, served by the edge.
import { map as leafletMap, tileLayer, circleMarker, latLngBounds } from "/vendor/leaflet/leaflet.esm.js";

const form = document.getElementById("search");
const status = document.getElementById("status");
const list = document.getElementById("hits");

const config = await (await fetch("/console/config.json")).json();
const map = leafletMap("map").setView([52.0907, 5.1214], 12);
tileLayer(config.tileURL, { maxZoom: 19, attribution: config.tileAttribution }).addTo(map);
let pins = [];

const openLabels = { open: "open", closes_soon: "closes soon", closed: "closed", opens_soon: "opens soon" };

/** The title as nodes, the stretches `ranges` gives (UTF-16, as JavaScript counts) in <mark>. */
function highlighted(title, ranges) {
  const nodes = [];
  let position = 0;
  for (const { start, length } of ranges ?? []) {
    if (start < position || start + length > title.length) continue;
    nodes.push(document.createTextNode(title.slice(position, start)));
    const mark = document.createElement("mark");
    mark.textContent = title.slice(start, start + length);
    nodes.push(mark);
    position = start + length;
  }
  nodes.push(document.createTextNode(title.slice(position)));
  return nodes;
}

function distance(metres) {
  return metres < 1000 ? `${Math.round(metres)} m` : `${(metres / 1000).toFixed(1)} km`;
}

function show(reply) {
  for (const pin of pins) pin.remove();
  pins = [];
  list.replaceChildren();
  for (const hit of reply.hits) {
    const row = document.createElement("li");
    const title = document.createElement("strong");
    title.append(...highlighted(hit.title, hit.highlights?.title));
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.append(`${hit.kind} · ${distance(hit.distance)}`);
    if (hit.openStatus) {
      const open = document.createElement("span");
      open.className = hit.openStatus;
      open.textContent = ` · ${openLabels[hit.openStatus] ?? hit.openStatus}`;
      meta.append(open);
    }
    row.append(title, meta);
    list.append(row);
    pins.push(circleMarker([hit.lat, hit.lon], { radius: 7 }).bindTooltip(hit.title).addTo(map));
  }
  const center = reply.center;
  const where = center.place ? `${center.place.name} (${center.place.countryCode})` : `${center.lat}, ${center.lon}`;
  status.textContent = `${reply.hits.length} found near ${where}`;
  if (pins.length > 0) {
    map.fitBounds(latLngBounds(pins.map((pin) => pin.getLatLng())).pad(0.2));
  } else {
    map.setView([center.lat, center.lon], 12);
  }
}

/** Runs the form's search, and keeps it in the address so that it can be shared or reloaded. */
async function search() {
  const data = new FormData(form);
  const query = new URLSearchParams({ place: data.get("place"), radius: String(Number(data.get("radius")) * 1000) });
  if (data.get("q")) query.set("q", data.get("q"));
  if (data.get("openNow")) query.set("openNow", "true");
  status.textContent = "Searching…";
  const response = await fetch(`/v1/search?${query}`);
  const body = await response.json();
  if (!response.ok) {
    status.textContent = body.detail ?? `The search failed (${response.status}).`;
    return;
  }
  show(body);
  history.replaceState(null, "", `?${new URLSearchParams([...data].filter(([, value]) => value !== ""))}`);
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});

// A shared address (`/?q=burger&place=Utrecht&radius=5`) fills the form and searches.
const given = new URLSearchParams(location.search);
if (given.has("place")) {
  for (const [name, value] of given) {
    const field = form.elements.namedItem(name);
    if (field?.type === "checkbox") field.checked = value === "on" || value === "true";
    else if (field) field.value = value;
  }
  search();
}
