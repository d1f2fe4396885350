"""Rules for ``metadata`` that hold for every kind: names, labels, annotations, system fields.

Messages match upstream's apimachinery validation so users see familiar errors.
"""

from __future__ import annotations

import os
import re
import secrets
from typing import Any

from kplane.api import errors, names

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

NAME_RULES = {
    "subdomain": (_DNS1123_SUBDOMAIN, 253, _SUBDOMAIN_MSG),
    "label": (_DNS1123_LABEL, 63, _LABEL_MSG),
}
NAME_RULES["dns1035"] = (_DNS1035_LABEL, 63, _DNS1035_MSG)
NAME_RULES["path"] = (re.compile(r"^[^/%]+$"), 0, "may not contain '/' or '%'")

# ObjectMeta fields tagged ``omitempty`` that a client can send empty: upstream decodes every write
# into the typed ObjectMeta (custom resources too, through schemaobjectmeta.Coerce), so an empty
# map, list or string, or null, is simply not there when the object is stored and served.
_OMIT_EMPTY = frozenset(
    {"labels", "annotations", "finalizers", "ownerReferences", "managedFields", "generateName", "selfLink"}
)
_EMPTY: tuple[Any, ...] = (None, {}, [], "")


def drop_empty(meta: dict[str, Any]) -> None:
    """Remove the ``omitempty`` fields of ``meta`` that are empty or null (in place)."""
    for key in _OMIT_EMPTY.intersection(meta):  # the few present, not every candidate
        if meta[key] in _EMPTY:
            del meta[key]


_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATE_PREFIX = 58


def generate_name(prefix: str) -> str:
    """``prefix`` (truncated to 58 characters) plus five random characters, as upstream."""
    suffix = "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
    return prefix[:MAX_GENERATE_PREFIX] + suffix


_UUID_VERSION_4 = bytes((b & 0x0F) | 0x40 for b in range(256))  # byte 6: version 4
_UUID_RFC_4122 = bytes((b & 0x3F) | 0x80 for b in range(256))  # byte 8: the RFC 4122 variant
_uid_pool = ""  # the hex of 256 UUIDs' bytes, version and variant already set
_uid_next = 0


def new_uid() -> str:
    """A random (version 4, RFC 4122 variant) UUID string. Random bytes come from the OS 4 KiB at
    a time, their version and variant bits set and hex-encoded in one pass each: one system call
    and no per-byte Python work per 256 UIDs."""
    global _uid_pool, _uid_next
    i = _uid_next
    if i >= len(_uid_pool):
        raw = bytearray(os.urandom(4096))
        raw[6::16] = raw[6::16].translate(_UUID_VERSION_4)
        raw[8::16] = raw[8::16].translate(_UUID_RFC_4122)
        _uid_pool, i = raw.hex(), 0
    _uid_next = i + 32
    h = _uid_pool
    return (
        f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-{h[i + 12 : i + 16]}-{h[i + 16 : i + 20]}-{h[i + 20 : i + 32]}"
    )


def validate_name(path: str, name: str, rule: str) -> list[errors.FieldError]:
    """Check ``name`` against a naming rule (``subdomain``, ``label``, ``dns1035``, ``path``)."""
    if name in (".", ".."):
        return [errors.invalid(path, name, f"may not be '{name}'")]
    regex, max_len, msg = NAME_RULES[rule]
    out: list[errors.FieldError] = []
    if max_len and len(name) > max_len:
        out.append(errors.invalid(path, name, f"must be no more than {max_len} characters"))
    if not regex.match(name):
        out.append(errors.invalid(path, name, msg))
    return out


def validate_qualified_name(path: str, key: str) -> list[errors.FieldError]:
    """A label or annotation key: ``[prefix/]name`` with a DNS-subdomain prefix (``labels``' rules)."""
    return [errors.invalid(path, key, why) for why in names.qualified_name_errors(key)]


def validate_metadata(meta: dict[str, Any], *, name_rule: str) -> list[errors.FieldError]:
    """Shape and syntax of ``metadata`` on create and update (names, labels, annotations, owners)."""
    errs: list[errors.FieldError] = []
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errs.append(errors.required("metadata.name", "name or generateName is required"))
    else:
        errs.extend(validate_name("metadata.name", name, name_rule))
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            errs.append(errors.invalid("metadata.labels", labels, "must be a map of strings"))
        else:
            for k, v in labels.items():
                if not names.valid_qualified_name(k):
                    errs.extend(validate_qualified_name("metadata.labels", k))
                if not isinstance(v, str):
                    errs.append(errors.invalid(f"metadata.labels[{k}]", v, "must be a string"))
                elif not names.valid_label_value(v):
                    errs.extend(
                        errors.invalid("metadata.labels", v, why) for why in names.label_value_errors(v)
                    )
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            errs.append(errors.invalid("metadata.annotations", annotations, "must be a map of strings"))
        else:
            total = 0
            for k, v in annotations.items():
                if not names.valid_qualified_name(k.lower()):
                    errs.extend(validate_qualified_name("metadata.annotations", k.lower()))
                if not isinstance(v, str):
                    errs.append(errors.invalid(f"metadata.annotations[{k}]", v, "must be a string"))
                else:
                    total += len(k) + len(v)
            if total > 256 * 1024:
                errs.append(
                    errors.FieldError(
                        "FieldValueTooLong", "metadata.annotations", "must have at most 262144 bytes", None
                    )
                )
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)
    ):
        errs.append(errors.invalid("metadata.finalizers", finalizers, "must be a list of strings"))
    owners = meta.get("ownerReferences")
    if owners is not None:
        if not isinstance(owners, list):
            errs.append(errors.invalid("metadata.ownerReferences", owners, "must be a list"))
        else:
            controllers = 0
            for i, ref in enumerate(owners):
                p = f"metadata.ownerReferences[{i}]"
                if not isinstance(ref, dict):
                    errs.append(errors.invalid(p, ref, "must be an object"))
                    continue
                for req in ("apiVersion", "kind", "name", "uid"):
                    if not ref.get(req):
                        errs.append(errors.required(f"{p}.{req}"))
                if ref.get("controller") is True:
                    controllers += 1
            if controllers > 1:
                errs.append(
                    errors.invalid(
                        "metadata.ownerReferences",
                        owners,
                        "Only one reference can have Controller set to true",
                    )
                )
    return errs
