"""Tests for kplane.informers."""
