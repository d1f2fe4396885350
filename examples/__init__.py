"""Runnable operators written with ``kplane.runtime``; each is type-checked and exercised by tests."""
