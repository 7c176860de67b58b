// DOM helpers. Text always goes in as text nodes (never parsed as HTML): whatever a
// memory holds is inert here.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "on") {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "value" || name === "checked" || name === "selected") {
      el[name] = value;
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

let ids = 0;
// A labelled control: <label for=…> text, then the control.
export function field(label, control, hint) {
  if (!control.id) control.id = `f${++ids}`;
  const parts = [h("label", { for: control.id }, label), control];
  if (hint) {
    const hintId = `${control.id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("span", { class: "hint", id: hintId }, hint));
  }
  return h("div", { class: "field" }, parts);
}

export function select(options, value, attrs = {}) {
  return h(
    "select",
    attrs,
    options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)),
  );
}

export function checkbox(label, checked, attrs = {}) {
  const box = h("input", { type: "checkbox", checked, ...attrs });
  if (!box.id) box.id = `f${++ids}`;
  return h("span", { class: "check" }, box, h("label", { for: box.id }, label));
}

export function button(text, onClick, attrs = {}) {
  return h("button", { type: "button", ...attrs, on: { click: onClick } }, text);
}

// A writer as provenance shows it: the handle and its kind ("alice (person)",
// "ci-bot (service)"), or the fallback for one no longer a member.
export function writer(handle, kind, fallback = "—") {
  if (!handle) return fallback;
  return kind ? `${handle} (${kind})` : handle;
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
