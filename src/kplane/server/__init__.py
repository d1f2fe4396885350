"""kplane server: a Kubernetes-compatible API server (storage -> registry -> endpoints -> app)."""
