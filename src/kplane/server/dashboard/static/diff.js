// A line diff (longest common subsequence) of two texts, as hunks with context, for revisions of
// an object's YAML. The table is bounded: past MAX_CELLS the diff is "all removed, all added".

const MAX_CELLS = 4_000_000;

/** [{op: " " | "-" | "+", text}] for every line of a and b. */
export function diffLines(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const head = x.slice(0, start).map((text) => ({ op: " ", text }));
  const tail = x.slice(endX).map((text) => ({ op: " ", text }));
  const xs = x.slice(start, endX);
  const ys = y.slice(start, endY);
  const n = xs.length;
  const m = ys.length;
  if (n * m > MAX_CELLS) {
    return [...head, ...xs.map((text) => ({ op: "-", text })), ...ys.map((text) => ({ op: "+", text })), ...tail];
  }
  // lcs[i][j]: common length of xs[i..] and ys[j..], one flat array
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * w + j] = xs[i] === ys[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  const mid = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && xs[i] === ys[j]) {
      mid.push({ op: " ", text: xs[i++] });
      j++;
    } else if (i < n && (j >= m || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) mid.push({ op: "-", text: xs[i++] });
    else mid.push({ op: "+", text: ys[j++] });
  }
  return [...head, ...mid, ...tail];
}

/** Only changed lines and `context` lines around them; gaps become {op: "@", text: "…"}. */
export function hunks(diff, context = 3) {
  const keep = new Uint8Array(diff.length);
  diff.forEach((d, k) => {
    if (d.op === " ") return;
    for (let c = Math.max(0, k - context); c <= Math.min(diff.length - 1, k + context); c++) keep[c] = 1;
  });
  const out = [];
  let gap = false;
  diff.forEach((d, k) => {
    if (keep[k]) {
      out.push(d);
      gap = false;
    } else if (!gap) {
      out.push({ op: "@", text: "…" });
      gap = true;
    }
  });
  return out;
}
