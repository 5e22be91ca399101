// The account: its address (confirmed or not, a link sent again), a new address,
// and a forgotten password. Mailed links open here: `/email/verify?token=…` confirms
// at once, `/password/reset?token=…` asks for the new password; the token is then
// taken out of the address bar, so it stays in no history.
import { h, field } from "../dom.js";
import { t } from "../i18n.js";
import { api, current, acceptSession, updateUser } from "../session.js";
import { say, attempt } from "../notice.js";
import { offerMailLink } from "../devmail.js";

// What to say once the page is drawn again (signing in redraws it).
let pendingNotice = null;

export async function render(main, parameters, query) {
  main.append(h("h2", {}, t("page.account")));
  if (pendingNotice) {
    say(pendingNotice, "ok");
    pendingNotice = null;
  }
  const mode = parameters[0];
  const token = query.get("token");
  if (mode === "verify" && token) return confirmAddress(main, token);
  if (mode === "reset" && token) return resetPassword(main, token);
  if (!current() || current().user.anonymous) return forgotPassword(main);
  // Afresh: the address may have been confirmed or changed in another tab, or from a phone.
  const user = (await api("/v1/me")).user;
  updateUser(user);
  return overview(main, user);
}

function forgetToken() {
  history.replaceState(null, "", "/#/account");
}

async function confirmAddress(main, token) {
  forgetToken();
  const reply = await attempt(() => api("/v1/auth/email/verify", { method: "POST", json: { token } }));
  if (!reply) {
    main.append(h("p", {}, t("account.linkInvalid")));
    return;
  }
  main.append(h("p", { class: "ok" }, t("account.confirmed", { email: reply.email })));
  say(t("account.confirmed", { email: reply.email }), "ok");
  // Signed in here: the account as it is now, below.
  if (current() && !current().user.anonymous) {
    const me = await api("/v1/me").catch(() => null);
    if (me) {
      updateUser(me.user);
      overview(main, me.user);
    }
  }
}

function resetPassword(main, token) {
  forgetToken();
  const password = h("input", { name: "newPassword", type: "password", autocomplete: "new-password", required: true, minlength: 8 });
  const form = h("form", { "aria-label": t("account.resetTitle") },
    h("p", {}, t("account.resetIntro")),
    field(t("account.newPassword"), password),
    h("button", { type: "submit" }, t("account.setPassword")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      const session = await api("/v1/auth/password/reset", { method: "POST", json: { token, newPassword: password.value } });
      // Signing in draws the page again, as the account's overview.
      pendingNotice = t("account.passwordSet");
      acceptSession(session);
    });
  });
  main.append(form);
}

function forgotPassword(main) {
  const email = h("input", { name: "email", type: "email", autocomplete: "username", required: true });
  const form = h("form", { "aria-label": t("account.forgotTitle") },
    h("h3", {}, t("account.forgotTitle")),
    h("p", {}, t("account.forgotIntro")),
    field(t("account.email"), email),
    h("button", { type: "submit" }, t("account.sendLink")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      await api("/v1/auth/password/forgot", { method: "POST", json: { email: email.value } });
      say(t("account.forgotSent", { email: email.value }), "ok");
      offerMailLink(email.value, "/password/reset");
    });
  });
  main.append(form);
}

function overview(main, user) {
  const status = user.emailVerified
    ? h("span", { class: "badge ok" }, t("account.isConfirmed"))
    : h("span", { class: "badge" }, t("account.notConfirmed"));
  const resend = user.emailVerified ? null : h("button", { type: "button", class: "secondary", onclick: () => attempt(async () => {
    const reply = await api("/v1/auth/email/verify/resend", { method: "POST" });
    say(t("account.linkSent", { email: reply.sentTo }), "ok");
    offerMailLink(reply.sentTo, "/email/verify");
  }) }, t("account.resend"));
  main.append(h("p", {}, t("account.address", { email: user.email ?? "" }), " ", status, " ", resend ?? ""));
  if (user.pendingEmail) main.append(h("p", { class: "meta" }, t("account.pending", { email: user.pendingEmail })));

  const email = h("input", { name: "email", type: "email", autocomplete: "email", required: true });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { "aria-label": t("account.changeTitle") },
    h("h3", {}, t("account.changeTitle")),
    field(t("account.newEmail"), email), field(t("account.password"), password),
    h("button", { type: "submit" }, t("account.changeEmail")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(async () => {
      const reply = await api("/v1/me/email", { method: "POST", json: { email: email.value, password: password.value } });
      // Drawn again: the address waiting for its confirmation shows.
      main.replaceChildren();
      await render(main, [], new URLSearchParams());
      say(t("account.changeSent", { email: reply.sentTo }), "ok");
      offerMailLink(reply.sentTo, "/email/verify");
    });
  });
  main.append(form);
}
