// The API as the signed-in user: every request carries the user's bearer token (or, with none,
// goes out on the TLS connection that carries the browser's client certificate), so the server's
// authentication and RBAC decide what the page may read. The dashboard only reads.

const MAX_LINE = 16 * 1024 * 1024; // one watch event larger than this ends the watch (then relist)

export class ApiError extends Error {
  constructor(status, message, reason) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

export class Api {
  constructor(token) {
    this.token = token || "";
  }

  headers(accept) {
    const h = { Accept: accept || "application/json" };
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  }

  async request(path, { method = "GET", body, accept, signal } = {}) {
    const init = { method, headers: this.headers(accept), cache: "no-store", signal };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    const resp = await fetch(path, init);
    if (!resp.ok) throw await errorOf(resp);
    return resp;
  }

  async get(path, options) {
    return (await this.request(path, options)).json();
  }

  async text(path, options) {
    return (await this.request(path, { accept: "text/plain", ...options })).text();
  }

  /** Who the API says the caller is (SelfSubjectReview, a create that stores nothing). */
  async whoami() {
    const review = await (
      await this.request("/apis/authentication.k8s.io/v1/selfsubjectreviews", {
        method: "POST",
        body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
      })
    ).json();
    return review.status.userInfo;
  }

  /** Every item of a list, page by page (500 a page); returns {items, resourceVersion}. */
  async list(path, query, signal) {
    const items = [];
    let cont = "";
    for (;;) {
      const q = new URLSearchParams(query || {});
      q.set("limit", "500");
      if (cont) q.set("continue", cont);
      const page = await this.get(path + "?" + q, { signal });
      for (const item of page.items || []) items.push(item);
      cont = page.metadata && page.metadata.continue;
      if (!cont) return { items, resourceVersion: page.metadata.resourceVersion };
    }
  }

  /**
   * Watch from resourceVersion, calling onEvent for each event, until the stream ends (resolves),
   * the signal aborts (rejects AbortError) or the server sends an ERROR event (rejects ApiError:
   * 410 when the version is too old, and the caller relists).
   */
  async watch(path, query, resourceVersion, onEvent, signal) {
    const q = new URLSearchParams(query || {});
    q.set("watch", "1");
    q.set("allowWatchBookmarks", "true");
    q.set("resourceVersion", resourceVersion);
    const resp = await this.request(path + "?" + q, { signal });
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffered += decoder.decode(value, { stream: true });
        // each line parsed where it lies; the unfinished rest kept once per chunk, not per line
        let start = 0;
        let nl;
        while ((nl = buffered.indexOf("\n", start)) >= 0) {
          const line = buffered.slice(start, nl);
          start = nl + 1;
          if (!line.trim()) continue;
          const event = JSON.parse(line);
          if (event.type === "ERROR") {
            const s = event.object || {};
            throw new ApiError(s.code || 500, s.message || "watch error", s.reason);
          }
          onEvent(event);
        }
        buffered = start === buffered.length ? "" : buffered.slice(start);
        if (buffered.length > MAX_LINE) throw new ApiError(0, "watch event too large");
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
}

async function errorOf(resp) {
  let message = resp.status + " " + resp.statusText;
  let reason = "";
  try {
    const status = await resp.json();
    if (status && status.message) message = status.message;
    reason = (status && status.reason) || "";
  } catch {
    // not a Status: keep the HTTP status line
  }
  return new ApiError(resp.status, message, reason);
}

/** The URL path of a resource: group "" is the core group under /api. */
export function resourcePath({ group, version, resource, namespaced }, namespace, name) {
  let p = group ? `/apis/${group}/${version}` : `/api/${version}`;
  if (namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += "/" + resource;
  if (name) p += "/" + encodeURIComponent(name);
  return p;
}
