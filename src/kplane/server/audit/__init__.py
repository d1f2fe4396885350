"""Auditing: upstream's ``audit.k8s.io/v1`` Policy (``policy``) decides what each request records,
and ``log`` writes ``Event`` JSON lines to a size-rotated file; ``filters/audit`` ties them to requests."""
