"""Concurrent deploys without conflicts: many clients change one Deployment's image at once.

Patching the Deployment directly (read, change, PUT with the read resourceVersion) makes racing
clients fail with 409 Conflict. Asking instead, by creating a ``DeployRequest``, lets one controller
apply the requests one at a time, retrying its own conflicts, and report each outcome in the
request's status: every request lands and no client ever sees a conflict.
"""
