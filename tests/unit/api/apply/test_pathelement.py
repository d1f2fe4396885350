"""Path elements: printing as structured-merge-diff does, and values spelled as Go's encoder writes them."""

from __future__ import annotations

import pytest

from kplane.api.apply import pathelement


@pytest.mark.parametrize(
    ("path", "text"),
    [
        pytest.param(("f:spec", "f:replicas"), ".spec.replicas", id="fields"),
        pytest.param(
            ("f:spec", "f:containers", 'k:{"name":"nginx"}', "f:image"),
            '.spec.containers[name="nginx"].image',
            id="key",
        ),
        pytest.param(
            ("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}'),
            '.ports[containerPort=80,protocol="TCP"]',
            id="multi-key",
        ),
        pytest.param(("f:metadata", "f:finalizers", 'v:"x"'), '.metadata.finalizers[="x"]', id="set"),
        pytest.param(("f:args", "i:2"), ".args[2]", id="index"),
        # value.ToString quotes strings with Go's %q (strconv.Quote): \a, not \x07; \u200b kept escaped
        pytest.param(("f:args", 'v:"a\\u0007\\u200b"'), '.args[="a\\a\\u200b"]', id="go-quote"),
    ],
)
def test_path_string(path: pathelement.Path, text: str) -> None:
    """Paths print as structured-merge-diff's Path.String()."""
    assert pathelement.path_string(path) == text


def test_canonical_json_escapes_html_like_go() -> None:
    """Values inside elements are escaped as Go's encoder does."""
    assert pathelement.value("a<b&c") == 'v:"a\\u003cb\\u0026c"'
    assert pathelement.value(1.0) == "v:1"
