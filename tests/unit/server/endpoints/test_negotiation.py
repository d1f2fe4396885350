"""Reply negotiation as apiserver's handlers/negotiation does it, and YAML as sigs.k8s.io/yaml writes it."""

from __future__ import annotations

import pytest

from kplane.server.endpoints import negotiation

JSON, YAML, PROTOBUF = negotiation.JSON, negotiation.YAML, negotiation.PROTOBUF
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, (JSON, False)),
        ("", (JSON, False)),
        ("*/*", (JSON, False)),
        ("application/*", (JSON, False)),
        ("application/yaml", (YAML, False)),
        (f"{PROTOBUF}, */*", (PROTOBUF, False)),
        (f"{PROTOBUF},application/json", (PROTOBUF, False)),
        (f"application/json;q=0.5, {PROTOBUF}", (PROTOBUF, False)),  # q first
        (f"*/*, {YAML}", (YAML, False)),  # concrete types before wildcards
        (f"{TABLE},application/json", (JSON, True)),
        ("application/yaml;as=Table;v=v1;g=meta.k8s.io", (YAML, True)),
        (f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io, application/json", (JSON, False)),
        ("application/json;as=Table;g=meta.k8s.io, application/yaml", (YAML, False)),  # no version
        ("application/json;as=Widget;v=v1;g=example.com, application/yaml", (YAML, False)),
        ("application/json;stream=other, application/yaml", (YAML, False)),
        ("application/json;sv=v2, application/yaml", (YAML, False)),
        ("text/html", None),
        (f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io", None),
    ],
)
def test_negotiate_like_upstream(accept: str | None, expected: tuple[str, bool] | None) -> None:
    """Clauses by q then specificity, serializers JSON, YAML, protobuf, endpoint restrictions."""
    assert negotiation.negotiate(accept) == expected


def test_protobuf_skipped_where_the_kind_has_none() -> None:
    """Custom resources: a protobuf clause is skipped, so the next one (or 406) answers."""
    assert negotiation.negotiate(f"{PROTOBUF}, */*", protobuf_ok=lambda: False) == (JSON, False)
    assert negotiation.negotiate(PROTOBUF, protobuf_ok=lambda: False) is None


def test_streams_and_errors() -> None:
    """Watches refuse a chosen YAML; errors take no transformations."""
    assert negotiation.negotiate("application/yaml, application/json", stream=True) is None
    assert negotiation.negotiate(f"{PROTOBUF};stream=watch", stream=True) == (PROTOBUF, False)
    assert negotiation.negotiate(f"{TABLE},application/json", transforms=False) == (JSON, False)
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
