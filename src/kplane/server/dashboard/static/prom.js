// The Prometheus text format, just enough for /metrics: samples as {name, labels, value}.

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Samples whose names start with one of `prefixes` (the rest is skipped unparsed). */
export function parse(text, prefixes) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#" || !prefixes.some((p) => line.startsWith(p))) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const l of m[2].matchAll(LABEL)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * The q-quantile of a histogram's increase between two scrapes, from cumulative buckets
 * ({le: count}), interpolated linearly inside the bucket as Prometheus' histogram_quantile does.
 */
export function quantile(q, before, after) {
  const bounds = Object.keys(after)
    .filter((le) => le !== "+Inf")
    .sort((a, b) => Number(a) - Number(b));
  const delta = (le) => (after[le] || 0) - ((before && before[le]) || 0);
  const total = delta("+Inf");
  if (!(total > 0)) return NaN;
  const rank = q * total;
  let prevBound = 0;
  let prevCount = 0;
  for (const le of bounds) {
    const b = Number(le);
    const c = delta(le);
    if (c >= rank) return prevBound + ((b - prevBound) * (rank - prevCount)) / Math.max(c - prevCount, 1e-9);
    prevBound = b;
    prevCount = c;
  }
  return prevBound;
}
