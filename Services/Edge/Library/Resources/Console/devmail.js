// A development stack (`here up --demo`) sends no mail: it keeps it, and the edge
// shows an address's newest one (GET /v1/dev/mail). There the notice offers the
// mail's link in place of a mailbox. The console's settings say whether it does, so
// no other stack is asked.
import { api, ApiError } from "./session.js";
import { t } from "./i18n.js";
import { sayLink } from "./notice.js";

let shown = null;

/** Whether this stack shows its mail's links (the edge's console settings say). */
async function showsLinks() {
  shown ??= fetch("/console/config.json").then((response) => response.json()).then((config) => config.mailLinks === true)
    .catch(() => false);
  return shown;
}

/** Offers the link with `path` (`/email/verify`, `/password/reset`) of the newest mail to `email`, once it is there. */
export async function offerMailLink(email, path) {
  if (!(await showsLinks())) return;
  for (let tries = 0; tries < 10; tries++) {
    let mail = null;
    try {
      mail = await api("/v1/dev/mail", { query: { email } });
    } catch (error) {
      if (error instanceof ApiError && error.status === 403) return;
    }
    const link = mail?.links?.find((each) => new URL(each).pathname === path);
    if (link) {
      const url = new URL(link);
      sayLink(t("devmail.notice", { email }), url.pathname + url.search, t("devmail.open"));
      return;
    }
    // A reset mail is written a moment after the answer.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}
