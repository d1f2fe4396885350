"""Metadata rules shared by every kind: UIDs, generated names, name and label syntax."""

from __future__ import annotations

import uuid

import pytest

from kplane.server.registry import objectmeta


def test_new_uid_is_a_unique_version_4_uuid() -> None:
    """UIDs parse as RFC 4122 version-4 UUIDs, print canonically, and do not repeat (pool refills)."""
    uids = [objectmeta.new_uid() for _ in range(1000)]  # > 256: crosses pool refills
    assert len(set(uids)) == len(uids)
    for u in uids:
        parsed = uuid.UUID(u)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == u


def test_generate_name_uses_prefix_and_upstream_alphabet() -> None:
    """generateName appends five characters from upstream's alphabet, prefix truncated to 58."""
    name = objectmeta.generate_name("web-")
    assert name.startswith("web-") and len(name) == 9
    assert set(name[4:]) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert len(objectmeta.generate_name("x" * 100)) == 63


@pytest.mark.parametrize(
    ("rule", "name", "ok"),
    [
        ("subdomain", "web.example", True),
        ("subdomain", "Web", False),
        ("subdomain", "a" * 254, False),
        ("label", "kube-system", True),
        ("label", "a.b", False),
        ("dns1035", "svc-1", True),
        ("dns1035", "1svc", False),
        ("path", "system:controller:x", True),
        ("path", "a/b", False),
        ("subdomain", "..", False),
    ],
    ids=lambda v: str(v)[:20],
)
def test_validate_name(rule: str, name: str, ok: bool) -> None:
    """Each naming rule accepts and refuses what upstream does, with a metadata.name cause."""
    errs = objectmeta.validate_name("metadata.name", name, rule)
    assert (not errs) == ok
    assert all(e.field == "metadata.name" for e in errs)


def test_invalid_name_message_matches_upstream() -> None:
    """The RFC 1123 subdomain message is upstream's, value quoted."""
    (err,) = objectmeta.validate_name("metadata.name", "Foo_Bar", "subdomain")
    assert str(err).startswith('metadata.name: Invalid value: "Foo_Bar": a lowercase RFC 1123 subdomain')


def test_validate_metadata_labels_and_owner_references() -> None:
    """Bad label keys/values and owner references without required fields are reported."""
    errs = objectmeta.validate_metadata(
        {"name": "x", "labels": {"bad key": "v", "ok": "-bad-"}, "ownerReferences": [{"kind": "A"}]},
        name_rule="subdomain",
    )
    fields = {e.field for e in errs}
    assert "metadata.labels" in fields
    assert {"metadata.ownerReferences[0].apiVersion", "metadata.ownerReferences[0].uid"} <= fields
