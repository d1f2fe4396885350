"""Where container output lives on disk, shared by the simulated kubelet (writer) and the API
server's ``pods/log`` (reader), as a kubelet's ``/var/log/pods`` is shared with its log API.

Layout: ``<root>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log``, one file per container
instance (``restartCount`` is the count while that instance runs). Each line is in the CRI log
format: ``<RFC 3339 nanoseconds timestamp> stdout F <text>``.
"""

from __future__ import annotations

import datetime
from pathlib import Path


def pod_dir(root: Path, namespace: str, pod: str, uid: str) -> Path:
    """The directory holding every container log of one pod (one pod UID)."""
    return root / f"{namespace}_{pod}_{uid}"


def instance_path(root: Path, namespace: str, pod: str, uid: str, container: str, instance: int) -> Path:
    """The log file of one container instance (``instance`` = its restartCount)."""
    return pod_dir(root, namespace, pod, uid) / container / f"{instance}.log"


def format_time(when: datetime.datetime) -> str:
    """A CRI log timestamp: RFC 3339 with nanoseconds, UTC (``2026-11-25T00:00:00.123456000Z``)."""
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


def encode_line(when: datetime.datetime, text: str) -> bytes:
    """One CRI log line for ``text`` (without its newline) written at ``when``."""
    return f"{format_time(when)} stdout F {text}\n".encode()


def parse_line(line: bytes) -> tuple[str, bytes]:
    """(timestamp, text with its newline) of one CRI log line; a malformed line is all text."""
    parts = line.split(b" ", 3)
    if len(parts) != 4:
        return "", line
    return parts[0].decode("ascii", "replace"), parts[3]
