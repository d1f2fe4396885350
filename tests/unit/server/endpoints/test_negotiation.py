"""Reply negotiation as apiserver's handlers/negotiation does it, and YAML as sigs.k8s.io/yaml writes it."""

from __future__ import annotations

import pytest

from kplane.server.endpoints import negotiation

JSON, YAML, PROTOBUF = negotiation.JSON, negotiation.YAML, negotiation.PROTOBUF
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
POM = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
C = negotiation.Chosen


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, C(JSON)),
        ("", C(JSON)),
        ("*/*", C(JSON)),
        ("application/*", C(JSON)),
        ("application/yaml", C(YAML)),
        (f"{PROTOBUF}, */*", C(PROTOBUF)),
        (f"{PROTOBUF},application/json", C(PROTOBUF)),
        (f"application/json;q=0.5, {PROTOBUF}", C(PROTOBUF)),  # q first
        (f"*/*, {YAML}", C(YAML)),  # concrete types before wildcards
        (f"{TABLE},application/json", C(JSON, "Table", "v1")),
        ("application/yaml;as=Table;v=v1;g=meta.k8s.io", C(YAML, "Table", "v1")),
        (f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io, application/json", C(JSON)),
        ("application/json;as=Table;g=meta.k8s.io, application/yaml", C(YAML)),  # no version
        ("application/json;as=Widget;v=v1;g=example.com, application/yaml", C(YAML)),
        ("application/json;stream=other, application/yaml", C(YAML)),
        ("application/json;sv=v2, application/yaml", C(YAML)),
        (
            f"{PROTOBUF};{POM},application/json;{POM},application/json",
            C(PROTOBUF, "PartialObjectMetadata", "v1"),
        ),
        (
            f"{PROTOBUF};{POM.replace('v=v1', 'v=v1beta1')},application/json",
            C(JSON),
        ),  # no v1beta1 descriptors
        ("text/html", None),
        (f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io", None),
    ],
)
def test_negotiate_like_upstream(accept: str | None, expected: negotiation.Chosen | None) -> None:
    """Clauses by q then specificity, serializers JSON, YAML, protobuf, endpoint restrictions."""
    assert negotiation.negotiate(accept) == expected


def test_protobuf_skipped_where_the_kind_has_none() -> None:
    """Custom resources: a protobuf clause is skipped, so the next one (or 406) answers."""
    assert negotiation.negotiate(f"{PROTOBUF}, */*", protobuf_ok=lambda: False) == C(JSON)
    assert negotiation.negotiate(PROTOBUF, protobuf_ok=lambda: False) is None
    # metadata views are protobuf-encodable whatever the kind (the CRD handler keeps protobuf for them)
    assert negotiation.negotiate(f"{PROTOBUF};{POM}", protobuf_ok=lambda: False) == C(
        PROTOBUF, "PartialObjectMetadata", "v1"
    )


def test_streams_and_errors() -> None:
    """Watches refuse a chosen YAML; errors take no transformations."""
    assert negotiation.negotiate("application/yaml, application/json", stream=True) is None
    assert negotiation.negotiate(f"{PROTOBUF};stream=watch", stream=True) == C(PROTOBUF)
    assert negotiation.negotiate(f"{TABLE},application/json", transforms=False) == C(JSON)
    assert negotiation.negotiate(TABLE, transforms=False) is None


def test_not_acceptable_messages() -> None:
    """errNotAcceptable lists the serializers' media types (stream ones for watches)."""
    assert negotiation.not_acceptable().message == (
        "only the following media types are accepted: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )
    assert negotiation.not_acceptable(stream=True).message == (
        "only the following media types are accepted: "
        "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    )


def test_error_body_falls_back_to_indented_json() -> None:
    """An error whose Accept allows nothing is written as indented JSON (WriteRawJSON)."""
    body, media = negotiation.error_body({"kind": "Status", "code": 404}, "text/html")
    assert media == JSON and body == b'{\n  "kind": "Status",\n  "code": 404\n}'


def test_yaml_string_styles_as_go_yaml() -> None:
    """Keys sorted; strings that would read as other types double-quoted; multi-line as literal blocks."""
    doc = {"b": {"n": "1", "t": "true", "e": "", "m": "x\ny\n", "p": "plain"}, "a": [1, None]}
    assert negotiation.dumps_yaml(doc) == (
        b'a:\n- 1\n- null\nb:\n  e: ""\n  m: |\n    x\n    y\n  n: "1"\n  p: plain\n  t: "true"\n'
    )
