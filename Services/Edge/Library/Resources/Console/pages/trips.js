// Trips: one's trips and invitations soonest first, a new one, and a trip's page with its
// buddies (invited by email, on the trip once they accept), leaving, declining or deleting
// it, and its calendar file.
import { h, fill, field } from "../dom.js";
import { t } from "../i18n.js";
import { api, current } from "../session.js";
import { date, dateTime } from "../format.js";
import { say, attempt } from "../notice.js";

export async function render(main, [id]) {
  main.append(h("h2", {}, t("page.trips")));
  const session = current();
  if (!session || session.user.anonymous) {
    main.append(h("p", {}, t("trips.signInFirst")));
    return;
  }
  return id ? trip(main, id, session) : trips(main);
}

async function trips(main) {
  const { trips } = await api("/v1/trips");
  main.append(h("ul", { class: "cards", "aria-label": t("page.trips") }, trips.length ? trips.map((trip) => h("li", {},
    h("a", { href: `#/trips/${trip.id}`, class: "title" }, trip.title),
    trip.role === "invited" ? h("span", { class: "badge" }, t("trips.invitation")) : null,
    h("div", { class: "meta" }, `${trip.city}, ${trip.countryCode}`, trip.start ? ` · ${date(trip.start)} – ${date(trip.end ?? trip.start)}` : "")))
    : h("li", { class: "empty" }, t("trips.none"))));
  const input = {
    title: h("input", { name: "title", required: true }),
    city: h("input", { name: "city", required: true }),
    countryCode: h("input", { name: "countryCode", required: true, maxlength: 2, size: 3, pattern: "[A-Za-z]{2}" }),
    start: h("input", { name: "start", type: "date" }),
    end: h("input", { name: "end", type: "date" }),
  };
  const form = h("form", { "aria-label": t("trips.new") }, h("h3", {}, t("trips.new")),
    field(t("trips.title"), input.title), field(t("trips.city"), input.city), field(t("trips.countryCode"), input.countryCode),
    h("div", { class: "row" }, field(t("trips.start"), input.start), field(t("trips.end"), input.end)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, t("trips.create"))));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      // The city's coordinates from the gazetteer, for the map and the calendar's location.
      const places = await api("/v1/places", { query: { q: input.city.value, countryCode: input.countryCode.value.toUpperCase(), limit: 1 } });
      const { trip } = await api("/v1/trips", { method: "POST", headers: { "Idempotency-Key": crypto.randomUUID() }, json: {
        title: input.title.value, city: input.city.value, countryCode: input.countryCode.value.toUpperCase(),
        lat: places.places[0]?.lat, lon: places.places[0]?.lon, start: input.start.value || undefined, end: input.end.value || undefined,
      } });
      location.hash = `#/trips/${trip.id}`;
    });
  });
  main.append(form);
}

async function trip(main, id, session) {
  const { trip } = await api(`/v1/trips/${encodeURIComponent(id)}`);
  const ids = (trip.members ?? []).map((member) => member.userId);
  const { users } = ids.length ? await api("/v1/users", { query: { ids: ids.join(",") } }) : { users: [] };
  const names = new Map(users.map((user) => [user.id, user.displayName ?? user.username ?? t("chat.someone")]));
  const owner = trip.ownerId === session.user.id;
  const email = h("input", { name: "email", type: "email", required: true });
  const invite = h("form", { "aria-label": t("trips.invite") }, field(t("trips.inviteEmail"), email),
    h("button", { type: "submit" }, t("trips.invite")));
  invite.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      const { user } = await api("/v1/users/lookup", { query: { email: email.value.trim() } });
      await api(`/v1/trips/${encodeURIComponent(trip.id)}/members`, { method: "POST", json: { userId: user.id } });
      say(t("trips.invitedNow", { name: user.displayName ?? email.value }), "ok");
      main.replaceChildren();
      await render(main, [id]);
    });
  });
  const calendar = h("button", { type: "button", class: "secondary" }, t("trips.calendar"));
  calendar.addEventListener("click", () => attempt(async () => {
    // The file needs the bearer token, so it is fetched and handed over as a download.
    const response = await api(`/v1/trips/${encodeURIComponent(trip.id)}/calendar.ics`, { raw: true });
    const link = h("a", { href: URL.createObjectURL(await response.blob()), download: `${trip.title}.ics` });
    document.body.append(link);
    link.click();
    link.remove();
  }));
  const invited = trip.role === "invited";
  const me = `/v1/trips/${encodeURIComponent(trip.id)}/members/me`;
  const leave = h("button", { type: "button", class: "danger" }, t(owner ? "trips.delete" : invited ? "trips.decline" : "trips.leave"));
  leave.addEventListener("click", () => attempt(async () => {
    if (!invited && !confirm(t(owner ? "trips.confirmDelete" : "trips.confirmLeave", { title: trip.title }))) return;
    await api(owner ? `/v1/trips/${encodeURIComponent(trip.id)}` : me, { method: "DELETE" });
    location.hash = "#/trips";
  }));
  const accept = h("button", { type: "button" }, t("trips.accept"));
  accept.addEventListener("click", () => attempt(async () => {
    await api(me, { method: "PUT" });
    say(t("trips.joinedNow", { title: trip.title }), "ok");
    main.replaceChildren();
    await render(main, [id]);
  }));
  // An invited buddy is not on the trip until they accept: say so, with when they were asked.
  const standing = (member) => member.role === "invited"
    ? `${t("trips.role.invited")} · ${t("trips.invitedOn", { when: dateTime(member.invitedAt) })}`
    : `${t(`trips.role.${member.role}`)} · ${t("trips.joined", { when: dateTime(member.joinedAt) })}`;
  main.append(h("article", {}, h("h3", {}, trip.title),
    h("p", { class: "meta" }, `${trip.city}, ${trip.countryCode}`, trip.start ? ` · ${date(trip.start)} – ${date(trip.end ?? trip.start)}` : ""),
    invited ? h("p", { class: "invitation" }, t("trips.youAreInvited", { name: names.get(trip.ownerId) ?? t("chat.someone") })) : null,
    h("h4", {}, t("trips.buddies")),
    h("ul", { class: "members" }, (trip.members ?? []).map((member) => h("li", { class: member.role },
      names.get(member.userId) ?? member.userId, ` · ${standing(member)}`))),
    owner ? invite : null,
    h("div", { class: "actions" }, invited ? accept : null, calendar, leave),
    h("p", {}, h("a", { href: `#/tips?city=${encodeURIComponent(trip.city)}` }, t("trips.tipsFor", { city: trip.city })))));
}
