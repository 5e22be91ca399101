// Small helpers for building the page: no framework, no innerHTML (every text goes
// in as text, so nothing a user typed can become markup).

/**
 * An element: `h("a", { href: "#/post/1", class: "x", onclick: f }, "text", child)`.
 * Props that start with `on` are listeners; `dataset`/`aria` are objects; `true`
 * sets a boolean attribute and `false`/`null`/`undefined` leaves it out.
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name === "value" || name === "checked" || name === "selected") element[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces what `element` holds. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

let fields = 0;

/**
 * A labelled form field: the label names the input (and only the label: a hint is
 * its description, read after it), so that "Near" is the field's whole name.
 */
export function field(label, input, hint) {
  input.id ||= `field-${++fields}`;
  const note = hint ? h("small", { class: "hint", id: `${input.id}-hint` }, hint) : null;
  if (note) input.setAttribute("aria-describedby", note.id);
  return h("div", { class: "field" }, h("label", { for: input.id }, label), input, note);
}

/** The title as nodes, the stretches `ranges` gives (UTF-16 units, as JavaScript counts them) in <mark>. */
export function highlighted(title, ranges) {
  const nodes = [];
  let position = 0;
  for (const { start, length } of ranges ?? []) {
    if (start < position || start + length > title.length) continue;
    nodes.push(title.slice(position, start), h("mark", {}, title.slice(start, start + length)));
    position = start + length;
  }
  nodes.push(title.slice(position));
  return nodes;
}
