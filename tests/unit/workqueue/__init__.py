"""Tests for kplane.workqueue."""
