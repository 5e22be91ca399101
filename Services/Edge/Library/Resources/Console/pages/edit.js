// Posting and editing: the fields of a post, its place by a click on the map, its
// opening hours, and photos (added after the post is saved, one request each;
// removed one by one). Editing sends only what changed, with If-Match, so that a
// change made meanwhile elsewhere is not overwritten.
import { h, field, fill } from "../dom.js";
import { t } from "../i18n.js";
import { api, current } from "../session.js";
import { createMap, pins } from "../map.js";
import { say, explain } from "../notice.js";

const kinds = ["offer", "restaurant", "sight", "tip"];
const imageTypes = ["image/jpeg", "image/png", "image/webp"];

export async function render(main, [id]) {
  const session = current();
  if (!session || session.user.anonymous) {
    main.append(h("h2", {}, t("page.edit")), h("p", {}, t("edit.signInFirst")));
    return;
  }
  const existing = id ? (await api(`/v1/posts/${encodeURIComponent(id)}`)).post : null;
  const value = (name) => existing?.[name] ?? "";
  const input = {
    kind: h("select", { name: "kind", required: true }, kinds.map((kind) => h("option", { value: kind, selected: existing?.kind === kind }, t(`kind.${kind}`)))),
    // No maxlength: a browser cuts a longer paste without a word; the count below says it.
    title: h("input", { name: "title", required: true, value: value("title") }),
    text: h("textarea", { name: "text", rows: 4 }),
    category: h("input", { name: "category", value: value("category") }),
    tags: h("input", { name: "tags", value: existing?.tags.join(", ") ?? "" }),
    price: h("input", { name: "price", type: "number", min: "0", step: "0.01", value: existing?.price?.amount ?? "" }),
    currency: h("input", { name: "currency", maxlength: 3, size: 4, value: existing?.price?.currency ?? "EUR" }),
    hours: h("input", { name: "hours", value: value("hours"), placeholder: "Mo-Fr 09:00-18:00; Sa 10:00-16:00" }),
    lat: h("input", { name: "lat", type: "number", step: "any", required: true, value: existing?.lat ?? 52.0907 }),
    lon: h("input", { name: "lon", type: "number", step: "any", required: true, value: existing?.lon ?? 5.1214 }),
    notifyRadius: h("input", { name: "notifyRadius", type: "number", min: "10", step: "1", value: existing?.notifyRadius ?? "" }),
    photos: h("input", { name: "photos", type: "file", accept: imageTypes.join(","), multiple: true }),
  };
  input.text.value = value("text");
  const photos = h("div", { class: "photos" });
  // The title's length as it is typed or pasted: past 200 the form will not send it, and says why.
  input.title.addEventListener("input", () => {
    const count = [...input.title.value].length;
    const hint = document.getElementById(`${input.title.id}-hint`);
    if (hint) hint.textContent = t("edit.titleCount", { count });
    input.title.setCustomValidity(count > 200 ? t("problem.title") : "");
  });
  const mapElement = h("div", { class: "map small", role: "region", "aria-label": t("edit.mapHint") });
  const form = h("form", { class: "post-form", "aria-label": t(existing ? "edit.editing" : "edit.new") },
    field(t("edit.kind"), input.kind), field(t("edit.title"), input.title, t("edit.titleCount", { count: input.title.value.length })),
    field(t("edit.text"), input.text),
    field(t("edit.category"), input.category), field(t("edit.tags"), input.tags, t("edit.tagsHint")),
    h("div", { class: "row" }, field(t("edit.price"), input.price), field(t("edit.currency"), input.currency)),
    field(t("edit.hours"), input.hours, t("edit.hoursHint")),
    h("div", { class: "row" }, field(t("edit.lat"), input.lat), field(t("edit.lon"), input.lon)),
    mapElement, h("p", { class: "hint" }, t("edit.mapHint")),
    field(t("edit.notifyRadius"), input.notifyRadius, t("edit.notifyRadiusHint")),
    existing ? h("section", {}, h("h3", {}, t("edit.photos")), photos) : null,
    field(t("edit.addPhotos"), input.photos),
    h("div", { class: "actions" }, h("button", { type: "submit" }, t(existing ? "edit.saveChanges" : "edit.publish")),
      existing ? h("button", { type: "button", class: "danger", onclick: remove }, t("edit.delete")) : null));
  main.append(h("h2", {}, t(existing ? "edit.editing" : "edit.new")), form);

  let version = existing?.version;
  function showPhotos(images) {
    fill(photos, images.length ? images.map((image, index) => h("figure", {},
      h("img", { src: `/v1/images/${image.id}`, alt: t("post.photo", { number: index + 1, title: input.title.value }), width: 160 }),
      h("button", { type: "button", class: "secondary", onclick: () => removePhoto(image.id) }, t("edit.removePhoto")))) : t("edit.noPhotos"));
  }
  if (existing) showPhotos(existing.images);

  const map = await createMap(mapElement, [Number(input.lat.value), Number(input.lon.value)], 15);
  const layer = pins(map);
  const place = () => {
    layer.clear();
    layer.add(Number(input.lat.value), Number(input.lon.value), input.title.value || t("edit.here"));
  };
  place();
  map.on("click", (event) => {
    input.lat.value = event.latlng.lat.toFixed(5);
    input.lon.value = event.latlng.lng.toFixed(5);
    place();
  });
  input.lat.addEventListener("change", place);
  input.lon.addEventListener("change", place);

  /** The form as a post's fields; for an edit, null clears what was emptied. */
  function fields() {
    const text = (element) => element.value.trim();
    const orNull = (value) => (value === "" ? (existing ? null : undefined) : value);
    return {
      kind: input.kind.value,
      title: text(input.title),
      text: orNull(text(input.text)),
      category: orNull(text(input.category)),
      tags: text(input.tags) ? text(input.tags).split(",").map((tag) => tag.trim()).filter(Boolean) : existing ? [] : undefined,
      price: input.price.value === "" ? orNull("") : { amount: Number(input.price.value), currency: text(input.currency).toUpperCase() },
      hours: orNull(text(input.hours)),
      lat: Number(input.lat.value),
      lon: Number(input.lon.value),
      notifyRadius: input.notifyRadius.value === "" ? orNull("") : Number(input.notifyRadius.value),
    };
  }

  async function upload(postId) {
    for (const file of input.photos.files) {
      if (!imageTypes.includes(file.type)) throw new Error(t("edit.photoType", { name: file.name }));
      await api(`/v1/posts/${encodeURIComponent(postId)}/images`, { method: "POST", body: file, headers: { "Content-Type": file.type } });
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      let post;
      if (existing) {
        const changes = fields();
        for (const [name, now] of Object.entries(changes)) {
          if (JSON.stringify(now) === JSON.stringify(existing[name] ?? (Array.isArray(now) ? [] : null))) delete changes[name];
        }
        ({ post } = await api(`/v1/posts/${encodeURIComponent(existing.id)}`, { method: "PATCH", json: changes, headers: { "If-Match": `"${version}"` } }));
      } else {
        ({ post } = await api("/v1/posts", { method: "POST", json: fields(), headers: { "Idempotency-Key": crypto.randomUUID() } }));
      }
      await upload(post.id);
      say(t(existing ? "edit.changed" : "edit.published", { title: post.title }), "ok");
      location.hash = `#/post/${post.id}`;
    } catch (error) {
      say(explain(error), "error");
      if (error.field && input[error.field]) input[error.field].focus();
    } finally {
      button.disabled = false;
    }
  });

  async function removePhoto(imageId) {
    try {
      await api(`/v1/images/${encodeURIComponent(imageId)}`, { method: "DELETE" });
      const { post } = await api(`/v1/posts/${encodeURIComponent(existing.id)}`);
      version = post.version;
      showPhotos(post.images);
    } catch (error) {
      say(explain(error), "error");
    }
  }

  async function remove() {
    if (!confirm(t("edit.confirmDelete", { title: existing.title }))) return;
    try {
      await api(`/v1/posts/${encodeURIComponent(existing.id)}`, { method: "DELETE" });
      say(t("edit.deleted", { title: existing.title }), "ok");
      location.hash = "#/search";
    } catch (error) {
      say(explain(error), "error");
    }
  }
}
