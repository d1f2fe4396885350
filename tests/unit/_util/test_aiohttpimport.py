"""When importing aiohttp may hide the CA file from OpenSSL: where the hashed directory has the same roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from kplane._util import aiohttpimport


def _ca_dir(tmp_path: Path, *, hashed: bool) -> Path:
    d = tmp_path / "certs"
    d.mkdir()
    (d / "ca-certificates.crt").write_text("bundle")
    if hashed:
        (d / "9d04f354.0").symlink_to(d / "ca-certificates.crt")
    return d


def test_bundle_in_hashed_directory_may_be_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundle beside the hashed links it was made with (Debian's layout) is equivalent to the directory."""
    d = _ca_dir(tmp_path, hashed=True)
    monkeypatch.setenv("SSL_CERT_DIR", str(d))
    assert aiohttpimport._bundle_beside_hashed_dir(str(d / "ca-certificates.crt"))


def test_bundle_elsewhere_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundle the user chose outside the directory may hold other roots: it is not hidden."""
    d = _ca_dir(tmp_path, hashed=True)
    own = tmp_path / "corporate.pem"
    own.write_text("other roots")
    monkeypatch.setenv("SSL_CERT_DIR", str(d))
    assert not aiohttpimport._bundle_beside_hashed_dir(str(own))


def test_directory_without_hashed_links_is_not_a_substitute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``<hash>.0`` links OpenSSL finds nothing in the directory: the bundle is kept."""
    d = _ca_dir(tmp_path, hashed=False)
    monkeypatch.setenv("SSL_CERT_DIR", str(d))
    assert not aiohttpimport._bundle_beside_hashed_dir(str(d / "ca-certificates.crt"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "missing"))
    assert not aiohttpimport._bundle_beside_hashed_dir(str(d / "ca-certificates.crt"))
