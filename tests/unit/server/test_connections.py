"""Binding the listener: a busy address is a ListenError naming it (the CLI's "cannot listen on")."""

from __future__ import annotations

import errno
import socket

import pytest

from kplane.server import connections


def test_a_busy_address_is_a_listen_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(connections.ListenError) as info:
            connections.bind("127.0.0.1", port)
    assert info.value.errno == errno.EADDRINUSE
    assert info.value.filename == f"127.0.0.1:{port}"


def test_a_free_port_is_bound_non_blocking_on_loopback() -> None:
    sock = connections.bind("127.0.0.1", 0)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
        assert not sock.getblocking()
    finally:
        sock.close()
