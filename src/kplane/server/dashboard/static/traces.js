// Reconcile traces (kplane serve's controllers, /debug/kplane/traces): what triggered each
// reconcile and what it wrote, newest first, filtered by the route's query (controller, namespace,
// name, or resourceVersion + writeName: the reconcile that wrote a revision), polled every PERIOD ms.

import { badge, fill, h, routeParams, routeTo, table } from "./dom.js";
import { toYAML } from "./yaml.js";

export const PERIOD = 5000;
export const LIMIT = 200;
const FILTERS = ["controller", "namespace", "name", "resourceVersion", "writeName"];

function when(t) {
  // seconds since the epoch (the manager's clock); anything else is shown as it is
  return t > 1e9 ? new Date(t * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : String(t);
}

function trigger(t) {
  if (t.type !== "Event") return t.after ? `${t.type} ${t.after.toFixed(1)}s` : t.type;
  const obj = `${t.kind} ${t.namespace ? t.namespace + "/" : ""}${t.name}`;
  return `${t.event} ${obj} @${t.resourceVersion}${t.via && t.via !== "object" ? ` (via ${t.via})` : ""}`;
}

function write(w) {
  const sub = w.subresource ? "/" + w.subresource : "";
  const outcome = w.conflict ? " CONFLICT" : w.error ? ` failed: ${w.error}` : ` → ${w.resourceVersion}`;
  return `${w.verb} ${w.resource}${sub} ${w.namespace ? w.namespace + "/" : ""}${w.name}${outcome}`;
}

export function mount(view, { api }) {
  const params = routeParams();
  const error = h("p", { class: "error", role: "alert" });
  const body = h("div", { id: "traces" });
  const detail = h("pre", { class: "yaml", id: "trace-detail", hidden: true });
  const inputs = FILTERS.map((f) => h("input", { type: "text", name: f, value: params[f] || "", placeholder: f, "aria-label": f, size: 14 }));
  const form = h("form", { class: "toolbar" }, inputs, h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = routeTo("traces", Object.fromEntries(inputs.filter((i) => i.value.trim()).map((i) => [i.name, i.value.trim()])));
  });
  fill(view, form, error, body, detail);
  const q = new URLSearchParams({ limit: String(LIMIT) });
  for (const f of FILTERS) if (params[f]) q.set(f, params[f]);
  let timer = 0;
  let stopped = false;
  let shown = null;

  async function poll() {
    try {
      const list = await api.get("/debug/kplane/traces?" + q);
      error.textContent = "";
      draw((list.items || []).slice().reverse());
    } catch (err) {
      error.textContent = err.status === 404 ? "This server does not serve reconcile traces (kplane serve runs its controllers unless --no-controllers)." : err.message;
    }
    if (!stopped) timer = setTimeout(poll, PERIOD);
  }

  function draw(items) {
    fill(
      body,
      h("p", { class: "muted", id: "trace-count", "data-count": items.length }, `${items.length} reconcile${items.length === 1 ? "" : "s"} (newest first)`),
      table(
        [
          ["Start", (t) => when(t.start)],
          ["Controller", (t) => t.controller],
          ["Request", (t) => `${t.namespace ? t.namespace + "/" : ""}${t.name}`],
          ["Result", (t) => badge(t.result === "Success" ? "Succeeded" : t.result === "Error" || t.result === "TerminalError" ? "Failed" : t.result)],
          ["ms", (t) => (t.durationSeconds * 1000).toFixed(1)],
          ["Triggered by", (t) => h("ul", { class: "plain" }, t.triggers.map((x) => h("li", {}, trigger(x))))],
          ["Wrote", (t) => h("ul", { class: "plain" }, t.writes.map((x) => h("li", {}, write(x))))],
          ["", (t) => h("button", { type: "button", class: "link", onclick: () => show(t) }, "details")],
        ],
        items,
        (t) => ({ "data-trace": t.traceID, "data-controller": t.controller }),
      ),
    );
    if (shown) {
      const again = items.find((t) => t.traceID === shown);
      if (again) show(again);
    }
  }

  function show(t) {
    shown = t.traceID;
    detail.hidden = false;
    detail.textContent = toYAML(t);
  }

  poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** A link to the traces of the reconcile that wrote revision `rv` of object `name`. */
export function writerLink(rv, name) {
  return h("a", { href: routeTo("traces", { resourceVersion: rv, writeName: name }), class: "small" }, "trace");
}
