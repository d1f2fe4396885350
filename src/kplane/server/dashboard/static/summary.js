// What a table row keeps of an object: a few strings, never the object itself.

function condition(obj, type) {
  const c = ((obj.status || {}).conditions || []).find((x) => x.type === type);
  return c ? c.status : "";
}

function podSummary(obj) {
  const st = obj.status || {};
  const statuses = st.containerStatuses || [];
  const ready = statuses.filter((c) => c.ready).length;
  const total = ((obj.spec || {}).containers || []).length;
  const restarts = statuses.reduce((n, c) => n + (c.restartCount || 0), 0);
  let phase = st.phase || "Pending";
  if (obj.metadata.deletionTimestamp) phase = "Terminating";
  return {
    status: phase,
    ready: `${ready}/${total}`,
    isReady: condition(obj, "Ready") === "True",
    node: (obj.spec || {}).nodeName || "",
    restarts,
  };
}

function workloadSummary(obj) {
  const st = obj.status || {};
  const want = (obj.spec || {}).replicas ?? 1;
  const ready = st.readyReplicas || st.numberReady || 0;
  return { status: ready >= want ? "Ready" : "Progressing", ready: `${ready}/${want}` };
}

const BY_KIND = {
  Pod: podSummary,
  Deployment: workloadSummary,
  ReplicaSet: workloadSummary,
  StatefulSet: workloadSummary,
  Node: (obj) => ({ status: condition(obj, "Ready") === "True" ? "Ready" : "NotReady" }),
  Namespace: (obj) => ({ status: (obj.status || {}).phase || "" }),
  Event: (obj) => ({
    status: obj.type || "",
    reason: obj.reason || "",
    message: obj.message || obj.note || "",
    object: obj.involvedObject ? `${obj.involvedObject.kind}/${obj.involvedObject.name}` : "",
    last: obj.lastTimestamp || obj.eventTime || obj.metadata.creationTimestamp,
    count: obj.count || 1,
  }),
};

function generic(obj) {
  const st = obj.status || {};
  if (typeof st.phase === "string") return { status: st.phase };
  for (const type of ["Ready", "Available", "Established", "Complete"]) {
    const v = condition(obj, type);
    if (v) return { status: v === "True" ? type : "Not" + type };
  }
  return { status: "" };
}

/** A summarizer for objects of `kind` (list items carry no kind of their own). */
export function summarizer(kind) {
  const specific = BY_KIND[kind] || generic;
  return (obj) => {
    const m = obj.metadata;
    return {
      uid: m.uid,
      name: m.name,
      namespace: m.namespace || "",
      created: m.creationTimestamp,
      rv: m.resourceVersion,
      ...specific(obj),
    };
  };
}

export function byName(a, b) {
  return a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name);
}
