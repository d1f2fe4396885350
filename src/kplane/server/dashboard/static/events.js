// Events, newest first, live (core v1 Events, every namespace or one).

import { badge, fill, h, routeParams, routeTo } from "./dom.js";
import { LiveList, age } from "./live.js";
import { summarizer } from "./summary.js";
import { LiveTable, Pager } from "./table.js";

export function mount(view, { api }) {
  const { ns = "" } = routeParams();
  const error = h("p", { class: "error", role: "alert" });
  const rows = h("div", { id: "events" });
  const nsInput = h("input", { type: "text", value: ns, placeholder: "all namespaces", "aria-label": "Namespace" });
  nsInput.addEventListener("change", () => (location.hash = routeTo("events", { ns: nsInput.value.trim() })));
  fill(view, h("div", { class: "toolbar" }, "Namespace ", nsInput), error, rows);
  const path = ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/events` : "/api/v1/events";
  const table = new LiveTable([
    ["Last seen", (e) => age(e.last)],
    ["Type", (e) => e.status, badge],
    ["Reason", (e) => e.reason],
    ["Object", (e) => e.object],
    ["Namespace", (e) => e.namespace],
    ["Count", (e) => e.count],
    ["Message", (e) => e.message],
  ]);
  const pager = new Pager(() => draw(list));
  fill(rows, table.el, pager.el);
  const draw = (l) => {
    const events = [...l.items.values()].sort((a, b) => String(b.last).localeCompare(String(a.last)));
    table.update(pager.slice(events));
  };
  const list = new LiveList(api, path, {
    summarize: summarizer("Event"),
    onChange: draw,
    onError: (err) => (error.textContent = err.message),
  }).start();
  return () => list.stop();
}
