// The notice line under the header: what just happened, or what went wrong, read
// out by screen readers (role=status / alert in the page).
import { t } from "./i18n.js";
import { ApiError } from "./session.js";

/** Shows `text` in the notice line; `kind` is info, ok or error. */
export function say(text, kind = "info") {
  const notice = document.getElementById("notice");
  notice.className = kind;
  notice.setAttribute("role", kind === "error" ? "alert" : "status");
  notice.textContent = text ?? "";
}

/** Shows `text` and a link after it (`label`, to `href`) in the notice line. */
export function sayLink(text, href, label) {
  say(text, "info");
  const link = document.createElement("a");
  link.href = href;
  link.textContent = label;
  document.getElementById("notice").append(" ", link);
}

/** An API error, or any other, as a sentence: the code's words in the console's language, and the service's detail. */
export function explain(error) {
  if (error instanceof ApiError) return t(`error.${error.code}`, { detail: error.message });
  return error?.message ?? String(error);
}

/** Runs `action`, saying what went wrong if it throws; answers its value or undefined. */
export async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    say(explain(error), "error");
    return undefined;
  }
}
