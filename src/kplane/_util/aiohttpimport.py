"""Importing aiohttp without OpenSSL parsing the whole system CA bundle.

aiohttp builds a verifying client SSL context when it is imported. OpenSSL loads its default CA
*file* eagerly (every certificate of the bundle parsed: ~40 ms and ~2 MiB that stay resident),
while its default CA *directory* is read lazily, one hashed file per lookup. kplane's servers never
use that context and its clients build their own from the kubeconfig, so the file is hidden for the
duration of that one import (``SSL_CERT_FILE`` pointed at an empty file).

In a library (the client stack, loaded into someone else's process) the user's own aiohttp code
may verify with that default context, so the file is hidden only when nothing changes for it: the
default CA directory holds hashed certificates and the file (``SSL_CERT_FILE`` or OpenSSL's
default) lies in that same directory, as the bundle ``update-ca-certificates`` writes beside the
hashed links it makes from the same certificates (Debian, Ubuntu). An entry point (``kplane serve``)
hides it unconditionally.
"""

from __future__ import annotations

import os
import ssl
import sys
import types


def import_aiohttp(*, entry_point: bool = False) -> types.ModuleType:
    """aiohttp, imported (if not yet) with the CA file hidden when that is safe (above).

    Modules that need aiohttp at import time take it from here, typed by a normal import under
    ``TYPE_CHECKING``::

        if TYPE_CHECKING:
            import aiohttp
        else:
            aiohttp = aiohttpimport.import_aiohttp()
    """
    if "aiohttp" not in sys.modules:
        saved = os.environ.get("SSL_CERT_FILE")
        if entry_point or _bundle_beside_hashed_dir(saved):
            os.environ["SSL_CERT_FILE"] = os.devnull
            try:
                import aiohttp
            finally:
                if saved is None:
                    del os.environ["SSL_CERT_FILE"]
                else:
                    os.environ["SSL_CERT_FILE"] = saved
    import aiohttp

    return aiohttp


def _bundle_beside_hashed_dir(cafile: str | None) -> bool:
    """True when OpenSSL's default CA directory holds ``<hash>.0`` certificate links and the CA
    file (``cafile``, else OpenSSL's default) is in that directory."""
    paths = ssl.get_default_verify_paths()
    capath = os.environ.get("SSL_CERT_DIR") or paths.openssl_capath
    cafile = cafile or paths.openssl_cafile
    try:
        if os.path.dirname(os.path.realpath(cafile)) != os.path.realpath(capath):
            return False
        with os.scandir(capath) as entries:
            return any(e.name.endswith(".0") for e in entries)
    except OSError:
        return False
