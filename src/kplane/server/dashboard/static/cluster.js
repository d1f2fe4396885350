// Nodes and pods with their phases, live: a phase tally, the nodes with their pod counts, and
// the pods (a page at a time), of every namespace or of ?ns=.

import { badge, fill, h, paged, routeParams, routeTo, table } from "./dom.js";
import { LiveList, age } from "./live.js";
import { byName, summarizer } from "./summary.js";

const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown", "Terminating"];

export function mount(view, { api }) {
  const { ns = "" } = routeParams();
  const error = h("p", { class: "error", role: "alert" });
  const tally = h("div", { class: "tally", id: "phases" });
  const nodesEl = h("div", { id: "nodes" });
  const podsEl = h("div", { id: "cluster-pods" });
  fill(view, error, h("h2", {}, "Nodes"), nodesEl, h("h2", {}, ns ? `Pods in ${ns}` : "Pods"), tally, podsEl);
  const onError = (err) => (error.textContent = err.message);

  const pageState = { page: 0 };
  const draw = () => {
    const pods = [...podList.items.values()];
    const perNode = new Map();
    const perPhase = new Map(PHASES.map((p) => [p, 0]));
    let ready = 0;
    for (const p of pods) {
      perNode.set(p.node, (perNode.get(p.node) || 0) + 1);
      perPhase.set(p.status, (perPhase.get(p.status) || 0) + 1);
      if (p.isReady) ready++;
    }
    fill(
      tally,
      [...perPhase].map(([phase, n]) => h("span", { class: "tally-item", "data-phase": phase }, badge(phase), " ", String(n))),
      h("span", { class: "tally-item", id: "ready-count", "data-ready": ready, "data-total": pods.length }, badge("Ready"), " ", String(ready), ` of ${pods.length}`),
    );
    const nodes = [...nodeList.items.values()].sort(byName);
    fill(
      nodesEl,
      table(
        [
          ["Name", (n) => h("a", { href: routeTo("object", { r: "/v1/nodes", name: n.name }) }, n.name)],
          ["Status", (n) => badge(n.status)],
          ["Pods", (n) => String(perNode.get(n.name) || 0)],
          ["Age", (n) => age(n.created)],
        ],
        nodes,
      ),
    );
    pods.sort(byName);
    const { shown, pager } = paged(pods, pageState, draw);
    fill(
      podsEl,
      table(
        [
          ["Name", (p) => h("a", { href: routeTo("object", { r: "/v1/pods", ns: p.namespace, name: p.name }) }, p.name)],
          ["Namespace", (p) => p.namespace],
          ["Phase", (p) => badge(p.status)],
          ["Ready", (p) => p.ready],
          ["Restarts", (p) => String(p.restarts)],
          ["Node", (p) => p.node],
          ["Age", (p) => age(p.created)],
        ],
        shown,
      ),
      pager,
    );
  };
  const nodeList = new LiveList(api, "/api/v1/nodes", { summarize: summarizer("Node"), onChange: draw, onError }).start();
  const podsPath = ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/pods` : "/api/v1/pods";
  const podList = new LiveList(api, podsPath, { summarize: summarizer("Pod"), onChange: draw, onError, interval: 500 }).start();
  return () => {
    nodeList.stop();
    podList.stop();
  };
}
