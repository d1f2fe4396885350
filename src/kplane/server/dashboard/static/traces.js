// Reconcile traces: what triggered each reconcile and what it wrote.

import { fill, h } from "./dom.js";

export function mount(view) {
  fill(view, h("p", { class: "muted", id: "traces-absent" }, "This server does not serve reconcile traces."));
  return null;
}
