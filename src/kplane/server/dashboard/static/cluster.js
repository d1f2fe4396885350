// Nodes and pods with their phases, live: a phase tally, the nodes with their pod counts, and
// the pods (a page at a time), of every namespace or of ?ns=. Tables and tally are changed in
// place (table.js), so events flowing in do not rebuild the page.

import { badge, fill, h, routeParams, routeTo } from "./dom.js";
import { LiveList, age } from "./live.js";
import { byName, summarizer } from "./summary.js";
import { LiveTable, Pager } from "./table.js";

const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown", "Terminating"];

export function mount(view, { api }) {
  const { ns = "" } = routeParams();
  const error = h("p", { class: "error", role: "alert" });
  const counts = new Map(PHASES.map((p) => [p, document.createTextNode("0")]));
  const readyText = document.createTextNode("0 of 0");
  const readyCount = h("span", { class: "tally-item", id: "ready-count", "data-ready": 0, "data-total": 0 }, badge("Ready"), " ", readyText);
  const tally = h(
    "div",
    { class: "tally", id: "phases" },
    [...counts].map(([phase, text]) => h("span", { class: "tally-item", "data-phase": phase }, badge(phase), " ", text)),
    readyCount,
  );
  const perNode = new Map();
  const nodes = new LiveTable(
    [
      ["Name", (n) => n.name, (name) => h("a", { href: routeTo("object", { r: "/v1/nodes", name }) }, name)],
      ["Status", (n) => n.status, badge],
      ["Pods", (n) => perNode.get(n.name) || 0],
      ["Age", (n) => age(n.created)],
    ],
    { id: "nodes-table" },
  );
  const pods = new LiveTable([
    ["Name", (p) => p.name, (name, p) => h("a", { href: routeTo("object", { r: "/v1/pods", ns: p.namespace, name }) }, name)],
    ["Namespace", (p) => p.namespace],
    ["Phase", (p) => p.status, badge],
    ["Ready", (p) => p.ready],
    ["Restarts", (p) => p.restarts],
    ["Node", (p) => p.node],
    ["Age", (p) => age(p.created)],
  ]);
  const pager = new Pager(() => draw());
  fill(
    view,
    error,
    h("h2", {}, "Nodes"),
    h("div", { id: "nodes" }, nodes.el),
    h("h2", {}, ns ? `Pods in ${ns}` : "Pods"),
    tally,
    h("div", { id: "cluster-pods" }, pods.el, pager.el),
  );
  const onError = (err) => (error.textContent = err.message);

  const draw = () => {
    const all = [...podList.items.values()];
    const perPhase = new Map(PHASES.map((p) => [p, 0]));
    let ready = 0;
    perNode.clear();
    for (const p of all) {
      perNode.set(p.node, (perNode.get(p.node) || 0) + 1);
      perPhase.set(p.status, (perPhase.get(p.status) || 0) + 1);
      if (p.isReady) ready++;
    }
    for (const [phase, text] of counts) {
      const n = String(perPhase.get(phase));
      if (text.data !== n) text.data = n;
    }
    readyText.data = `${ready} of ${all.length}`;
    readyCount.dataset.ready = ready;
    readyCount.dataset.total = all.length;
    nodes.update([...nodeList.items.values()].sort(byName));
    all.sort(byName);
    pods.update(pager.slice(all));
  };
  const nodeList = new LiveList(api, "/api/v1/nodes", { summarize: summarizer("Node"), onChange: draw, onError }).start();
  const podsPath = ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/pods` : "/api/v1/pods";
  const podList = new LiveList(api, podsPath, { summarize: summarizer("Pod"), onChange: draw, onError, interval: 500 }).start();
  return () => {
    nodeList.stop();
    podList.stop();
  };
}
