"""A full disk: clean Statuses, reads and deletes keep working, space comes back, nothing acknowledged
is lost, and a start on a full disk says what failed.

The store lives on a small tmpfs mounted in a private mount namespace (``unshare -m``) held by a
``sleep`` process; the servers run inside it through ``nsenter``, and the test reaches its files
through ``/proc/<holder>/root``. Mounting needs privileges: where it is refused the test is skipped.

Upstream has no full-disk path of its own: etcd raises its NOSPACE alarm, after which it accepts
only reads and deletes, and kube-apiserver passes the etcd client's error through
``responsewriters.ErrorToAPIStatus`` (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/
responsewriters/status.go), which is not a Status error, so the answer is a 500 with no reason and
the error's text, "etcdserver: mvcc: database space exceeded" (etcd api/v3rpc/rpctypes ErrNoSpace).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import Server, serve_command, start_server
from tests.e2e.helpers import Kube, cm_path, configmap

TMPFS_MIB = 64
BLOB = 100_000  # bytes of data per ConfigMap
NS = "default"
NO_SPACE = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "etcdserver: mvcc: database space exceeded",
    "code": 500,
}


@dataclass
class Mount:
    """A tmpfs at ``path`` inside the mount namespace of process ``holder``."""

    holder: subprocess.Popen[bytes]
    path: Path

    @property
    def prefix(self) -> tuple[str, ...]:
        return ("nsenter", "-t", str(self.holder.pid), "-m", "--")

    def outside(self, path: Path) -> Path:
        """``path`` (inside the namespace) as this process can reach it."""
        return Path(f"/proc/{self.holder.pid}/root{path}")

    def free_bytes(self) -> int:
        st = os.statvfs(self.outside(self.path))
        return st.f_bavail * st.f_frsize


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("unshare/nsenter not installed: the disk-full test needs a private tmpfs mount")
    path = tmp_path / "small-disk"
    path.mkdir()
    holder = subprocess.Popen(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            f'mount -t tmpfs -o size={TMPFS_MIB}m,mode=0700 tmpfs "{path}"'
            " && echo mounted && exec sleep 3600",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert holder.stdout is not None
    if holder.stdout.readline().strip() != b"mounted":
        holder.kill()
        _, err = holder.communicate(timeout=10)
        pytest.skip(f"mounting a tmpfs is not allowed here ({err.decode().strip()}): disk-full test skipped")
    try:
        yield Mount(holder, path)
    finally:
        holder.kill()  # the namespace, and its tmpfs, go with its last process
        holder.wait(10)


def _start(mount: Mount, data_dir: Path, log: Path) -> tuple[Server, Kube]:
    srv = start_server(data_dir, prefix=mount.prefix, log=log)
    api = Kube.from_kubeconfig(mount.outside(srv.kubeconfig), log.parent / f"client-{srv.proc.pid}")
    return srv, api


def _blob(name: str) -> str:
    return (name * (BLOB // len(name) + 1))[:BLOB]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_full_disk(tmpfs: Mount, tmp_path: Path) -> None:
    """Writes on a full disk get upstream's NOSPACE Status (logged once, no traceback); reads and
    deletes keep working; deleting gives space back and writes resume; after a restart every
    acknowledged write is there; the store's files are owner-only."""
    data_dir = tmpfs.path / "data"
    log = tmp_path / "server.log"
    srv, api = _start(tmpfs, data_dir, log)
    acked: dict[str, str] = {}
    try:
        refused = 0
        for i in range(2 * TMPFS_MIB * 1_000_000 // BLOB):
            name = f"cm{i}"
            resp = api.post(cm_path(NS), configmap(name, NS, data={"b": _blob(name)}))
            if resp.status == 201:
                acked[name] = _blob(name)
                continue
            assert resp.status == 500 and resp.json() == NO_SPACE, (resp.status, resp.body)
            refused += 1
            if refused == 5:
                break
        assert refused == 5 and len(acked) > 100, (refused, len(acked))

        # Updates are refused the same way; reads go on.
        some = next(iter(acked))
        patch = api.patch(cm_path(NS, some), {"data": {"b": "changed"}})
        assert patch.status == 500 and patch.json() == NO_SPACE, patch.body
        assert api.ok("GET", cm_path(NS, some))["data"]["b"] == acked[some]
        listed = api.ok("GET", cm_path(NS))
        assert {o["metadata"]["name"] for o in listed["items"]} >= set(acked)

        # Deletes work, and give space back.
        free_before = tmpfs.free_bytes()
        doomed = list(acked)[: len(acked) // 2]
        for name in doomed:
            assert api.delete(cm_path(NS, name)).status == 200, name
            del acked[name]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and tmpfs.free_bytes() < free_before + len(doomed) * BLOB // 2:
            time.sleep(0.2)
        assert tmpfs.free_bytes() >= free_before + len(doomed) * BLOB // 2, (free_before, tmpfs.free_bytes())

        # With space back, writes resume.
        resp = api.post(cm_path(NS), configmap("after", NS, data={"b": _blob("after")}))
        assert resp.status == 201, resp.body
        acked["after"] = _blob("after")

        text = log.read_text()
        assert text.count("creates and updates are refused") == 1, text
        assert "Traceback" not in text, text
        modes = {
            p.name: p.stat().st_mode & 0o777
            for p in tmpfs.outside(data_dir).iterdir()
            if p.name.startswith("state.db") or p.name == "kubeconfig"
        }
        assert {"state.db", "state.db-wal", "state.db-reserve", "kubeconfig"} <= modes.keys(), modes
        assert set(modes.values()) == {0o600}, modes
    finally:
        srv.stop()

    srv, api = _start(tmpfs, data_dir, log)
    try:
        listed = api.ok("GET", cm_path(NS))
        stored = {o["metadata"]["name"]: o["data"]["b"] for o in listed["items"] if "b" in o.get("data", {})}
        assert stored == acked
    finally:
        srv.stop()


def test_start_on_a_full_disk_says_what_failed(tmpfs: Mount, tmp_path: Path) -> None:
    """A first start on a disk with no room left reports the file it could not write, not "cannot listen"."""
    filler = tmpfs.outside(tmpfs.path / "filler")
    with open(filler, "wb") as f, contextlib.suppress(OSError):
        chunk = b"\0" * (1 << 20)
        while True:
            f.write(chunk)
            f.flush()
    data_dir = tmpfs.path / "data"
    proc = subprocess.run(
        [*tmpfs.prefix, *serve_command(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "No space left on device" in proc.stderr or "no space left for" in proc.stderr, proc.stderr
    assert proc.stderr.startswith("kplane: cannot start: "), proc.stderr
    assert "cannot listen" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
