"""Kubernetes' CEL URL (1.0), IP and CIDR (1.30, new rules 1.31) libraries
(apiserver pkg/cel/library/{urls,ip,cidr}.go), with Go's semantics: ``url`` parses as Go's
``url.ParseRequestURI`` (absolute URI or absolute path); ``ip`` refuses IPv4-mapped IPv6 and
zones; ``isGlobalUnicast`` is Go's (private ranges count as global unicast). Not here:
``string(ip)``/``string(cidr)`` (the engine's standard ``string`` function takes no overloads).
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cel_expr_python import cel

from kplane.api.cel import types

T = cel.Type
S, B, INT = T.STRING, T.BOOL, T.INT
IPT, CIDRT, URLT = types.IP_T, types.CIDR_T, types.URL_T
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_request_uri(s: str) -> Any:
    """Go's ``url.ParseRequestURI``: the parts of an absolute URI or absolute path, or None."""
    parts = urlsplit(s)
    if not (parts.scheme or s.startswith("/")) or " " in s:
        return None
    return parts


def _url(s: str) -> Any:
    if parse_request_uri(s) is None:
        raise ValueError(
            f'URL parse error during conversion from string: parse "{s}": invalid URI for request'
        )
    return types.URL(value=s)


def _host(u: Any) -> str:
    return str(urlsplit(u.value).netloc.rpartition("@")[2])


def _hostname(u: Any) -> str:
    host = _host(u)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.rpartition(":")[0] if ":" in host else host


def _port(u: Any) -> str:
    host = _host(u)
    tail = host[host.find("]") + 1 :] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def _query(u: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(u.value).query, keep_blank_values=True)


def _parse_ip(s: str) -> Address | None:
    if "%" in s:
        return None
    try:
        addr = ipaddress.ip_address(s)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return None
    return addr


def _ip(s: str) -> Any:
    addr = _parse_ip(s)
    if addr is None:
        raise ValueError(
            f'IP Address "{s}" parse error during conversion from string: '
            f'ParseAddr("{s}"): unable to parse IP'
        )
    return types.IP(value=str(addr))


def _addr(x: Any) -> Address:
    return ipaddress.ip_address(x.value)


def _global_unicast(x: Any) -> bool:
    a = _addr(x)
    if a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local:
        return False
    return not (isinstance(a, ipaddress.IPv4Address) and int(a) == 0xFFFFFFFF)


def _parse_cidr(s: str) -> Network | None:
    address, sep, bits = s.partition("/")
    if not sep or _parse_ip(address) is None or not bits.isdigit():
        return None
    try:
        return ipaddress.ip_network(s, strict=False)
    except ValueError:
        return None


def _cidr(s: str) -> Any:
    if _parse_cidr(s) is None:
        raise ValueError(
            f'network address "{s}" parse error during conversion from string: '
            f'netip.ParsePrefix("{s}"): bad prefix'
        )
    return types.CIDR(value=s)


def _net(c: Any) -> Network:
    return ipaddress.ip_network(c.value, strict=False)


def _contains_ip(c: Any, x: Any) -> bool:
    addr = _addr(x) if not isinstance(x, str) else _addr(_ip(x))
    return addr.version == _net(c).version and addr in _net(c)


def _contains_cidr(c: Any, x: Any) -> bool:
    other = _net(x) if not isinstance(x, str) else _net(_cidr(x))
    return other.version == _net(c).version and other.subnet_of(_net(c))  # type: ignore[arg-type]


def network_functions() -> list[Any]:
    """The URL, IP and CIDR libraries' declarations."""
    m = True

    def member(name: str, oid: str, result: Any, param: Any, impl: Any) -> Any:
        return cel.FunctionDecl(name, [cel.Overload(oid, result, [param], is_member=m, impl=impl)])

    return [
        cel.FunctionDecl("url", [cel.Overload("string_to_url", URLT, [S], impl=_url)]),
        cel.FunctionDecl(
            "isURL", [cel.Overload("is_url_string", B, [S], impl=lambda s: parse_request_uri(s) is not None)]
        ),
        member("getScheme", "url_get_scheme", S, URLT, lambda u: urlsplit(u.value).scheme),
        member("getHost", "url_get_host", S, URLT, _host),
        member("getHostname", "url_get_hostname", S, URLT, _hostname),
        member("getPort", "url_get_port", S, URLT, _port),
        member("getEscapedPath", "url_get_escaped_path", S, URLT, lambda u: urlsplit(u.value).path),
        member("getQuery", "url_get_query", T.Map(S, T.List(S)), URLT, _query),
        cel.FunctionDecl(
            "ip",
            [
                cel.Overload("string_to_ip", IPT, [S], impl=_ip),
                cel.Overload("cidr_ip", IPT, [CIDRT], is_member=m, impl=_cidr_ip),
            ],
        ),
        cel.FunctionDecl("isIP", [cel.Overload("is_ip", B, [S], impl=lambda s: _parse_ip(s) is not None)]),
        cel.FunctionDecl(
            "ip.isCanonical",
            [
                cel.Overload(
                    "ip_is_canonical",
                    B,
                    [S],
                    impl=lambda s: _parse_ip(s) is not None and str(_parse_ip(s)) == s,
                )
            ],
        ),
        member("family", "ip_family", INT, IPT, lambda x: _addr(x).version),
        member("isUnspecified", "ip_is_unspecified", B, IPT, lambda x: _addr(x).is_unspecified),
        member("isLoopback", "ip_is_loopback", B, IPT, lambda x: _addr(x).is_loopback),
        member(
            "isLinkLocalMulticast",
            "ip_is_link_local_multicast",
            B,
            IPT,
            lambda x: _addr(x).is_multicast and _link_local_mc(x),
        ),
        member("isLinkLocalUnicast", "ip_is_link_local_unicast", B, IPT, lambda x: _addr(x).is_link_local),
        member("isGlobalUnicast", "ip_is_global_unicast", B, IPT, _global_unicast),
        cel.FunctionDecl("cidr", [cel.Overload("string_to_cidr", CIDRT, [S], impl=_cidr)]),
        cel.FunctionDecl(
            "isCIDR", [cel.Overload("is_cidr", B, [S], impl=lambda s: _parse_cidr(s) is not None)]
        ),
        cel.FunctionDecl(
            "containsIP",
            [
                cel.Overload("cidr_contains_ip_ip", B, [CIDRT, IPT], is_member=m, impl=_contains_ip),
                cel.Overload("cidr_contains_ip_string", B, [CIDRT, S], is_member=m, impl=_contains_ip),
            ],
        ),
        cel.FunctionDecl(
            "containsCIDR",
            [
                cel.Overload("cidr_contains_cidr", B, [CIDRT, CIDRT], is_member=m, impl=_contains_cidr),
                cel.Overload("cidr_contains_cidr_string", B, [CIDRT, S], is_member=m, impl=_contains_cidr),
            ],
        ),
        member("masked", "cidr_masked", CIDRT, CIDRT, lambda c: types.CIDR(value=str(_net(c)))),
        member("prefixLength", "cidr_prefix_length", INT, CIDRT, lambda c: _net(c).prefixlen),
    ]


def _cidr_ip(c: Any) -> Any:
    return types.IP(value=str(ipaddress.ip_address(c.value.partition("/")[0])))


def _link_local_mc(x: Any) -> bool:
    a = _addr(x)
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.ip_network("224.0.0.0/24")
    return (int(a) >> 112) & 0xFF0F == 0xFF02
