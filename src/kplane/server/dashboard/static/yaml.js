// JSON values as YAML, the way kubectl prints objects (block style, two-space indent, keys in
// their JSON order, strings quoted only when YAML would read them as something else).

const PLAIN = /^[A-Za-z_./][A-Za-z0-9_./:@+-]*$/; // safe unquoted, if not a YAML keyword
const KEYWORDS = /^(true|false|yes|no|on|off|null|y|n|~)$/i;

function scalar(v) {
  if (v === null) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  const str = String(v);
  if (str !== "" && PLAIN.test(str) && !KEYWORDS.test(str) && isNaN(Number(str))) return str;
  return JSON.stringify(str);
}

function isBlock(v) {
  return v !== null && typeof v === "object" && Object.keys(v).length > 0;
}

function lines(v, indent, out) {
  const pad = " ".repeat(indent);
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isBlock(item) && !Array.isArray(item)) {
        const sub = [];
        lines(item, indent + 2, sub);
        sub[0] = pad + "- " + sub[0].slice(indent + 2);
        out.push(...sub);
      } else if (isBlock(item)) {
        out.push(pad + "-");
        lines(item, indent + 2, out);
      } else out.push(pad + "- " + inline(item, indent + 2));
    }
    return;
  }
  for (const [k, val] of Object.entries(v)) {
    const key = scalar(k);
    if (isBlock(val)) {
      out.push(pad + key + ":");
      lines(val, Array.isArray(val) ? indent : indent + 2, out);
    } else out.push(pad + key + ": " + inline(val, indent + 2));
  }
}

function inline(v, indent) {
  if (Array.isArray(v)) return "[]";
  if (v !== null && typeof v === "object") return "{}";
  if (typeof v === "string" && v.includes("\n")) {
    const pad = " ".repeat(indent);
    const body = v.replace(/\n$/, "").split("\n").map((l) => (l ? pad + l : ""));
    return (v.endsWith("\n") ? "|" : "|-") + "\n" + body.join("\n");
  }
  return scalar(v);
}

export function toYAML(value) {
  if (!isBlock(value)) return inline(value, 0) + "\n";
  const out = [];
  lines(value, 0, out);
  return out.join("\n") + "\n";
}
