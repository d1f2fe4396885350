// The resources the server serves, from aggregated discovery (two requests: /api and /apis),
// each group at its preferred version; only those that can be listed and watched.

const ACCEPT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

let cached = null;

/** [{group, version, resource, kind, namespaced, key}] sorted by kind; key is "group/version/resource". */
export async function resources(api) {
  if (cached && cached.api === api) return cached.list;
  const out = [];
  for (const path of ["/api", "/apis"]) {
    const doc = await api.get(path, { accept: ACCEPT });
    for (const group of doc.items || []) {
      const preferred = (group.versions || [])[0];
      if (!preferred) continue;
      const name = group.metadata.name || "";
      for (const r of preferred.resources || []) {
        const verbs = r.verbs || [];
        if (!verbs.includes("list") || !verbs.includes("watch")) continue;
        out.push({
          group: name,
          version: preferred.version,
          resource: r.resource,
          kind: (r.responseKind && r.responseKind.kind) || r.resource,
          namespaced: r.scope === "Namespaced",
          key: `${name}/${preferred.version}/${r.resource}`,
        });
      }
    }
  }
  out.sort((a, b) => a.kind.localeCompare(b.kind) || a.group.localeCompare(b.group));
  cached = { api, list: out };
  return out;
}

/** Whether the server serves group/version (for views that need an optional API). */
export async function hasGroupVersion(api, group, version) {
  const doc = await api.get("/apis", { accept: ACCEPT });
  return (doc.items || []).some((g) => g.metadata.name === group && (g.versions || []).some((v) => v.version === version));
}
