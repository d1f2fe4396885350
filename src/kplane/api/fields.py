"""Field selectors: ``?fieldSelector=`` parsing, matching, and the fields each kind exposes.

Grammar (upstream ``k8s.io/apimachinery/pkg/fields``): terms joined by ``,`` (AND), each
``field=value``, ``field==value`` or ``field!=value``; in values ``\\,``, ``\\=`` and ``\\\\`` escape
``,``, ``=`` and ``\\``, and any other backslash or a bare ``,``/``=`` is an error. Nothing is
trimmed. Only some fields can be selected on, per kind (``SUPPORTED``); a selector on any other
is rejected with 400 ``field label not supported: <field>`` (``validate``). An object's values for
those fields come from ``field_getter``; a missing field has the value ``""``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Fields = Mapping[str, str]
Getter = Callable[[Mapping[str, Any]], dict[str, str]]

_OPERATORS = ("!=", "==", "=")


@dataclass(frozen=True, slots=True)
class Requirement:
    """``field`` equals (``operator`` ``=``) or differs from (``!=``) ``value``."""

    field: str
    operator: str  # "=" or "!="
    value: str

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


class FieldSelector:
    """An AND of field requirements. Immutable; ``str`` is canonical (terms sorted)."""

    __slots__ = ("_checks", "requirements")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(requirements)
        self._checks = tuple((r.field, r.value, r.operator == "=") for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Fields) -> bool:
        """Whether an object with these field values is selected; absent fields count as ``""``."""
        # A plain loop: this runs per object per list, and all() would allocate a generator each time.
        for name, value, equal in self._checks:  # noqa: SIM110
            if (fields.get(name, "") == value) is not equal:
                return False
        return True

    def exact_name(self) -> str | None:
        """The name the selector pins with ``metadata.name=<name>``, if any (enables a point read)."""
        for r in self.requirements:
            if r.field == "metadata.name" and r.operator == "=":
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash(self.requirements)


def parse(text: str) -> FieldSelector:
    """Parse a field selector; ``""`` selects everything. Raises ``ValueError`` on bad syntax."""
    requirements = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        for i in range(len(term)):
            op = next((o for o in _OPERATORS if term.startswith(o, i)), None)
            if op is not None:
                field, raw = term[:i], term[i + len(op) :]
                break
        else:
            raise ValueError(f"invalid selector: '{text}'; can't understand '{term}'")
        requirements.append(Requirement(field, "!=" if op == "!=" else "=", unescape_value(raw)))
    return FieldSelector(requirements)


def _split_terms(text: str) -> list[str]:
    if not text:
        return []
    terms, start, escaped = [], 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def escape_value(value: str) -> str:
    """Escape ``\\``, ``,`` and ``=`` for use as a field selector value."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """Undo ``escape_value``; raises ``ValueError`` on an unknown escape or a bare ``,``/``=``."""
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {ch!r}")
        else:
            out.append(ch)
    if escaped:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


# --- per-kind selectable fields ------------------------------------------------------------------

Key = tuple[str, str]  # (group, kind)

_META = ("metadata.name", "metadata.namespace")

SUPPORTED: dict[Key, tuple[str, ...]] = {
    ("", "Pod"): (
        *_META,
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
        "spec.host",
    ),
    ("", "Node"): (*_META, "spec.unschedulable"),
    ("", "Namespace"): (*_META, "status.phase"),
    ("", "Secret"): (*_META, "type"),
    ("", "Service"): (*_META, "spec.clusterIP", "spec.type"),
    ("", "Event"): (
        *_META,
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    ("", "ReplicationController"): (*_META, "status.replicas"),
    ("apps", "ReplicaSet"): (*_META, "status.replicas"),
    ("batch", "Job"): (*_META, "status.successful"),
    ("certificates.k8s.io", "CertificateSigningRequest"): (*_META, "spec.signerName"),
}
"""Selectable fields per (group, kind); kinds not listed support only ``_META``."""


def supported(group: str, kind: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The fields a selector on this kind may name (``extra``: a CRD's ``selectableFields``)."""
    return (*SUPPORTED.get((group, kind), _META), *extra)


def validate(selector: FieldSelector, group: str, kind: str, extra: Iterable[str] = ()) -> None:
    """Raise ``ValueError("field label not supported: <field>")`` for the first unsupported field."""
    allowed = supported(group, kind, extra)
    for r in selector.requirements:
        if r.field not in allowed:
            raise ValueError(f"field label not supported: {r.field}")


def _dig(obj: Mapping[str, Any], *path: str) -> Any:
    current: Any = obj
    for p in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(p)
    return current


def _text(value: Any) -> str:
    """A field value as upstream formats it: bools ``true``/``false``, numbers in decimal, null ``""``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _meta(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    return {"metadata.name": _text(meta.get("name")), "metadata.namespace": _text(meta.get("namespace"))}


def _pod(obj: Mapping[str, Any]) -> dict[str, str]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ips = status.get("podIPs") or ()
    pod_ip = ips[0].get("ip") if ips and isinstance(ips[0], Mapping) else status.get("podIP")
    node = _text(spec.get("nodeName"))
    return {
        **_meta(obj),
        "spec.nodeName": node,
        "spec.host": node,
        "spec.restartPolicy": _text(spec.get("restartPolicy")),
        "spec.schedulerName": _text(spec.get("schedulerName")),
        "spec.serviceAccountName": _text(spec.get("serviceAccountName")),
        "spec.hostNetwork": _text(bool(spec.get("hostNetwork"))),
        "status.phase": _text(status.get("phase")),
        "status.podIP": _text(pod_ip),
        "status.nominatedNodeName": _text(status.get("nominatedNodeName")),
    }


def _event(obj: Mapping[str, Any]) -> dict[str, str]:
    involved = obj.get("involvedObject") or {}
    reporting = _text(obj.get("reportingComponent"))
    return {
        **_meta(obj),
        **{f"involvedObject.{k}": _text(involved.get(k)) for k in _INVOLVED},
        "reason": _text(obj.get("reason")),
        "reportingComponent": reporting,
        "source": _text(_dig(obj, "source", "component")) or reporting,
        "type": _text(obj.get("type")),
    }


_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def _paths(*fields: tuple[str, tuple[str, ...], Any]) -> Getter:
    """A getter for fields read from fixed paths, with a default for absent values."""

    def get(obj: Mapping[str, Any]) -> dict[str, str]:
        out = _meta(obj)
        for name, path, default in fields:
            value = _dig(obj, *path)
            out[name] = _text(default if value is None else value)
        return out

    return get


_GETTERS: dict[Key, Getter] = {
    ("", "Pod"): _pod,
    ("", "Event"): _event,
    ("", "Node"): _paths(("spec.unschedulable", ("spec", "unschedulable"), False)),
    ("", "Namespace"): _paths(("status.phase", ("status", "phase"), None)),
    ("", "Secret"): _paths(("type", ("type",), None)),
    ("", "Service"): _paths(
        ("spec.clusterIP", ("spec", "clusterIP"), None), ("spec.type", ("spec", "type"), None)
    ),
    ("", "ReplicationController"): _paths(("status.replicas", ("status", "replicas"), 0)),
    ("apps", "ReplicaSet"): _paths(("status.replicas", ("status", "replicas"), 0)),
    ("batch", "Job"): _paths(("status.successful", ("status", "succeeded"), 0)),
    ("certificates.k8s.io", "CertificateSigningRequest"): _paths(
        ("spec.signerName", ("spec", "signerName"), None)
    ),
}


def field_getter(key: Key, *, extra: Iterable[str] = ()) -> Getter:
    """The function giving an object's selectable field values for kind ``key`` = (group, kind).

    ``extra`` adds dotted paths read verbatim (a CRD's ``selectableFields``, e.g. ``spec.color``).
    The getter does not modify the object; every value is a string (missing: ``""``).
    """
    base = _GETTERS.get(key, _meta)
    extras = tuple((name, tuple(name.split("."))) for name in extra)
    if not extras:
        return base

    def get(obj: Mapping[str, Any]) -> dict[str, str]:
        out = base(obj)
        for name, path in extras:
            out[name] = _text(_dig(obj, *path))
        return out

    return get
