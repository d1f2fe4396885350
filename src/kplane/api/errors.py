"""The one error tree of kplane and its mapping to and from Kubernetes ``Status`` objects.

Server code raises these; the HTTP layer turns them into ``Status`` bodies with ``to_status``. Client
code turns a server's ``Status`` back into the same classes with ``from_status``, so both sides
agree on one vocabulary::

    APIError (code, reason, message, details)
    ├── BadRequest            400 BadRequest
    ├── Unauthorized          401 Unauthorized
    ├── Forbidden             403 Forbidden
    ├── NotFound              404 NotFound
    ├── MethodNotAllowed      405 MethodNotAllowed
    ├── NotAcceptable         406 NotAcceptable
    ├── Conflict              409 Conflict
    │   └── AlreadyExists     409 AlreadyExists
    ├── Gone                  410 Expired | Gone
    ├── RequestEntityTooLarge 413 RequestEntityTooLarge
    ├── UnsupportedMediaType  415 UnsupportedMediaType
    ├── Invalid               422 Invalid (details.causes: one per field error)
    ├── TooManyRequests       429 TooManyRequests
    ├── InternalError         500 InternalError
    ├── ServiceUnavailable    503 ServiceUnavailable
    └── Timeout               504 Timeout

Messages follow upstream's ``k8s.io/apimachinery/pkg/api/errors`` wording, because users and
tools match on them. A ``Status`` carries ``details`` exactly when upstream's error has them: an
error built with ``details=None`` sends none, one built with ``details={}`` sends ``"details": {}``
(kubectl dereferences it), and keys always come in upstream's order (name, group, kind, uid,
causes, retryAfterSeconds). ``TerminalError`` is a marker mixin for failures a controller must not retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kplane.api.gvk import GroupResource

Status = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Cause:
    """One field error: ``reason`` is a ``FieldValue*`` type, ``field`` a path like ``spec.replicas``."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


# Field error types and their human strings (apimachinery util/validation/field).
FIELD_ERROR_TEXT = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}


class GoStrings(tuple[str, ...]):
    """A ``[]string`` field value: rendered as Go's ``%#v`` prints it (``[]string{"a"}``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return go_strings(self)


def _go_value(value: Any) -> str:
    """Render a value as upstream's field errors do: strings quoted, numbers and bools bare."""
    if isinstance(value, GoStrings):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    return str(value)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(value: str) -> str:
    """A string as Go's ``strconv.Quote`` (``%q``) prints it: ``\\`` and ``"`` escaped, control and
    other non-printable characters as ``\\n``, ``\\x00``, ``\\u200b`` or ``\\U000e0001``."""
    if value.isprintable():
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def go_strings(items: Sequence[str]) -> str:
    """A string list as Go's ``%#v`` prints a ``[]string``: ``[]string{"a", "b"}``, or
    ``[]string(nil)`` when empty."""
    return "[]string{" + ", ".join(go_quote(i) for i in items) + "}" if items else "[]string(nil)"


def aggregate(messages: Sequence[str]) -> str:
    """Messages as ``utilerrors.NewAggregate(errs).Error()`` prints them: one as is, several
    distinct ones in brackets joined by ``, ``, each once."""
    distinct = list(dict.fromkeys(messages))
    return distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"


@dataclass(frozen=True, slots=True)
class FieldError:
    """A validation failure at one field; renders as upstream's ``field.Error``."""

    type: str  # a key of FIELD_ERROR_TEXT
    field: str
    detail: str = ""
    value: Any = None
    has_value: bool = True

    def body(self) -> str:
        text = FIELD_ERROR_TEXT.get(self.type, "Invalid value")
        if self.type in ("FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"):
            out = text
        elif self.has_value:
            out = f"{text}: {_go_value(self.value)}"
        else:
            out = text
        if self.detail:
            out += f": {self.detail}"
        return out

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> Cause:
        return Cause(self.type, self.body(), self.field)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, detail, has_value=False)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, detail, value)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, detail, has_value=False)


def not_supported(path: str, value: Any, allowed: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(f'"{a}"' for a in allowed)
    return FieldError("FieldValueNotSupported", path, detail, value)


class APIError(Exception):
    """An API failure with everything a ``Status`` carries."""

    message: str
    details: dict[str, Any]
    has_details: bool
    code: int
    reason: str
    retry_after: int | None
    default_code: ClassVar[int] = 500
    default_reason: ClassVar[str] = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        code: int | None = None,
        reason: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.has_details = details is not None
        self.code = code if code is not None else self.default_code
        self.reason = reason if reason is not None else self.default_reason
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message

    @property
    def causes(self) -> list[Cause]:
        return [
            Cause(c.get("reason", ""), c.get("message", ""), c.get("field", ""))
            for c in self.details.get("causes", [])
        ]

    def to_status(self) -> Status:
        """The ``Status`` body upstream sends for this error."""
        status: Status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        details = dict(self.details)
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details or self.has_details:
            status["details"] = ordered_details(details)
        status["code"] = self.code
        if not self.reason:  # StatusReasonUnknown: Go's omitempty drops it
            del status["reason"]
        return status


_DETAIL_ORDER = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")


def ordered_details(details: dict[str, Any]) -> dict[str, Any]:
    """``StatusDetails`` keys in the order Go encodes the struct's fields; empty values dropped, as
    their ``omitempty`` tags do."""
    out = {k: details[k] for k in _DETAIL_ORDER if details.get(k)}
    out.update((k, v) for k, v in details.items() if k not in out and v)
    return out


class TerminalError(Exception):
    """Marker mixin: a failure that retrying cannot fix."""


class BadRequest(APIError, TerminalError):
    default_code, default_reason = 400, "BadRequest"


class Unauthorized(APIError):
    default_code, default_reason = 401, "Unauthorized"


class Forbidden(APIError):
    default_code, default_reason = 403, "Forbidden"


class NotFound(APIError):
    default_code, default_reason = 404, "NotFound"


class MethodNotAllowed(APIError, TerminalError):
    default_code, default_reason = 405, "MethodNotAllowed"


class NotAcceptable(APIError, TerminalError):
    default_code, default_reason = 406, "NotAcceptable"


class Conflict(APIError):
    default_code, default_reason = 409, "Conflict"


class AlreadyExists(Conflict):
    default_code, default_reason = 409, "AlreadyExists"


class Gone(APIError):
    default_code, default_reason = 410, "Expired"


class RequestEntityTooLarge(APIError, TerminalError):
    default_code, default_reason = 413, "RequestEntityTooLarge"


class UnsupportedMediaType(APIError, TerminalError):
    default_code, default_reason = 415, "UnsupportedMediaType"


class Invalid(APIError, TerminalError):
    default_code, default_reason = 422, "Invalid"


class TooManyRequests(APIError):
    default_code, default_reason = 429, "TooManyRequests"


class InternalError(APIError):
    default_code, default_reason = 500, "InternalError"


class ServiceUnavailable(APIError):
    default_code, default_reason = 503, "ServiceUnavailable"


class Timeout(APIError):
    default_code, default_reason = 504, "Timeout"


_BY_REASON: dict[str, type[APIError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "NotAcceptable": NotAcceptable,
    "Conflict": Conflict,
    "AlreadyExists": AlreadyExists,
    "Expired": Gone,
    "Gone": Gone,
    "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": Timeout,
}
_BY_CODE: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    406: NotAcceptable,
    409: Conflict,
    410: Gone,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


def from_status(status: Status, *, http_code: int | None = None) -> APIError:
    """Rebuild the typed error from a ``Status`` body (client side). Unknown reasons map by code."""
    code = int(status.get("code") or http_code or 500)
    reason = str(status.get("reason") or "")
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code) or APIError
    details = status.get("details")
    retry = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    return cls(
        str(status.get("message") or reason or f"HTTP {code}"),
        details=dict(details) if isinstance(details, dict) else None,
        code=code,
        reason=reason or cls.default_reason,
        retry_after=int(retry) if isinstance(retry, int) else None,
    )


# Constructors with upstream's exact messages.


def _details(gr: GroupResource, name: str) -> dict[str, Any]:
    return ordered_details({"name": name, "group": gr.group, "kind": gr.resource})


def not_found(gr: GroupResource, name: str) -> NotFound:
    return NotFound(f'{gr} "{name}" not found', details=_details(gr, name))


def already_exists(gr: GroupResource, name: str) -> AlreadyExists:
    return AlreadyExists(f'{gr} "{name}" already exists', details=_details(gr, name))


def conflict(gr: GroupResource, name: str, why: str) -> Conflict:
    return Conflict(f'Operation cannot be fulfilled on {gr} "{name}": {why}', details=_details(gr, name))


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def modified_conflict(gr: GroupResource, name: str) -> Conflict:
    """The 409 of an update whose resourceVersion is not the stored one."""
    return conflict(gr, name, OBJECT_MODIFIED)


def invalid_object(kind: str, group: str, name: str, errs: list[FieldError]) -> Invalid:
    """422 with one cause per field error; note ``kind`` (not resource) as upstream does."""
    qualified = f"{kind}.{group}" if group else kind
    text = str(errs[0]) if len(errs) == 1 else "[" + ", ".join(str(e) for e in errs) + "]"
    causes = [e.cause().to_dict() for e in errs]
    details = ordered_details({"name": name, "group": group, "kind": kind, "causes": causes})
    return Invalid(f'{qualified} "{name}" is invalid: {text}', details=details)


def resource_not_found() -> NotFound:
    """404 for a path that names no resource (upstream's generic server response: empty details)."""
    return NotFound("the server could not find the requested resource", details={})


def method_not_allowed() -> MethodNotAllowed:
    """405 for a verb the path does not serve (upstream's generic server response: empty details)."""
    return MethodNotAllowed("the server does not allow this method on the requested resource", details={})
