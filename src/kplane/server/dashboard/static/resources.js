// Resources by namespace and kind, live: one LiveList for the kind shown, one for namespaces.

import { resourcePath } from "./api.js";
import * as discovery from "./discovery.js";
import { badge, fill, h, routeParams, routeTo } from "./dom.js";
import { LiveList, age } from "./live.js";
import { byName, summarizer } from "./summary.js";
import { LiveTable, Pager } from "./table.js";

export function mount(view, { api }) {
  const params = routeParams();
  const lists = [];
  const nsSelect = h("select", { id: "namespace", "aria-label": "Namespace" }, h("option", { value: "" }, "All namespaces"));
  const kindSelect = h("select", { id: "kind", "aria-label": "Kind" });
  const count = h("span", { class: "muted", id: "count" });
  const body = h("div", { id: "rows" });
  const error = h("p", { class: "error", role: "alert", id: "list-error" });
  const nsError = h("p", { class: "error", role: "alert" });
  fill(view, h("div", { class: "toolbar" }, nsSelect, kindSelect, count), nsError, error, body);

  const go = () => (location.hash = routeTo("resources", { ns: nsSelect.value, r: kindSelect.value }));
  nsSelect.addEventListener("change", go);
  kindSelect.addEventListener("change", go);

  const namespaces = new LiveList(api, "/api/v1/namespaces", {
    summarize: summarizer("Namespace"),
    onChange: (l) => {
      const names = [...l.items.values()].map((n) => n.name).sort();
      const chosen = params.ns || "";
      fill(nsSelect, h("option", { value: "" }, "All namespaces"), names.map((n) => h("option", { value: n, selected: n === chosen }, n)));
    },
    onError: (err) => (nsError.textContent = "namespaces: " + err.message),
  }).start();
  lists.push(namespaces);

  discovery
    .resources(api)
    .then((all) => {
      const key = params.r || "apps/v1/deployments";
      const chosen = all.find((r) => r.key === key) || all.find((r) => r.resource === "pods");
      fill(kindSelect, all.map((r) => h("option", { value: r.key, selected: r === chosen }, r.group ? `${r.kind} (${r.group})` : r.kind)));
      if (!chosen) return;
      const ns = chosen.namespaced ? params.ns || "" : "";
      const list = new LiveList(api, resourcePath(chosen, ns), {
        summarize: summarizer(chosen.kind),
        onChange: (l) => render(l, chosen),
        onError: (err) => (error.textContent = err.message),
      }).start();
      lists.push(list);
    })
    .catch((err) => (error.textContent = err.message));

  let table = null; // made on the first draw, once the kind's columns are known
  let withReady = false;
  const pager = new Pager(() => render());
  let shownList = null;
  let shownRes = null;
  function render(list = shownList, res = shownRes) {
    shownList = list;
    shownRes = res;
    error.textContent = "";
    const rows = [...list.items.values()].sort(byName);
    count.textContent = `${rows.length} ${res.resource}${list.truncated ? " (truncated)" : ""}`;
    const ready = rows.some((r) => r.ready);
    if (table === null || ready !== withReady) {
      withReady = ready;
      table = new LiveTable(
        [
          ["Name", (r) => r.name, (name, r) => h("a", { href: routeTo("object", { r: res.key, ns: r.namespace, name }) }, name)],
          ...(res.namespaced ? [["Namespace", (r) => r.namespace]] : []),
          ["Status", (r) => r.status, badge],
          ...(ready ? [["Ready", (r) => r.ready || ""]] : []),
          ["Age", (r) => age(r.created)],
          ["Version", (r) => r.rv],
        ],
        { rowAttrs: (r) => ({ "data-name": r.name, "data-status": r.status }) },
      );
      fill(body, table.el, pager.el);
    }
    table.update(pager.slice(rows));
  }

  return () => lists.forEach((l) => l.stop());
}
