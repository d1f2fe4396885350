"""Field selector parsing, escaping, matching, validation and per-kind field extraction."""

from __future__ import annotations

from typing import Any

import pytest

from kplane.api import fields


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("metadata.name=a", [("metadata.name", "=", "a")], id="equals"),
        pytest.param("metadata.name==a", [("metadata.name", "=", "a")], id="double-equals"),
        pytest.param("status.phase!=Running", [("status.phase", "!=", "Running")], id="not-equals"),
        pytest.param(
            "spec.nodeName=n1,metadata.name=p",
            [("metadata.name", "=", "p"), ("spec.nodeName", "=", "n1")],
            id="and-sorted",
        ),
        pytest.param(r"reason=a\,b\=c\\d", [("reason", "=", "a,b=c\\d")], id="escapes"),
        pytest.param("spec.nodeName=", [("spec.nodeName", "=", "")], id="empty-value"),
        pytest.param("", [], id="empty"),
        pytest.param("a=1,,b=2", [("a", "=", "1"), ("b", "=", "2")], id="empty-term-skipped"),
    ],
)
def test_parse(text: str, expected: list[tuple[str, str, str]]) -> None:
    """Terms parse into (field, operator, unescaped value), sorted."""
    sel = fields.parse(text)
    assert [(r.field, r.operator, r.value) for r in sel.requirements] == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("metadata.name", "can't understand 'metadata.name'", id="no-operator"),
        pytest.param(r"a=b\x", r"invalid escape sequence: \x", id="bad-escape"),
        pytest.param("a=b\\", "invalid escape sequence", id="trailing-backslash"),
        pytest.param("a=b=c", "unescaped character in value", id="bare-equals"),
    ],
)
def test_parse_errors(text: str, fragment: str) -> None:
    """Malformed selectors raise ValueError."""
    with pytest.raises(ValueError) as info:
        fields.parse(text)
    assert fragment in str(info.value)


def test_string_round_trip_escapes() -> None:
    """str() re-escapes values so that it parses back to the same selector."""
    sel = fields.parse(r"reason=a\,b,type!=x\=y")
    assert str(sel) == r"reason=a\,b,type!=x\=y"
    assert fields.parse(str(sel)) == sel


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("status.phase=Running", True, id="equal-hit"),
        pytest.param("status.phase!=Running", False, id="not-equal-miss"),
        pytest.param("spec.nodeName=", True, id="missing-compares-empty"),
        pytest.param("spec.nodeName!=n1", True, id="missing-not-equal"),
        pytest.param("status.phase=Running,metadata.name=q", False, id="and"),
    ],
)
def test_matches(text: str, expected: bool) -> None:
    """Requirements compare the field values; absent fields are ''."""
    values = {"status.phase": "Running", "metadata.name": "p"}
    assert fields.parse(text).matches(values) is expected


@pytest.mark.parametrize(
    ("text", "name"),
    [
        pytest.param("metadata.name=p", "p", id="pinned"),
        pytest.param("metadata.name==p,status.phase=x", "p", id="pinned-with-others"),
        pytest.param("metadata.name!=p", None, id="negated"),
        pytest.param("status.phase=x", None, id="absent"),
    ],
)
def test_exact_name(text: str, name: str | None) -> None:
    """exact_name reports a name pinned by equality only."""
    assert fields.parse(text).exact_name() == name


@pytest.mark.parametrize(
    ("group", "kind", "text", "ok"),
    [
        pytest.param("", "Pod", "spec.nodeName=n", True, id="pod-node"),
        pytest.param("", "Pod", "spec.host=n", True, id="pod-legacy-host"),
        pytest.param("", "ConfigMap", "metadata.namespace=d", True, id="meta-any-kind"),
        pytest.param("", "ConfigMap", "data.x=1", False, id="configmap-data"),
        pytest.param("apps", "Deployment", "status.replicas=1", False, id="deployment-replicas"),
        pytest.param("apps", "ReplicaSet", "status.replicas=1", True, id="replicaset-replicas"),
        pytest.param("example.com", "Widget", "spec.color=red", False, id="crd-without-extra"),
    ],
)
def test_validate(group: str, kind: str, text: str, ok: bool) -> None:
    """validate accepts supported fields and rejects others with upstream's message."""
    sel = fields.parse(text)
    if ok:
        fields.validate(sel, group, kind)
    else:
        with pytest.raises(ValueError, match=r"^field label not supported: "):
            fields.validate(sel, group, kind)


def test_validate_extra_fields() -> None:
    """A CRD's selectable fields passed as extra are accepted."""
    fields.validate(fields.parse("spec.color=red"), "example.com", "Widget", extra=("spec.color",))


POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "hostNetwork": True},
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}], "podIP": "10.0.0.5"},
}


@pytest.mark.parametrize(
    ("key", "obj", "expected"),
    [
        pytest.param(
            ("", "Pod"),
            POD,
            {
                "metadata.name": "p",
                "metadata.namespace": "default",
                "spec.nodeName": "n1",
                "spec.host": "n1",
                "spec.restartPolicy": "Always",
                "spec.schedulerName": "",
                "spec.serviceAccountName": "",
                "spec.hostNetwork": "true",
                "status.phase": "Running",
                "status.podIP": "10.0.0.5",
                "status.nominatedNodeName": "",
            },
            id="pod",
        ),
        pytest.param(
            ("", "Node"),
            {"metadata": {"name": "n"}, "spec": {}},
            {"metadata.name": "n", "metadata.namespace": "", "spec.unschedulable": "false"},
            id="node-default-schedulable",
        ),
        pytest.param(
            ("", "Secret"),
            {"metadata": {"name": "s", "namespace": "d"}, "type": "Opaque"},
            {"metadata.name": "s", "metadata.namespace": "d", "type": "Opaque"},
            id="secret",
        ),
        pytest.param(
            ("batch", "Job"),
            {"metadata": {"name": "j"}, "status": {"succeeded": 3}},
            {"metadata.name": "j", "metadata.namespace": "", "status.successful": "3"},
            id="job-successful",
        ),
        pytest.param(
            ("apps", "ReplicaSet"),
            {"metadata": {"name": "r"}},
            {"metadata.name": "r", "metadata.namespace": "", "status.replicas": "0"},
            id="replicaset-no-status",
        ),
        pytest.param(
            ("", "ConfigMap"),
            {"metadata": {"name": "c", "namespace": "d"}, "data": {"a": "b"}},
            {"metadata.name": "c", "metadata.namespace": "d"},
            id="meta-only",
        ),
    ],
)
def test_field_getter(key: tuple[str, str], obj: dict[str, Any], expected: dict[str, str]) -> None:
    """Each kind exposes its selectable fields as strings."""
    assert fields.field_getter(key)(obj) == expected


def test_event_fields_and_source_fallback() -> None:
    """Event exposes involvedObject.*, and source falls back to reportingComponent."""
    event = {
        "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default", "uid": "u1"},
        "reason": "Scheduled",
        "reportingComponent": "default-scheduler",
        "type": "Normal",
    }
    got = fields.field_getter(("", "Event"))(event)
    sel = fields.parse("involvedObject.name=p1,involvedObject.namespace=default,involvedObject.uid=u1")
    assert sel.matches(got)
    assert got["source"] == "default-scheduler"
    assert got["involvedObject.fieldPath"] == ""
    event["source"] = {"component": "kubelet"}
    assert fields.field_getter(("", "Event"))(event)["source"] == "kubelet"


def test_field_getter_extra_paths() -> None:
    """Extra dotted paths (CRD selectable fields) are read and stringified."""
    get = fields.field_getter(("example.com", "Widget"), extra=("spec.color", "spec.size", "spec.on"))
    got = get({"metadata": {"name": "w"}, "spec": {"color": "red", "size": 3, "on": False}})
    assert (got["spec.color"], got["spec.size"], got["spec.on"]) == ("red", "3", "false")
