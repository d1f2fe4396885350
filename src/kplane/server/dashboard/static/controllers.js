// Controllers with their queue depth, reconcile rate and latency, from /metrics (the server's
// scrape includes the controllers it runs), scraped every PERIOD ms; the last SAMPLES scrapes are
// kept per controller and drawn as sparklines.

import { fill, h, table } from "./dom.js";
import { sparkline } from "./plot.js";
import { parse, quantile } from "./prom.js";

export const PERIOD = 5000;
export const SAMPLES = 60;
const PREFIXES = ["controller_runtime_", "workqueue_depth", "workqueue_adds_total"];

/** One scrape reduced to {controller: {total, errors, sum, count, buckets, depth, adds, workers}}. */
function reduce(samples) {
  const by = {};
  const of = (name) => (by[name] ||= { total: 0, errors: 0, sum: 0, count: 0, buckets: {}, depth: 0, adds: 0, workers: 0 });
  for (const { name, labels, value } of samples) {
    const c = labels.controller || labels.name;
    if (!c) continue;
    const e = of(c);
    if (name === "controller_runtime_reconcile_total") e.total += value;
    else if (name === "controller_runtime_reconcile_errors_total") e.errors += value;
    else if (name === "controller_runtime_reconcile_time_seconds_sum") e.sum += value;
    else if (name === "controller_runtime_reconcile_time_seconds_count") e.count += value;
    else if (name === "controller_runtime_reconcile_time_seconds_bucket") e.buckets[labels.le] = value;
    else if (name === "controller_runtime_active_workers") e.workers += value;
    else if (name === "workqueue_depth") e.depth += value;
    else if (name === "workqueue_adds_total") e.adds += value;
  }
  return by;
}

export function mount(view, { api }) {
  const error = h("p", { class: "error", role: "alert" });
  const body = h("div", { id: "controllers" });
  fill(view, h("p", { class: "muted" }, `From /metrics every ${PERIOD / 1000} s; rates and latencies over each interval (when it saw no reconcile, latencies since start).`), error, body);
  const history = []; // [{t, by}] oldest first, at most SAMPLES + 1
  let timer = 0;
  let stopped = false;

  async function scrape() {
    try {
      const text = await api.text("/metrics");
      history.push({ t: performance.now(), by: reduce(parse(text, PREFIXES)) });
      if (history.length > SAMPLES + 1) history.shift();
      error.textContent = "";
      draw();
    } catch (err) {
      error.textContent = "/metrics: " + err.message;
    }
    // the second scrape comes soon, so rates show a second after the view opens
    if (!stopped) timer = setTimeout(scrape, history.length === 1 ? 1000 : PERIOD);
  }

  function series(name, fn) {
    const out = [];
    for (let i = 1; i < history.length; i++) {
      const a = history[i - 1].by[name];
      const b = history[i].by[name];
      out.push(a && b ? fn(a, b, (history[i].t - history[i - 1].t) / 1000) : NaN);
    }
    return out;
  }

  function draw() {
    const latest = history[history.length - 1].by;
    const names = Object.keys(latest)
      .filter((n) => latest[n].total > 0 || latest[n].count > 0 || latest[n].adds > 0 || latest[n].depth > 0)
      .sort();
    const rows = names.map((name) => {
      const rate = series(name, (a, b, dt) => (b.total - a.total) / dt);
      const mean = series(name, (a, b) => (b.count > a.count ? (b.sum - a.sum) / (b.count - a.count) : NaN));
      const p99 = series(name, (a, b) => quantile(0.99, a.buckets, b.buckets));
      const depth = history.slice(1).map((s) => (s.by[name] || {}).depth || 0);
      return { name, c: latest[name], rate, mean, p99, depth };
    });
    const last = (xs) => (xs.length ? xs[xs.length - 1] : NaN);
    const fmt = (v, unit) => (Number.isFinite(v) ? `${v < 10 ? v.toFixed(2) : v.toFixed(0)} ${unit}` : "–");
    const ms = (v) => fmt(v * 1000, "ms");
    fill(
      body,
      names.length === 0
        ? h("p", { class: "muted" }, "No controller reports metrics here (kplane serve runs its controllers unless --no-controllers).")
        : table(
            [
              ["Controller", (r) => r.name],
              ["Queue depth", (r) => h("span", {}, String(r.c.depth), h("br"), sparkline(r.depth, { label: `${r.name} queue depth` }))],
              ["Reconciles/s", (r) => h("span", {}, fmt(last(r.rate), "/s"), h("br"), sparkline(r.rate, { label: `${r.name} reconciles per second` }))],
              ["Mean latency", (r) => h("span", {}, ms(Number.isFinite(last(r.mean)) ? last(r.mean) : r.c.sum / r.c.count), h("br"), sparkline(r.mean, { label: `${r.name} mean latency` }))],
              ["p99 latency", (r) => h("span", {}, ms(Number.isFinite(last(r.p99)) ? last(r.p99) : quantile(0.99, {}, r.c.buckets)), h("br"), sparkline(r.p99, { label: `${r.name} p99 latency` }))],
              ["Reconciles", (r) => String(r.c.total)],
              ["Errors", (r) => String(r.c.errors)],
            ],
            rows,
            (r) => ({ "data-controller": r.name }),
          ),
    );
  }

  scrape();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
