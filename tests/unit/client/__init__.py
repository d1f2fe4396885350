"""Tests for kplane.client."""
