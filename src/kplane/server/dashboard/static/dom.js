// DOM helpers. Text always goes in as text nodes (never markup), so nothing the API returns can
// inject script: with the page's Content-Security-Policy this is the dashboard's XSS defence.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG = "http://www.w3.org/2000/svg";

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** A table of rows: columns are [title, (row) => cell]; rowAttrs(row) gives each <tr>'s attributes. */
export function table(columns, rows, rowAttrs) {
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, columns.map(([title]) => h("th", {}, title)))),
    h(
      "tbody",
      {},
      rows.map((row) => h("tr", rowAttrs ? rowAttrs(row) : {}, columns.map(([, cell]) => h("td", {}, cell(row))))),
    ),
  );
}

/** Replace el's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** The hash route's query as an object. */
export function routeParams() {
  const hash = location.hash || "#/";
  const i = hash.indexOf("?");
  return Object.fromEntries(new URLSearchParams(i < 0 ? "" : hash.slice(i + 1)));
}

export function routeTo(view, params) {
  const q = new URLSearchParams(params || {}).toString();
  return "#/" + view + (q ? "?" + q : "");
}

/** A status word (Running, Ready, Pending...) as a coloured badge. */
export function badge(text) {
  const cls = "badge badge-" + String(text || "unknown").toLowerCase().replace(/[^a-z]/g, "");
  return h("span", { class: cls }, text || "Unknown");
}
