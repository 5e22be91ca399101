// Numbers, distances, dates and open status in the console's language.
import { h } from "./dom.js";
import { t, language } from "./i18n.js";

export function distance(metres) {
  if (metres === null || metres === undefined) return "";
  const format = new Intl.NumberFormat(language(), { maximumFractionDigits: metres < 1000 ? 0 : 1 });
  return metres < 1000 ? `${format.format(Math.round(metres))} m` : `${format.format(metres / 1000)} km`;
}

export function number(value) {
  return new Intl.NumberFormat(language()).format(value);
}

export function money(price) {
  if (!price) return "";
  try {
    return new Intl.NumberFormat(language(), { style: "currency", currency: price.currency }).format(price.amount);
  } catch {
    return `${number(price.amount)} ${price.currency}`;
  }
}

export function dateTime(text) {
  return text ? new Intl.DateTimeFormat(language(), { dateStyle: "medium", timeStyle: "short" }).format(new Date(text)) : "";
}

export function date(text) {
  return text ? new Intl.DateTimeFormat(language(), { dateStyle: "medium" }).format(new Date(`${text}T12:00:00`)) : "";
}

export function bytes(count) {
  if (count === null || count === undefined) return "";
  const format = new Intl.NumberFormat(language(), { maximumFractionDigits: 1 });
  return count >= 10 * 1_073_741_824 ? `${format.format(count / 1_073_741_824)} GiB` : `${format.format(count / 1_048_576)} MiB`;
}

/** Open, closes soon, closed or opens soon, as the restaurant app shows it: a coloured
 * word, and when that changes ("until 22:00", "until Mon 11:00") in the reader's time. */
export function openStatus(status, nextChange) {
  if (!status) return null;
  const label = t(`open.${status}`);
  if (!nextChange) return h("span", { class: `open-status ${status}` }, label);
  const next = new Date(nextChange);
  const sameDay = next.toDateString() === new Date().toDateString();
  const when = new Intl.DateTimeFormat(language(), sameDay ? { hour: "2-digit", minute: "2-digit" }
    : { weekday: "short", hour: "2-digit", minute: "2-digit" }).format(next);
  return h("span", { class: `open-status ${status}` }, label, h("span", { class: "until" }, " ", t("open.until", { time: when })));
}

/** ★★★★☆ 4.2 (12), or "no ratings". */
export function rating(rating) {
  if (!rating || rating.count === 0 || rating.average === null) return h("span", { class: "rating" }, t("rating.none"));
  const stars = Math.round(rating.average);
  return h("span", { class: "rating", "aria-label": t("rating.label", { average: rating.average.toFixed(1), count: rating.count }) },
    "★".repeat(stars) + "☆".repeat(5 - stars), ` ${rating.average.toFixed(1)} (${rating.count})`);
}
