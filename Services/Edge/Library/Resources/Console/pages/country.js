// A country's facts: its flag, names, capital, population, currency and continent,
// in the console's language where the gazetteer has them. Found by code, or by a
// place's name.
import { h, fill, field } from "../dom.js";
import { t } from "../i18n.js";
import { api } from "../session.js";
import { number } from "../format.js";
import { say, explain } from "../notice.js";

export async function render(main, [code]) {
  main.append(h("h2", {}, t("page.country")));
  const input = h("input", { name: "country", value: code ?? "NL", required: true, autocomplete: "off" });
  const form = h("form", { "aria-label": t("page.country") }, field(t("country.codeOrPlace"), input),
    h("div", { class: "actions" }, h("button", { type: "submit" }, t("country.show"))));
  const facts = h("section", { class: "country", "aria-live": "polite" });
  main.append(form, facts);

  async function show(text) {
    let countryCode = text.trim();
    try {
      if (!/^[A-Za-z]{2}$/.test(countryCode)) {
        const { places } = await api("/v1/places", { query: { q: countryCode, limit: 1 } });
        if (!places.length) throw new Error(t("country.noPlace", { name: countryCode }));
        countryCode = places[0].countryCode;
      }
      const { country } = await api(`/v1/countries/${encodeURIComponent(countryCode)}`);
      history.replaceState(null, "", `/#/country/${country.code}`);
      fill(facts,
        h("p", { class: "flag", role: "img", "aria-label": t("country.flagOf", { name: country.name }) }, country.flag),
        h("h3", { lang: country.nameLang }, country.name),
        h("dl", {},
          h("dt", {}, t("country.code")), h("dd", {}, country.code),
          h("dt", {}, t("country.capital")), h("dd", { lang: country.capitalLang }, country.capital ?? "—"),
          h("dt", {}, t("country.population")), h("dd", {}, number(country.population)),
          h("dt", {}, t("country.currency")), h("dd", { lang: country.currencyNameLang }, country.currencyName ? `${country.currencyName} (${country.currencyCode})` : "—"),
          h("dt", {}, t("country.continent")), h("dd", { lang: country.continentNameLang }, country.continentName)));
    } catch (error) {
      fill(facts);
      say(explain(error), "error");
    }
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    show(input.value);
  });
  await show(input.value);
}
