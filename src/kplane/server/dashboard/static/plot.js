// Inline SVG sparklines: a series of numbers as a polyline scaled to its own maximum.

import { s } from "./dom.js";

export function sparkline(values, { width = 220, height = 40, label = "" } = {}) {
  const finite = values.map((v) => (Number.isFinite(v) ? v : 0));
  const max = Math.max(...finite, 1e-9);
  const step = finite.length > 1 ? width / (finite.length - 1) : width;
  const points = finite.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`).join(" ");
  return s(
    "svg",
    { class: "spark", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label },
    s("title", {}, label),
    s("line", { x1: 0, y1: height - 1, x2: width, y2: height - 1, class: "axis" }),
    s("polyline", { points: points || `0,${height - 2}`, class: "line" }),
  );
}
