"""The request target the lean HTTP/1.1 path sends: quoting and query encoding as urllib does."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest

from kplane.client import rest


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/default/configmaps/plain",
        "/api/v1/namespaces/default/configmaps/with space",
        "/api/v1/namespaces/default/configmaps/ünïcode",
        "/apis/g/v1/things/a:b@c!$&'()*+,;=-._~",
        "/api/v1/namespaces/default/configmaps/x?watch=true",
        "/api/v1/namespaces/default/configmaps/50%25",
        '/weird/"quote"/<angle>/{brace}/back\\slash/#hash',
    ],
)
@pytest.mark.parametrize(
    "params", [None, [("fieldManager", "kplane-manager")], [("labelSelector", "a in (x,y)")]]
)
def test_target_is_what_urllib_quoting_gives(path: str, params: list[tuple[str, str]] | None) -> None:
    bare, sep, own = path.partition("?")
    expected = quote("/prefix" + bare, safe="/%:@!$&'()*+,;=-._~") + (f"?{own}" if sep else "")
    if params:
        expected += ("&" if sep else "?") + urlencode(params, quote_via=quote)
    assert rest._target("/prefix", path, params) == expected
    assert rest._target("/prefix", path, params) == expected  # again, from the query memo
