"""``kplane.testing``: an in-process control plane and helpers for testing operators.

Beside ``kplane.cli``, the one other place where the server and client stacks meet.
"""
