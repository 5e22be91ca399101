// The operators' page: each service's health, version, round trip and memory,
// geo's index and how far it is behind, the edge's sockets and request rates, and
// the last problems the edge answered. Refreshed every five seconds while open.
import { h, fill } from "../dom.js";
import { t } from "../i18n.js";
import { api, ApiError } from "../session.js";
import { bytes, dateTime, number } from "../format.js";
import { say, explain } from "../notice.js";

export async function render(main) {
  main.append(h("h2", {}, t("page.operator")));
  const body = h("div", { class: "operator", "aria-live": "off" });
  const checked = h("p", { class: "meta", role: "status" });
  main.append(checked, body);

  async function refresh() {
    try {
      draw(await api("/v1/operator/status"));
    } catch (error) {
      // Who may see it is a setting of the edge: its name means nothing to a user.
      const denied = error instanceof ApiError && error.code === "permission_denied";
      say(denied ? t("operator.notAllowed") : explain(error), "error");
    }
  }

  function draw(status) {
    checked.textContent = t("operator.checked", { when: dateTime(status.checkedAt) });
    const yes = (value) => (value === undefined || value === null ? "—" : value ? t("operator.yes") : t("operator.no"));
    const geo = status.geo;
    fill(body,
      h("h3", {}, t("operator.services")),
      h("table", {},
        h("thead", {}, h("tr", {}, ["service", "answering", "ready", "version", "uptime", "roundTrip", "memory", "sqlite", "free"]
          .map((column) => h("th", { scope: "col" }, t(`operator.${column}`))))),
        h("tbody", {}, status.services.map((service) => h("tr", { class: service.answering && service.ready !== false ? "ok" : "bad", dataset: { service: service.service } },
          h("th", { scope: "row" }, service.service), h("td", {}, yes(service.answering)), h("td", {}, yes(service.ready)),
          h("td", {}, service.version ?? "—"), h("td", {}, service.uptimeSeconds !== undefined ? duration(service.uptimeSeconds) : "—"),
          h("td", {}, service.roundTripMs !== undefined ? `${service.roundTripMs.toFixed(2)} ms` : "—"),
          h("td", {}, bytes(service.memory?.residentBytes) || "—"), h("td", {}, bytes(service.memory?.sqliteBytes) || "—"),
          h("td", {}, service.storage ? t("operator.freeOf", { free: bytes(service.storage.freeBytes), file: bytes(service.storage.fileBytes) }) : "—"))))),
      h("h3", {}, t("operator.geo")),
      geo ? h("dl", {},
        h("dt", {}, t("operator.posts")), h("dd", { dataset: { geo: "posts" } }, number(geo.posts)),
        h("dt", {}, t("operator.users")), h("dd", {}, number(geo.users)),
        h("dt", {}, t("operator.watches")), h("dd", {}, number(geo.watches)),
        h("dt", {}, t("operator.indexMemory")), h("dd", {}, bytes(geo.memoryBytes)),
        Object.entries(geo.lag).map(([feed, lag]) => [h("dt", {}, t("operator.lag", { feed })), h("dd", {}, number(lag))]))
        : h("p", { class: "bad" }, t("operator.geoDown")),
      h("h3", {}, t("operator.edge")),
      h("dl", {},
        h("dt", {}, t("operator.version")), h("dd", {}, status.edge.version),
        h("dt", {}, t("operator.uptime")), h("dd", {}, duration(status.edge.uptimeSeconds)),
        h("dt", {}, t("operator.sockets")), h("dd", { dataset: { edge: "sockets" } }, number(status.edge.openSockets)),
        h("dt", {}, t("operator.requests")), h("dd", {}, number(status.edge.requests)),
        h("dt", {}, t("operator.rate")), h("dd", {}, `${status.edge.requestsPerSecond.toFixed(2)} / s (${t("operator.last10s")}: ${status.edge.requestsPerSecond10s.toFixed(2)} / s)`),
        h("dt", {}, t("operator.serverErrors")), h("dd", {}, `${status.edge.serverErrorsPerSecond.toFixed(2)} / s`)),
      h("h3", {}, t("operator.errors", { count: status.errors.length })),
      status.errors.length ? h("table", { class: "errors" },
        h("thead", {}, h("tr", {}, ["when", "request", "status", "code", "detail", "requestId"].map((column) => h("th", { scope: "col" }, t(`operator.${column}`))))),
        h("tbody", {}, status.errors.map((error) => h("tr", {},
          h("td", {}, dateTime(error.at)), h("td", {}, `${error.method} ${error.path}`), h("td", {}, String(error.status)),
          h("td", {}, error.code), h("td", {}, error.detail), h("td", { class: "id" }, error.requestId)))))
        : h("p", {}, t("operator.noErrors")));
  }

  await refresh();
  const timer = setInterval(refresh, 5000);
  return () => clearInterval(timer);
}

function duration(seconds) {
  const whole = Math.floor(seconds);
  const days = Math.floor(whole / 86400), hours = Math.floor((whole % 86400) / 3600), minutes = Math.floor((whole % 3600) / 60);
  return days ? `${days} d ${hours} h` : hours ? `${hours} h ${minutes} min` : `${minutes} min ${whole % 60} s`;
}
