// A live list: list, then watch from the list's resourceVersion, keeping one small summary per
// object (never the whole object, so memory stays bounded by what the views show). A 410 or a
// broken stream relists after a backoff; stop() aborts everything. Listeners are called at most
// every `interval` ms, however many events arrive (one render per batch).

export const MAX_OBJECTS = 50000; // beyond this the list is marked truncated and more are ignored
const MAX_BACKOFF = 30000;

export class LiveList {
  constructor(api, path, { query, summarize, onChange, onError, interval = 250 }) {
    this.api = api;
    this.path = path;
    this.query = query || {};
    this.summarize = summarize || ((o) => o);
    this.onChange = onChange;
    this.onError = onError || (() => {});
    this.interval = interval;
    this.items = new Map(); // uid -> summary
    this.truncated = false;
    this.synced = false;
    this.controller = new AbortController();
    this.timer = 0;
  }

  start() {
    this.run().catch(() => {});
    return this;
  }

  stop() {
    this.controller.abort();
    clearTimeout(this.timer);
    this.items.clear();
  }

  changed() {
    if (this.timer || this.controller.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = 0;
      if (!this.controller.signal.aborted) this.onChange(this);
    }, this.interval);
  }

  put(obj) {
    const uid = obj.metadata.uid;
    if (!this.items.has(uid) && this.items.size >= MAX_OBJECTS) {
      this.truncated = true;
      return;
    }
    this.items.set(uid, this.summarize(obj));
  }

  async run() {
    const signal = this.controller.signal;
    let backoff = 500;
    while (!signal.aborted) {
      try {
        const { items, resourceVersion } = await this.api.list(this.path, this.query, signal);
        this.items.clear();
        this.truncated = false;
        for (const obj of items) this.put(obj);
        this.synced = true;
        this.changed();
        let rv = resourceVersion;
        for (;;) {
          await this.api.watch(
            this.path,
            this.query,
            rv,
            (event) => {
              const obj = event.object;
              rv = obj.metadata.resourceVersion;
              if (event.type === "BOOKMARK") return;
              if (event.type === "DELETED") this.items.delete(obj.metadata.uid);
              else this.put(obj);
              this.changed();
            },
            signal,
          );
          backoff = 500; // the server ended a healthy watch (timeout): resume where it stopped
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err.status && err.status !== 410) this.onError(err);
        // refused (401, 403): asking again soon would only be refused again
        if (err.status === 401 || err.status === 403) backoff = MAX_BACKOFF;
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, MAX_BACKOFF);
      }
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

/** Seconds, minutes, hours or days since an RFC 3339 time, as kubectl prints ages. */
export function age(timestamp, now = Date.now()) {
  if (!timestamp) return "";
  const s = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}
