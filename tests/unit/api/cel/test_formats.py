"""The Format library (apiserver pkg/cel/library/format.go, 1.32): ``format.<name>()``,
``format.named(name)`` (optional) and ``<format>.validate(s)`` (``optional.none()`` or the
validator's messages), and the source rewrite that gives the engine its optionals."""

from __future__ import annotations

from typing import Any

import pytest
from cel_expr_python import cel

from kplane.api.cel import engine, formats


def _eval(source: str, value: str) -> Any:
    return engine.environment().compile(source, {"self": cel.Type.STRING}).eval({"self": value})


@pytest.mark.parametrize(
    ("fmt", "value", "valid"),
    [
        ("dns1123Label", "my-label-name", True),
        ("dns1123Label", "My_Label", False),
        ("dns1123Subdomain", "apiextensions.k8s.io", True),
        ("dns1035Label", "1abc", False),
        ("qualifiedName", "apiextensions.k8s.io/v1beta1", True),
        ("dns1123LabelPrefix", "my-label-prefix-", True),
        ("dns1123SubdomainPrefix", "mysubdomain.prefix.-", True),
        ("dns1035LabelPrefix", "my-label-prefix-", True),
        ("labelValue", "a" * 64, False),
        ("uri", "http://example.com", True),
        ("uri", "example", False),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", True),
        ("uuid", "123e4567", False),
        ("byte", "aGVsbG8=", True),
        ("byte", "not base64!", False),
        ("date", "2021-01-01", True),
        ("date", "2021-13-01", False),
        ("datetime", "2021-01-01T00:00:00Z", True),
        ("datetime", "yesterday", False),
    ],
)
def test_validate(fmt: str, value: str, valid: bool) -> None:
    """The examples of format.go's documentation validate; broken values get messages."""
    assert _eval(f"format.{fmt}().validate(self).hasValue()", value) is not valid
    assert _eval(f"format.named('{fmt}').value().validate(self).hasValue()", value) is not valid


def test_messages() -> None:
    """Messages are the validators' (strfmt's for uuid)."""
    assert _eval("format.uuid().validate(self).value()", "x") == ["does not match the UUID format"]
    assert _eval("format.named('nope').hasValue()", "") is False


def test_rewrite_skips_literals() -> None:
    """Only calls in code are rewritten, not text inside strings."""
    assert formats.rewrite("'.validate(x)' == self") == "'.validate(x)' == self"
    assert formats.rewrite("format.uri().validate(self.a(b)).hasValue()") == (
        "format.uri().validate(self.a(b))[?'v'].hasValue()"
    )


def test_errors_point_into_the_original_source() -> None:
    """Compile errors after a rewritten call show the user's text and column."""
    with pytest.raises(engine.CompileError) as exc:
        engine.environment().compile(
            "format.dns1123Label().validate(self).hasValue() && self.nope", {"self": cel.Type.STRING}
        )
    assert str(exc.value) == (
        "ERROR: <input>:1:56: expression of type 'string' cannot be the operand of a select operation\n"
        " | format.dns1123Label().validate(self).hasValue() && self.nope\n"
        " | .......................................................^"
    )
