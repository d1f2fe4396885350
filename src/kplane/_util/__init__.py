"""Helpers with no Kubernetes knowledge: the injectable clock, backoff, task helpers."""
