// Leaflet (Debian's libjs-leaflet, served by the edge) with the tiles the edge's
// settings name. Without a network the tiles fail to load and the pins still show
// on a blank map.
import { map as leafletMap, tileLayer, circleMarker, circle, layerGroup, latLngBounds } from "/vendor/leaflet/leaflet.esm.js";

let config = null;

async function settings() {
  config ??= await (await fetch("/console/config.json")).json();
  return config;
}

/** A map in `element`, centred on `center` ([lat, lon]) at `zoom`. */
export async function createMap(element, center = [52.0907, 5.1214], zoom = 13) {
  const { tileURL, tileAttribution } = await settings();
  const map = leafletMap(element, { keyboard: true }).setView(center, zoom);
  tileLayer(tileURL, { maxZoom: 19, attribution: tileAttribution }).addTo(map);
  return map;
}

/** A group of pins on `map` that can be emptied and refilled. */
export function pins(map) {
  const group = layerGroup().addTo(map);
  return {
    group,
    clear: () => group.clearLayers(),
    /**
     * A pin with a tooltip; `onclick` when it is clicked. Leaflet writes a string
     * tooltip with innerHTML, and labels are what people typed (post titles, names):
     * it gets a node holding the label as text.
     */
    add(lat, lon, label, { color = "#2a6f97", onclick, radius = 7 } = {}) {
      const tooltip = document.createElement("span");
      tooltip.textContent = String(label);
      const pin = circleMarker([lat, lon], { radius, color, weight: 2, fillOpacity: 0.6 }).bindTooltip(tooltip);
      if (onclick) pin.on("click", onclick);
      pin.addTo(group);
      return pin;
    },
    /** A circle of `metres` around a point. */
    area(lat, lon, metres, { color = "#2a6f97" } = {}) {
      return circle([lat, lon], { radius: metres, color, weight: 1, fillOpacity: 0.08 }).addTo(group);
    },
    /** Moves the view to show every pin, else centres on `fallback`. */
    fit(fallback) {
      const points = [];
      group.eachLayer((layer) => layer.getLatLng && points.push(layer.getLatLng()));
      if (points.length > 0) map.fitBounds(latLngBounds(points).pad(0.2), { maxZoom: 16 });
      else if (fallback) map.setView(fallback, 13);
    },
  };
}
