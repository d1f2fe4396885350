// One object: its YAML (live), its revisions with a diff between any two, and for a workload the
// pods its selector picks, live.

import { resourcePath } from "./api.js";
import * as discovery from "./discovery.js";
import { badge, fill, h, routeParams, routeTo } from "./dom.js";
import * as history from "./history.js";
import { LiveList, age } from "./live.js";
import { byName, summarizer } from "./summary.js";
import { LiveTable, PAGE_SIZE, Pager } from "./table.js";
import { toYAML } from "./yaml.js";

export function mount(view, { api }) {
  const { r: key, ns = "", name } = routeParams();
  const lists = [];
  const error = h("p", { class: "error", role: "alert" });
  const yaml = h("pre", { class: "yaml", id: "yaml" });
  const showManaged = h("input", { type: "checkbox", id: "managed" });
  const revisions = h("div", { id: "revisions" });
  const pods = h("div", { id: "pods" });
  const events = h("div", { id: "object-events" });
  const title = h("h2", {}, name || "");
  fill(
    view,
    title,
    error,
    h("div", { class: "columns" },
      h("section", {}, h("h3", {}, "YAML ", h("label", { class: "small" }, showManaged, " managedFields")), yaml),
      h("section", {}, h("h3", {}, "History"), revisions, h("h3", {}, "Pods"), pods, h("h3", {}, "Events"), events),
    ),
  );
  let current = null;
  const drawYAML = () => {
    if (!current) return;
    const shown = structuredClone(current);
    if (!showManaged.checked && shown.metadata) delete shown.metadata.managedFields;
    yaml.textContent = toYAML(shown);
  };
  showManaged.addEventListener("change", drawYAML);

  const revs = new history.Revisions(api, revisions);
  lists.push(revs);

  discovery
    .resources(api)
    .then((all) => {
      const res = all.find((x) => x.key === key);
      if (!res) throw new Error(`the server does not serve ${key}`);
      title.textContent = `${res.kind} ${ns ? ns + "/" : ""}${name}`;
      revs.start(res, ns, name);
      watchEvents(res);
      const self = new LiveList(api, resourcePath(res, ns), {
        query: { fieldSelector: "metadata.name=" + name },
        summarize: (obj) => obj,
        onChange: (l) => {
          const obj = [...l.items.values()][0];
          if (!obj) {
            yaml.textContent = l.synced ? "(deleted)" : "";
            return;
          }
          if (current && current.metadata.resourceVersion === obj.metadata.resourceVersion) return;
          current = { apiVersion: res.group ? `${res.group}/${res.version}` : res.version, kind: res.kind, ...obj };
          drawYAML();
          revs.seen(current);
          watchPods(current);
        },
        onError: (err) => (error.textContent = err.message),
        interval: 100,
      }).start();
      lists.push(self);
    })
    .catch((err) => (error.textContent = err.message));

  function watchEvents(res) {
    const base = ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/events` : "/api/v1/events";
    const table = new LiveTable([
      ["Last seen", (e) => age(e.last)],
      ["Type", (e) => e.status, badge],
      ["Reason", (e) => e.reason],
      ["Message", (e) => e.message],
    ]);
    const none = h("p", { class: "muted" }, "No events.");
    const list = new LiveList(api, base, {
      query: { fieldSelector: `involvedObject.kind=${res.kind},involvedObject.name=${name}` },
      summarize: summarizer("Event"),
      onChange: (l) => {
        const rows = [...l.items.values()].sort((a, b) => String(b.last).localeCompare(String(a.last)));
        const shown = rows.length === 0 ? none : table.el;
        if (events.firstChild !== shown) fill(events, shown);
        table.update(rows.slice(0, PAGE_SIZE));
      },
    }).start();
    lists.push(list);
  }

  let podSelector = null;
  let podList = null;
  function watchPods(obj) {
    const labels = ((obj.spec || {}).selector || {}).matchLabels;
    if (!labels || !obj.metadata.namespace) {
      if (!podSelector) fill(pods, h("p", { class: "muted" }, "No pod selector."));
      return;
    }
    const selector = Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    if (selector === podSelector) return;
    podSelector = selector;
    if (podList) podList.stop();
    const table = new LiveTable(
      [
        ["Name", (p) => p.name, (podName, p) => h("a", { href: routeTo("object", { r: "/v1/pods", ns: p.namespace, name: podName }) }, podName)],
        ["Phase", (p) => p.status, badge],
        ["Ready", (p) => (p.isReady ? "Ready" : "NotReady"), badge],
        ["Node", (p) => p.node],
        ["Age", (p) => age(p.created)],
      ],
      { rowAttrs: (p) => ({ "data-name": p.name, "data-ready": String(p.isReady), "data-phase": p.status }) },
    );
    const pager = new Pager(() => draw(list));
    fill(pods, table.el, pager.el);
    const draw = (l) => table.update(pager.slice([...l.items.values()].sort(byName)));
    const list = (podList = new LiveList(api, `/api/v1/namespaces/${encodeURIComponent(obj.metadata.namespace)}/pods`, {
      query: { labelSelector: selector },
      summarize: summarizer("Pod"),
      onChange: draw,
    }).start());
    lists.push(list);
  }

  return () => lists.forEach((l) => l.stop());
}
