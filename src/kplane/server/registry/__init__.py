"""The registry: the generic machinery that turns API verbs into storage operations (system
fields, per-kind strategy, optimistic concurrency, finalizers, selectors, watches)."""
