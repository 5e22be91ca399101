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

/**
 * An API error, or any other, as a sentence in the console's language. A problem with
 * a form's field is said in the words of that form (`problem.radius`: the radius in
 * km, as the field asks for it), never in the API's (metres, `lat`/`lon`); other
 * problems by their code. The service's English detail is only shown where the page
 * is in English and no better words are known.
 */
export function explain(error) {
  if (!(error instanceof ApiError)) return error?.message ?? String(error);
  const field = error.field?.replace(/^posts\[\d+\]\./, "");
  const worded = field ? t(`problem.${field}`, {}, "") : "";
  if (worded) return worded;
  const detail = document.documentElement.lang.startsWith("en") ? error.message : "";
  return t(`error.${error.code}`, { detail }).replace(/[:：]\s*$/, ".");
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
