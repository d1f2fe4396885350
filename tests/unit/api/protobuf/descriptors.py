"""Message classes of the official ``protobuf`` runtime, built from the descriptors inside kubectl.

An independent reader of kplane's protobuf replies: the descriptors are upstream's own (the
gzipped ``FileDescriptorProto`` each ``generated.proto`` registers in a Go binary), the parser is
Google's, and nothing of kplane's encoder or decoder is involved beyond locating the descriptors.
"""

from __future__ import annotations

import functools
import pathlib
from typing import Any

from kplane.api.protobuf import _gen

KUBECTL = pathlib.Path("/usr/lib/google-cloud-sdk/bin/kubectl.1.32")


@functools.cache
def _pool() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool

    files = _gen._descriptors(KUBECTL.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        proto = descriptor_pb2.FileDescriptorProto.FromString(files[name])
        # gogo.proto (options only) is not in the binary; its options stay unknown fields.
        deps = [d for d in proto.dependency if d in files]
        for dep in deps:
            add(dep)
        del proto.dependency[:]
        proto.dependency.extend(deps)
        pool.Add(proto)
        added.add(name)

    for name in files:
        add(name)
    return pool


def message_class(table_name: str) -> Any:
    """The class of a message named as in ``_tables`` (``core.v1.Pod``, ``apis.meta.v1.Status``)."""
    from google.protobuf import message_factory

    prefix = (
        "k8s.io.apimachinery.pkg."
        if table_name.split(".")[0] in ("apis", "runtime", "util")
        else "k8s.io.api."
    )
    if table_name.startswith("api.resource."):
        prefix = "k8s.io.apimachinery.pkg."
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(prefix + table_name))
