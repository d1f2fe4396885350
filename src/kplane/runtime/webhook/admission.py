"""Admission webhooks: ``Defaulter[T]`` and ``Validator[T]`` over AdmissionReview v1, as controller-runtime.

A handler turns one ``AdmissionRequest`` into one ``AdmissionResponse`` (the HTTP layer, with the
review envelope, is ``server``). Behaviour of controller-runtime's ``defaulterForType`` and
``validatorForType`` (CR pkg/webhook/admission/defaulter_custom.go, validator_custom.go,
response.go; reference/controllers.md §6.6):

* objects are decoded into ``T``: a msgspec Struct type (kplane's models, CRD types) or ``dict``;
  a body that does not decode answers 400 (``allowed: false``, ``status.code: 400``);
* defaulting: DELETE is allowed untouched; otherwise ``default(obj)`` runs on the decoded object and
  the response carries the JSON patch from the request's raw object to the result (``patchType:
  JSONPatch``, base64 on the wire), or no patch when nothing changed. ``remove`` operations that only
  come from ``T`` dropping unknown or omitted fields are left out (upstream's default; pass
  ``remove_unknown_or_omitable_fields=True`` to keep them);
* validation: CREATE → ``validate_create(obj)``, UPDATE → ``validate_update(old, new)``, DELETE →
  ``validate_delete(old)`` (the object being deleted comes as ``oldObject``), CONNECT is allowed;
  each returns warnings (a list of strings, or None);
* denial: raise. A ``kplane.api.errors.APIError`` keeps its Status (code, reason, details); any
  other exception is 403 ``Forbidden`` with the exception's text as message. Warnings returned
  before the exception are lost with it, as a Go function returning an error returns no warnings
  worth keeping; ``Denied(message, warnings=[...])`` carries warnings with the denial.
* a completed response echoes the request's ``uid`` and always has ``status.code`` (200 when
  allowed), as ``Response.Complete`` does.

Methods may be plain or ``async``.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import orjson

from kplane.api import errors
from kplane.api.patch import jsondiff

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

Warnings = Sequence[str] | None


@dataclasses.dataclass
class AdmissionRequest:
    """The ``request`` of an AdmissionReview (fields under their Go JSON names in ``raw``)."""

    uid: str
    operation: str
    object: Any
    old_object: Any
    raw: dict[str, Any]

    @classmethod
    def from_dict(cls, request: dict[str, Any]) -> AdmissionRequest:
        uid = request.get("uid")
        operation = request.get("operation")
        if not isinstance(uid, str) or not isinstance(operation, str):
            raise ValueError("request.uid and request.operation must be strings")
        return cls(uid, operation, request.get("object"), request.get("oldObject"), request)

    @property
    def name(self) -> str:
        return str(self.raw.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.raw.get("namespace", ""))

    @property
    def dry_run(self) -> bool:
        return bool(self.raw.get("dryRun", False))

    @property
    def user_info(self) -> dict[str, Any]:
        info = self.raw.get("userInfo")
        return info if isinstance(info, dict) else {}


@dataclasses.dataclass
class AdmissionResponse:
    """The ``response`` of an AdmissionReview; ``to_dict`` writes it as Go's encoder would."""

    allowed: bool
    status: dict[str, Any] = dataclasses.field(default_factory=dict)
    patch: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    uid: str = ""

    def complete(self, uid: str) -> AdmissionResponse:
        """Echo ``uid`` and default ``status.code`` to 200 (upstream's ``Response.Complete``)."""
        self.uid = uid
        self.status = {"metadata": {}, **{k: v for k, v in self.status.items() if k != "metadata"}}
        if not self.status.get("code"):
            self.status["code"] = 200
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if self.status:
            out["status"] = self.status
        if self.patch:
            out["patch"] = base64.b64encode(orjson.dumps(self.patch)).decode()
            out["patchType"] = "JSONPatch"
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def allowed(warnings: Warnings = None) -> AdmissionResponse:
    """``allowed: true`` with ``status.code`` 200 (upstream ``Allowed("")``)."""
    return AdmissionResponse(True, {"metadata": {}, "code": 200}, warnings=list(warnings or ()))


def denied(message: str, warnings: Warnings = None) -> AdmissionResponse:
    """``allowed: false``, 403 Forbidden with ``message`` (upstream ``Denied``)."""
    status: dict[str, Any] = {"metadata": {}, "code": 403, "reason": "Forbidden"}
    if message:
        status["message"] = message
    return AdmissionResponse(False, status, warnings=list(warnings or ()))


def errored(code: int, message: str) -> AdmissionResponse:
    """``allowed: false`` with ``code`` and ``message`` and no reason (upstream ``Errored``)."""
    return AdmissionResponse(False, {"metadata": {}, "code": code, "message": message})


class Denied(Exception):
    """Raise from a defaulter or validator to refuse with a message (403) and optional warnings."""

    def __init__(self, message: str, *, warnings: Warnings = None) -> None:
        super().__init__(message)
        self.message = message
        self.warnings = list(warnings or ())


def refusal(err: Exception, warnings: Warnings = None) -> AdmissionResponse:
    """The response for a defaulter's or validator's exception (module docstring)."""
    if isinstance(err, errors.APIError):
        status = {k: v for k, v in err.to_status().items() if k not in ("kind", "apiVersion")}
        return AdmissionResponse(False, status, warnings=list(warnings or ()))
    if isinstance(err, Denied):
        return denied(err.message, [*(warnings or ()), *err.warnings])
    return denied(str(err) or type(err).__name__, warnings)


class Defaulter(Protocol[T_contra]):
    """Sets defaults on an object in place (``default``); may be ``async``."""

    def default(self, obj: T_contra) -> Awaitable[None] | None: ...


class Validator(Protocol[T_contra]):
    """Checks creates, updates and deletes; returns warnings, raises to refuse; may be ``async``."""

    def validate_create(self, obj: T_contra) -> Awaitable[Warnings] | Warnings: ...

    def validate_update(self, old: T_contra, new: T_contra) -> Awaitable[Warnings] | Warnings: ...

    def validate_delete(self, obj: T_contra) -> Awaitable[Warnings] | Warnings: ...


Handler = Callable[[AdmissionRequest], Awaitable[AdmissionResponse]]
"""What the webhook server calls for each admission request."""


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


class Codec(Generic[T]):
    """Decodes raw JSON objects into ``T`` and back to JSON values."""

    def __init__(self, type_: type[T]) -> None:
        self.type = type_

    def decode(self, raw: Any) -> T:
        if not isinstance(raw, dict):
            raise ValueError("there is no content to decode")
        if self.type is dict:
            return copy.deepcopy(raw)  # type: ignore[return-value]
        return msgspec.convert(raw, self.type, str_keys=True)

    def encode(self, obj: T) -> Any:
        if isinstance(obj, dict):
            return copy.deepcopy(obj)
        return msgspec.to_builtins(obj)


class DefaultingHandler(Generic[T]):
    """The mutating webhook of one type (module docstring)."""

    def __init__(
        self, type_: type[T], defaulter: Defaulter[T], *, remove_unknown_or_omitable_fields: bool = False
    ) -> None:
        self.codec = Codec(type_)
        self.defaulter = defaulter
        self.keep_removals = remove_unknown_or_omitable_fields

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation == "DELETE":
            return allowed()
        try:
            obj = self.codec.decode(request.object)
        except (ValueError, msgspec.ValidationError) as err:
            return errored(400, str(err))
        original = self.codec.encode(obj)
        try:
            await _call(self.defaulter.default, obj)
        except Exception as err:
            return refusal(err)
        current = self.codec.encode(obj)
        if not self.keep_removals and current == original:
            return AdmissionResponse(True)
        patch = jsondiff.create_patch(request.object, current)
        if not self.keep_removals:
            by_type = {orjson.dumps(op) for op in jsondiff.create_patch(request.object, original)}
            patch = [op for op in patch if not (op["op"] == "remove" and orjson.dumps(op) in by_type)]
        return AdmissionResponse(True, patch=patch)


class ValidatingHandler(Generic[T]):
    """The validating webhook of one type (module docstring)."""

    def __init__(self, type_: type[T], validator: Validator[T]) -> None:
        self.codec = Codec(type_)
        self.validator = validator

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        op = request.operation
        call: tuple[Any, ...]
        try:
            match op:
                case "CONNECT":
                    return allowed()
                case "CREATE":
                    call = (self.validator.validate_create, self.codec.decode(request.object))
                case "UPDATE":
                    new = self.codec.decode(request.object)
                    call = (self.validator.validate_update, self.codec.decode(request.old_object), new)
                case "DELETE":
                    call = (self.validator.validate_delete, self.codec.decode(request.old_object))
                case _:
                    return errored(400, f'unknown operation "{op}"')
        except (ValueError, msgspec.ValidationError) as err:
            return errored(400, str(err))
        try:
            warnings = await _call(*call)
        except Exception as err:
            return refusal(err)
        return allowed(warnings)


def mutate_path(group: str, version: str, kind: str) -> str:
    """controller-runtime's path of a type's defaulting webhook."""
    return f"/mutate-{group.replace('.', '-')}-{version}-{kind.lower()}"


def validate_path(group: str, version: str, kind: str) -> str:
    """controller-runtime's path of a type's validating webhook."""
    return f"/validate-{group.replace('.', '-')}-{version}-{kind.lower()}"
