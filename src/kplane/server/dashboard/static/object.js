// One object: its YAML (live), its revisions with a diff between any two, and for a workload the
// pods its selector picks, live.

import { resourcePath } from "./api.js";
import * as discovery from "./discovery.js";
import { badge, fill, h, routeParams, routeTo, table } from "./dom.js";
import * as history from "./history.js";
import { LiveList, age } from "./live.js";
import { byName, summarizer } from "./summary.js";
import { toYAML } from "./yaml.js";

export function mount(view, { api }) {
  const { r: key, ns = "", name } = routeParams();
  const lists = [];
  const error = h("p", { class: "error", role: "alert" });
  const yaml = h("pre", { class: "yaml", id: "yaml" });
  const showManaged = h("input", { type: "checkbox", id: "managed" });
  const revisions = h("div", { id: "revisions" });
  const pods = h("div", { id: "pods" });
  const title = h("h2", {}, name || "");
  fill(
    view,
    title,
    error,
    h("div", { class: "columns" },
      h("section", {}, h("h3", {}, "YAML ", h("label", { class: "small" }, showManaged, " managedFields")), yaml),
      h("section", {}, h("h3", {}, "History"), revisions, h("h3", {}, "Pods"), pods),
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
    const list = (podList = new LiveList(api, `/api/v1/namespaces/${encodeURIComponent(obj.metadata.namespace)}/pods`, {
      query: { labelSelector: selector },
      summarize: summarizer("Pod"),
      onChange: (l) => {
        const rows = [...l.items.values()].sort(byName);
        fill(
          pods,
          table(
            [
              ["Name", (p) => h("a", { href: routeTo("object", { r: "/v1/pods", ns: p.namespace, name: p.name }) }, p.name)],
              ["Phase", (p) => badge(p.status)],
              ["Ready", (p) => badge(p.isReady ? "Ready" : "NotReady")],
              ["Node", (p) => p.node],
              ["Age", (p) => age(p.created)],
            ],
            rows,
            (p) => ({ "data-name": p.name, "data-ready": String(p.isReady), "data-phase": p.status }),
          ),
        );
      },
    }).start());
    lists.push(list);
  }

  return () => lists.forEach((l) => l.stop());
}
