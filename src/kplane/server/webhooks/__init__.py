"""Calling webhooks from the server: admission webhooks and CRD conversion webhooks share it.

``client`` posts one JSON review over HTTPS to a ``clientConfig`` (a URL, or a Service resolved
by ``resolving`` to its Endpoints, as kplane has no cluster network) and reports failures in the
words of Go's HTTP client, which upstream's error messages embed.
"""
