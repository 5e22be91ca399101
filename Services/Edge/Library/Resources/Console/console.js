// The console's shell: the header (pages, who is signed in, the language), and a
// router that shows one page at a time by the address's hash (`#/search`,
// `#/post/<id>`, …), so that each page can be linked to and reloaded.
import { h, fill, field } from "./dom.js";
import { t, language, setLanguage, languages } from "./i18n.js";
import { current, onChange, signIn, register, signInAnonymously, signOut, api, ApiError } from "./session.js";
import { say, explain, attempt } from "./notice.js";
import { offerMailLink } from "./devmail.js";
import { on } from "./events.js";

const pages = {
  search: () => import("./pages/search.js"),
  post: () => import("./pages/post.js"),
  edit: () => import("./pages/edit.js"),
  favourites: () => import("./pages/favourites.js"),
  chat: () => import("./pages/chat.js"),
  divers: () => import("./pages/divers.js"),
  trips: () => import("./pages/trips.js"),
  tips: () => import("./pages/tips.js"),
  sights: () => import("./pages/sights.js"),
  country: () => import("./pages/country.js"),
  operator: () => import("./pages/operator.js"),
  account: () => import("./pages/account.js"),
};

// The pages in the navigation, in order; `operator` only for operators.
const navigation = ["search", "edit", "favourites", "chat", "divers", "trips", "tips", "sights", "country"];

const nav = document.getElementById("nav");
const account = document.getElementById("account");
const main = document.getElementById("page");
let leave = null;
let isOperator = false;
/** Messages that arrived while another page than Chat was shown: a badge on its link. */
let unheard = 0;

/** The address's page and what follows it: `#/post/123?x=1` → ["post", ["123"], URLSearchParams]. */
function route() {
  // Mailed links: /email/verify?token=… and /password/reset?token=… open the account page.
  const mailed = { "/email/verify": "verify", "/password/reset": "reset" }[location.pathname];
  if (mailed && !location.hash) return ["account", [mailed], new URLSearchParams(location.search)];
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, ...rest] = path.split("/").filter(Boolean).map(decodeURIComponent);
  // The page at / with `?q=…&place=…` (an address shared before pages had hashes) searches.
  if (!name) return ["search", [], new URLSearchParams(location.search)];
  return [pages[name] ? name : "search", rest, new URLSearchParams(query ?? "")];
}

/** Set when the navigation was used: the page it leads to gets the focus once drawn. */
let focusPage = false;
nav.addEventListener("click", (event) => {
  if (event.target.closest("a")) focusPage = true;
});

async function show() {
  const [name, parameters, query] = route();
  leave?.();
  leave = null;
  say("");
  if (name === "chat") unheard = 0;
  renderNavigation(name);
  fill(main, h("p", { class: "loading" }, t("loading")));
  try {
    const page = await pages[name]();
    if (route()[0] !== name) return;  // the address changed while the module loaded
    document.title = `${t(`page.${name}`)} · Hereabouts`;
    main.replaceChildren();
    leave = (await page.render(main, parameters, query)) ?? null;
    // After the navigation the focus goes to the page, not back to the top of the document.
    if (focusPage) main.focus();
    focusPage = false;
  } catch (error) {
    say(explain(error), "error");
  }
}

function renderNavigation(active) {
  const names = isOperator ? [...navigation, "operator"] : navigation;
  fill(nav, h("ul", {}, names.map((name) => h("li", {},
    h("a", { href: `#/${name}`, "aria-current": name === active ? "page" : null }, t(`page.${name}`),
      name === "chat" && unheard > 0
        ? h("span", { class: "badge", "aria-label": t("chat.unread", { count: unheard }) }, String(unheard)) : null)))));
}

// Messages are heard on every page: away from Chat, a badge on its link and a notice
// naming the sender (the Chat page shows them itself).
on("chat.message", async ({ message }) => {
  const session = current();
  if (!session || message.senderId === session.user.id || route()[0] === "chat") return;
  unheard += 1;
  renderNavigation(route()[0]);
  const sender = await api("/v1/users", { query: { ids: message.senderId } }).then((reply) => reply.users[0], () => null);
  say(t("chat.arrived", { name: sender?.displayName ?? sender?.username ?? t("chat.someone") }), "info");
});

// On a phone the sign-in form waits behind its summary, so the page starts near the top; a wide
// screen has room for it open. A guest who asked to sign in finds it open on any screen.
const wide = matchMedia("(min-width: 800px)");
let askedToSignIn = false;
const signInShown = () => wide.matches || askedToSignIn;
wide.addEventListener("change", () => {
  const box = account.querySelector("details.signin-box");
  if (box) box.open = signInShown();
});

function renderAccount() {
  const session = current();
  const switcher = h("select", { "aria-label": t("language"), onchange: (event) => setLanguage(event.target.value) },
    languages.map((code) => h("option", { value: code, selected: code === language() }, t(`language.${code}`))));
  if (session) {
    const name = session.user.displayName ?? session.user.email ?? t("account.anonymous");
    const who = t("account.signedInAs", { name });
    if (session.user.anonymous) {
      // A guest keeps signing in and registering in reach, and is told what a guest can do.
      fill(account, h("span", { class: "who", title: t("account.guestNote") }, who),
        h("button", { type: "button", onclick: () => { askedToSignIn = true; signOut(); } }, t("account.signInOrRegister")), switcher);
      return;
    }
    fill(account, h("a", { class: "who", href: "#/account" }, who),
      h("button", { type: "button", class: "secondary", onclick: () => signOut() }, t("account.signOut")), switcher);
    return;
  }
  const email = h("input", { name: "email", type: "email", autocomplete: "username", required: true });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true, minlength: 8 });
  const form = h("form", { class: "signin", "aria-label": t("account.signIn") },
    field(t("account.email"), email), field(t("account.password"), password),
    h("button", { type: "submit" }, t("account.signIn")),
    h("button", { type: "button", class: "secondary", onclick: () => {
      // Not sent empty: the browser shows what the form still needs.
      if (!form.reportValidity()) return;
      attempt(async () => {
        await register(email.value, password.value);
        offerMailLink(email.value, "/email/verify");
      });
    } }, t("account.register")),
    h("button", { type: "button", class: "secondary", onclick: () => attempt(() => signInAnonymously()) }, t("account.tryAnonymously")),
    h("a", { href: "#/account", class: "forgot" }, t("account.forgotLink")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      try {
        await signIn(email.value, password.value);
      } catch (error) {
        // The API says "login"; this form asks for an email.
        if (error instanceof ApiError && error.code === "unauthenticated") throw new Error(t("account.wrongLogin"));
        throw error;
      }
    });
  });
  const box = h("details", { class: "signin-box" }, h("summary", {}, t("account.signInOrRegister")), form);
  box.open = signInShown();
  fill(account, box, switcher);
}

/** Whether the signed-in user may see the operators' page, as the edge says. */
async function checkOperator() {
  const was = isOperator;
  isOperator = false;
  if (current() && !current().user.anonymous) {
    isOperator = (await api("/v1/operator").catch(() => null))?.operator === true;
  }
  if (was !== isOperator) renderNavigation(route()[0]);
}

// A refreshed token changes nothing on the page; another user (or none) redraws it.
let shownUser = current()?.user.id ?? null;
onChange((session) => {
  renderAccount();
  if ((session?.user.id ?? null) === shownUser) return;
  shownUser = session?.user.id ?? null;
  checkOperator();
  show();
});
window.addEventListener("hashchange", show);
document.addEventListener("languagechange", () => {
  labelPage();
  renderAccount();
  show();
});

/** The page's own words (the rest is drawn by the pages). */
function labelPage() {
  document.documentElement.lang = language();
  document.querySelector(".skip").textContent = t("skip");
  nav.setAttribute("aria-label", t("pages"));
}

// The skip link moves the focus to the page without changing the address's hash.
document.querySelector(".skip").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});
labelPage();
renderAccount();
checkOperator();
show();
