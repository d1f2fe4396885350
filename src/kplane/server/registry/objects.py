"""What crosses the registry's boundary, as pure functions: checking a request object's type,
converting custom resources between served and storage versions, mapping storage failures to API
errors, and the timestamps the registry stamps."""

from __future__ import annotations

import datetime
from typing import Any

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.builtin import conversion, eventversions
from kplane.api.catalog import ResourceRecord
from kplane.api.gvk import GroupVersion
from kplane.server import storage

Object = dict[str, Any]

_last_second: tuple[int, str] = (-1, "")


def rfc3339(clock: Clock, later: int = 0) -> str:
    """The clock's time (plus ``later`` seconds) as RFC 3339 seconds (``2026-11-21T05:43:00Z``);
    the current second is formatted once."""
    global _last_second
    now = clock.now()
    if later:
        return (now + datetime.timedelta(seconds=later)).strftime("%Y-%m-%dT%H:%M:%SZ")
    second = int(now.timestamp())
    if second != _last_second[0]:
        _last_second = (second, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_second[1]


NO_SPACE_MESSAGE = "etcdserver: mvcc: database space exceeded"


def storage_error(record: ResourceRecord, name: str, err: storage.StorageError) -> errors.APIError:
    """Map a storage failure to the API error users see."""
    gr = record.group_resource
    if isinstance(err, storage.KeyNotFound):
        return errors.not_found(gr, name)
    if isinstance(err, storage.KeyExists):
        return errors.already_exists(gr, name)
    if isinstance(err, storage.PreconditionFailed):
        # storage/interfaces.go Preconditions.Check, wrapped in a StorageError (storage/errors.go)
        # whose key is the etcd key and whose ResourceVersion is never set.
        what = "UID" if err.what == "uid" else "ResourceVersion"
        why = (
            f"StorageError: invalid object, Code: 4, Key: {etcd_key(record, err.key)}, ResourceVersion: 0, "
            f"AdditionalErrorMsg: Precondition failed: {what} in precondition: {err.expected}, "
            f"{what} in object meta: {err.actual}"
        )
        return errors.conflict(gr, name, why)
    return backend_error(err) or errors.InternalError(f"Internal error occurred: {err}")


def backend_error(err: storage.StorageError) -> errors.APIError | None:
    """The API error for a failure of the store itself (full, unreachable, slow, revision out of
    range), whatever the resource; None for the others."""
    if isinstance(err, storage.NoSpace):
        # What kube-apiserver answers when etcd raises its NOSPACE alarm: the etcd client's error,
        # not a Status, so responsewriters.ErrorToAPIStatus makes it a 500 with no reason.
        return errors.APIError(NO_SPACE_MESSAGE, code=500, reason="")
    if isinstance(err, storage.Unavailable):
        # etcd's own error (e.g. "etcdserver: request timed out"): like NoSpace, not a Status, so
        # kube-apiserver answers a 500 carrying the message alone.
        return errors.APIError(str(err), code=500, reason="")
    if isinstance(err, storage.Timeout):
        # endpoints/handlers/finisher.go: a request that outlives its context becomes
        # NewTimeoutError("request did not complete within requested timeout - " + ctx.Err(), 0).
        return errors.Timeout(
            f"Timeout: request did not complete within requested timeout - {err}", details={}
        )
    if isinstance(err, storage.Expired):
        return errors.Gone(str(err))
    if isinstance(err, storage.TooLargeRevision):
        return errors.Timeout(
            str(err),
            details={
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
            },
            retry_after=1,
        )
    return None


def converts(record: ResourceRecord) -> bool:
    """True when objects of ``record`` may be stored at another version than the one served."""
    return (
        record.custom
        or record.storage_group is not None
        or (bool(record.storage_version) and record.storage_version != record.version)
    )


# kube-apiserver's etcd layout: /registry/<resource>/[<namespace>/]<name>, with these historical
# prefixes (kubeapiserver/default_storage_factory_builder.go specialDefaultResourcePrefixes); the
# apiextensions and apiregistration servers and custom resources put the group first.
_ETCD_PREFIXES = {
    ("", "replicationcontrollers"): "controllers",
    ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("networking.k8s.io", "ingresses"): "ingress",
}
_GROUP_FIRST = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})


def etcd_key(record: ResourceRecord, key: str) -> str:
    """The key kube-apiserver would store the object of storage key ``key`` under (it appears in
    upstream's storage error messages)."""
    rest = key[len(record.key_prefix) :] if key.startswith(record.key_prefix) else key
    prefix = _ETCD_PREFIXES.get((record.group, record.plural), record.plural)
    if record.custom or record.group in _GROUP_FIRST:
        prefix = f"{record.group}/{record.plural}"
    return f"/registry/{prefix}/{rest}"


def to_version(record: ResourceRecord, obj: Object) -> Object:
    """``obj`` as served at ``record``'s version. Custom resources convert with strategy None (only
    ``apiVersion`` changes); built-in kinds served in several versions convert field by field
    (``api/builtin/conversion``). Returns ``obj`` itself when nothing changes, else a new object."""
    if obj.get("apiVersion") == record.api_version or not converts(record):
        return obj
    if record.custom:
        return {**obj, "apiVersion": record.api_version}
    if record.storage_group is not None:
        return eventversions.convert(obj, record.api_version)
    return conversion.convert(record.group, record.kind, obj, record.version)


def to_storage(record: ResourceRecord, obj: Object) -> Object:
    """``obj`` as persisted: at the record's storage version (custom resources: in place)."""
    if record.storage_group is not None:
        return eventversions.convert(
            obj, GroupVersion(record.storage_group, record.storage_version).api_version
        )
    if not record.storage_version or record.storage_version == record.version:
        return obj
    if record.custom:
        obj["apiVersion"] = f"{record.group}/{record.storage_version}"
        return obj
    return conversion.convert(record.group, record.kind, obj, record.storage_version)


def check_type(record: ResourceRecord, obj: Object) -> None:
    """Fill a missing kind/apiVersion from the URL; refuse ones that name another type (400)."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if api_version in (None, ""):
        obj["apiVersion"] = record.api_version
    elif api_version != record.api_version:
        raise errors.BadRequest(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({record.api_version})"
        )
    if kind in (None, ""):
        obj["kind"] = record.kind
    elif kind != record.kind:
        raise errors.BadRequest(
            f'{record.kind} in version "{record.version}" cannot be handled as a {record.kind}: '
            f"the kind in the data ({kind}) does not match the expected kind ({record.kind})"
        )
