// An object's revisions and the diff between two of them. When the server keeps history
// (history.kplane.dev/v1alpha1 revisions), its retained revisions are listed, refreshed whenever
// the object changes; otherwise the states this tab has seen through its watch (at most MAX_SEEN).

import { hasGroupVersion } from "./discovery.js";
import { fill, h } from "./dom.js";
import { diffLines, hunks } from "./diff.js";
import { writerLink } from "./traces.js";
import { toYAML } from "./yaml.js";

export const MAX_SEEN = 50;
export const MAX_SERVER = 200; // newest revisions asked of the server
const GROUP = "history.kplane.dev";
const VERSION = "v1alpha1";

function strip(obj) {
  const copy = structuredClone(obj);
  if (copy && copy.metadata) delete copy.metadata.managedFields;
  return copy;
}

function lastWriter(obj) {
  const fields = (obj.metadata || {}).managedFields || [];
  const last = fields.reduce((a, b) => ((a && a.time) > (b && b.time) ? a : b), null);
  return last ? `${last.manager} (${last.operation})` : "";
}

export class Revisions {
  constructor(api, el) {
    this.api = api;
    this.el = el;
    this.list = []; // [{rv, label, yaml}] oldest first
    this.from = null;
    this.to = null;
    this.follow = true; // until the user picks, the diff is of the newest two
    this.server = null; // the revisions URL when the server keeps history
    this.fetching = null;
    this.again = false;
    this.stopped = false;
    this.name = "";
  }

  /** Decide where revisions come from; res is the discovery entry of the object's resource. */
  async start(res, namespace, name) {
    this.name = name;
    if (!(await hasGroupVersion(this.api, GROUP, VERSION).catch(() => false)) || this.stopped) return;
    const target = res.group ? `${res.resource}.${res.group}` : res.resource;
    const base = `/apis/${GROUP}/${VERSION}` + (res.namespaced ? `/namespaces/${encodeURIComponent(namespace)}` : "");
    const q = new URLSearchParams({ fieldSelector: `target.resource=${target},target.name=${name}`, limit: String(MAX_SERVER) });
    this.server = `${base}/revisions?${q}`;
    this.list = [];
    this.refresh();
  }

  stop() {
    this.stopped = true;
    this.list = [];
  }

  /** A state seen live: with server history, a cue to refresh; else appended if new. */
  seen(obj) {
    if (this.server) return this.refresh();
    const rv = obj.metadata.resourceVersion;
    if (this.list.some((r) => r.rv === rv)) return;
    this.list.push({ rv, label: `${rv} ${lastWriter(obj)}`, yaml: toYAML(strip(obj)) });
    if (this.list.length > MAX_SEEN) this.list.shift();
    this.render();
  }

  refresh() {
    if (this.fetching) {
      this.again = true;
      return;
    }
    this.fetching = this.api
      .get(this.server)
      .then((doc) => {
        if (this.stopped) return;
        this.list = (doc.items || []).map((r) => ({
          rv: String(r.revision),
          label: `${r.revision} ${r.operation} by ${r.user || "?"}${(r.fieldManagers || []).length ? " (" + r.fieldManagers.join(", ") + ")" : ""}`,
          time: r.timestamp,
          yaml: r.object ? toYAML(strip(r.object)) : "",
        }));
        this.render();
      })
      .catch((err) => fill(this.el, h("p", { class: "error" }, "history: " + err.message)))
      .finally(() => {
        this.fetching = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.refresh();
        }
      });
  }

  render() {
    const list = this.list;
    if (list.length === 0) return fill(this.el, h("p", { class: "muted" }, "No revision yet."));
    const rvs = list.map((r) => r.rv);
    if (this.follow || !rvs.includes(this.to)) this.to = rvs[rvs.length - 1];
    if (this.follow || !rvs.includes(this.from)) this.from = rvs[Math.max(0, rvs.length - 2)];
    const pick = (which) => {
      const sel = h("select", { id: "rev-" + which, "aria-label": which }, list.map((r) => h("option", { value: r.rv, selected: r.rv === this[which] }, r.label)));
      sel.addEventListener("change", () => {
        this[which] = sel.value;
        this.follow = false;
        this.render();
      });
      return sel;
    };
    const a = list.find((r) => r.rv === this.from);
    const b = list.find((r) => r.rv === this.to);
    const where = this.server ? "kept by the server" : "seen in this tab";
    fill(
      this.el,
      h("p", { class: "muted", id: "revision-count", "data-count": list.length }, `${list.length} revision${list.length === 1 ? "" : "s"} ${where}`),
      h(
        "ol",
        { class: "revisions" },
        list.map((r) => h("li", { "data-rv": r.rv }, r.time ? `${r.label} · ${r.time} ` : r.label + " ", writerLink(r.rv, this.name))),
      ),
      h("div", { class: "toolbar" }, "diff ", pick("from"), " → ", pick("to")),
      a === b ? h("p", { class: "muted" }, "Pick two revisions.") : diffView(a.yaml, b.yaml),
    );
  }
}

/** A diff of two YAML texts as a <pre> of coloured lines. */
export function diffView(before, after) {
  const lines = hunks(diffLines(before, after));
  return h(
    "pre",
    { class: "diff" },
    lines.map((d) => h("span", { class: d.op === "+" ? "add" : d.op === "-" ? "del" : d.op === "@" ? "gap" : "" }, `${d.op} ${d.text}\n`)),
  );
}
