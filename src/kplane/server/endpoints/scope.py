"""What every resource handler gets: the request, what it addresses, and the server's parts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kplane._util.clock import Clock
from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server.auth import authn
from kplane.server.endpoints import encoded, negotiation, options, partial
from kplane.server.endpoints.requestinfo import RequestInfo
from kplane.server.registry.fieldschema import Requester, WriteOptions
from kplane.server.registry.store import Registry

if TYPE_CHECKING:
    from kplane.server.endpoints import table
else:
    table = lazy_module("kplane.server.endpoints.table")  # loaded with the first Table request

if TYPE_CHECKING:
    from kplane.api import apply as ssa
    from kplane.api import protobuf
else:
    protobuf = lazy_module("kplane.api.protobuf")  # its tables load with the first protobuf request
    ssa = lazy_module("kplane.api.apply")  # loaded with the first write, not at start-up

Object = dict[str, Any]
AUDIT_ANNOTATIONS: web.RequestKey[dict[str, str]] = web.RequestKey("audit_annotations", dict)
"""Request key of the audit annotations dict the audit filter installs (admission adds to it)."""


def audit_annotations(request: web.BaseRequest) -> dict[str, str]:
    """The request's audit annotations (admission records into them): the server's request
    factory gives every request a set, so this does not raise and catch a KeyError each time."""
    try:
        return request[AUDIT_ANNOTATIONS]
    except KeyError:
        return {}


_REQUESTERS: dict[int, tuple[authn.UserInfo, Requester]] = {}
"""A user's ``Requester``, shared by its requests: the authenticator keeps one ``UserInfo`` per
credential, so its identity keys this bounded memo (an entry holds the user, so the id is not
reused meanwhile). Every reader copies what it keeps of a ``Requester``."""
_REQUESTERS_BOUND = 4096


@dataclass(slots=True)
class Scope:
    request: web.BaseRequest
    info: RequestInfo
    record: ResourceRecord
    registry: Registry
    clock: Clock
    form: negotiation.ResponseForm
    watch_bookmark_interval: float = 60.0
    pod_logs: Path | None = None  # where the simulated kubelet writes container output
    protobuf_memo: encoded.ProtobufMemo = field(default_factory=encoded.ProtobufMemo)
    warnings: list[str] = field(default_factory=list)
    json_lists: encoded.JsonLists = field(default_factory=encoded.JsonLists)

    @property
    def query(self) -> Any:
        return self.request.query

    @property
    def pretty(self) -> bool:
        """Whether a JSON reply is indented (``?pretty=true``, or curl, Wget, a browser)."""
        return negotiation.is_pretty(self.request.query, self.request.headers.get("User-Agent", ""))

    def dry_run(self) -> bool:
        """``dryRun`` of the query (only ``All``; 422 on the request's options kind otherwise)."""
        values = self.request.query.getall("dryRun", [])
        options.check(options.kind_for(self.request.method), options.dry_run_errors(values))
        return bool(values)

    def write_options(self, *, default_manager: bool = True, patch_type: str | None = None) -> WriteOptions:
        """dryRun, fieldManager and fieldValidation of this request, validated as upstream's
        Create/Update/PatchOptions (one 422 listing every problem). ``patch_type``: the media type
        of a PATCH (apply patches require a fieldManager, others may not send ``force``)."""
        q = self.request.query
        manager = validation = ""
        dry_run = False
        if q or patch_type == negotiation.APPLY_PATCH:  # else there is nothing to check
            manager = q.get("fieldManager", "")
            validation = q.get("fieldValidation", "")
            errs: list[errors.FieldError] = []
            if patch_type == negotiation.APPLY_PATCH and not manager:
                errs.append(errors.required("fieldManager", "is required for apply patch"))
            elif patch_type is not None and patch_type != negotiation.APPLY_PATCH and "force" in q:
                errs.append(errors.forbidden("force", "may not be specified for non-apply patch"))
            errs += options.field_manager_errors(manager)
            dry_run_values = q.getall("dryRun", [])
            errs += options.dry_run_errors(dry_run_values)
            errs += options.field_validation_errors(validation)
            options.check(options.kind_for(self.request.method), errs)
            dry_run = bool(dry_run_values)
        if not manager and default_manager:
            manager = ssa.default_manager(self.request.headers.get("User-Agent", ""))
        return WriteOptions(
            dry_run=dry_run,
            field_manager=manager,
            field_validation=validation or "Warn",  # type: ignore[arg-type]
            warnings=self.warnings,
            audit_annotations=audit_annotations(self.request),
            requester=self.requester(),
        )

    def requester(self) -> Requester | None:
        """The authenticated user of this request, as the registry records it."""
        try:
            user = self.request[authn.USER_KEY]  # the authentication filter set it
        except KeyError:
            return None
        hit = _REQUESTERS.get(id(user))
        if hit is not None and hit[0] is user:
            return hit[1]
        extra = {k: list(v) for k, v in user.extra.items()}
        found = Requester(user.name, user.uid, tuple(user.groups), extra)
        if len(_REQUESTERS) >= _REQUESTERS_BOUND:
            _REQUESTERS.clear()
        _REQUESTERS[id(user)] = (user, found)
        return found

    def headers(self, content_type: str) -> dict[str, str]:
        hdrs = {"Content-Type": content_type}
        if self.warnings:
            values = warning_values(self.warnings)
            if values:
                hdrs["Warning"] = ", ".join(values)
        return hdrs

    def check_duplicates(self, dups: list[str], opts: WriteOptions) -> None:
        """Duplicate JSON fields (``negotiation.duplicate_fields``): 400 under
        fieldValidation=Strict, a Warning under Warn."""
        if opts.field_validation == "Ignore" or not dups:
            return
        if opts.field_validation == "Strict":
            kind, version = self.record.kind, self.record.version
            raise errors.BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
                + ", ".join(dups)
            )
        opts.warnings.extend(dups)

    async def body(self) -> bytes:
        try:
            return await self.request.read()
        except web.HTTPRequestEntityTooLarge:
            raise errors.RequestEntityTooLarge(
                "the request body is too large: at most 3145728 bytes are accepted"
            ) from None

    def respond(self, obj: Object, status: int = 200, *, stored: bool = False) -> web.Response:
        """An object of this endpoint (or a Status), in the negotiated media type or as a one-row
        Table; 406 when the Accept header allows none. ``stored``: ``obj`` was read from storage as
        is, so its encoding may be memoised (never a write's reply, see ``encoded``)."""
        form = self.form
        if form.error is not None:
            raise form.error
        if form.partial and obj.get("kind") != "Status":
            if form.partial == negotiation.PARTIAL_LIST:
                raise partial.list_expected(self.record)
            if form.media == negotiation.PROTOBUF and stored:
                body = self.protobuf_memo.encode(obj, partial.api_version(form.partial_version), form.partial)
                return web.Response(body=body, status=status, headers=self.headers(form.media))
            return self.respond_plain(partial.of_object(obj, form.partial_version), status)
        if form.table and obj.get("kind") != "Status":
            tbl = table.table(
                self.record, [obj], include_object=self.form.include_object, now=self.clock.now()
            )
            body = negotiation.encode(tbl, form.media, pretty=self.pretty)
            return web.Response(body=body, status=status, headers=self.headers(form.media))
        return self.respond_plain(obj, status, stored=stored)

    def respond_items(self, items: list[Object]) -> web.Response:
        """A list of computed (never stored) objects of this endpoint's resource, as its
        ``<Kind>List`` or as a Table."""
        form = self.form
        if form.error is not None:
            raise form.error
        if form.table:
            tbl = table.table(self.record, items, include_object=form.include_object, now=self.clock.now())
            return web.Response(body=negotiation.encode(tbl, form.media), headers=self.headers(form.media))
        record = self.record
        return self.respond_plain(
            {"kind": record.list_kind, "apiVersion": record.api_version, "metadata": {}, "items": items}
        )

    def respond_plain(self, obj: Object, status: int = 200, *, stored: bool = False) -> web.Response:
        """``obj`` (an object, list or Status) in the negotiated media type, never as a Table."""
        media = self.form.media
        if self.form.error is not None:
            raise self.form.error
        if media == negotiation.JSON:
            body = negotiation.encode_json(obj, pretty=self.pretty)
        elif media == negotiation.PROTOBUF:
            body = self.protobuf_memo.encode(obj) if stored else protobuf.encode(obj)
        else:
            body = negotiation.encode(obj, media)
        return web.Response(body=body, status=status, headers=self.headers(media))


_ENCODABLE: dict[tuple[str, str, str], bool] = {}


def protobuf_encodable(record: ResourceRecord) -> bool:
    """Whether objects of ``record`` can be answered in protobuf: built-in kinds whose descriptors
    kplane has (custom resources never are, as upstream)."""
    if record.custom:
        return False
    key = (record.group, record.version, record.kind)
    known = _ENCODABLE.get(key)
    if known is None:
        known = _ENCODABLE[key] = protobuf.encodable(record.api_version, record.kind)
    return known


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # Go's unicode.IsControl
WARNING_TOTAL_BYTES = 4 * 1024
WARNING_ITEM_RUNES = 256


def warning_values(texts: list[str]) -> list[str]:
    """``299 - "text"`` values for ``texts`` as upstream's warning recorder writes them
    (apiserver endpoints/filters/warning.go, apimachinery util/net ``NewWarningHeader``): duplicates
    and empty texts skipped, a text holding a control character dropped (upstream refuses it), ``\\``
    and ``"`` escaped; past 4 KiB in all, every text is cut to 256 characters and what still does not
    fit is left out. So the header is always valid and bounded, whatever a client sent."""
    texts = [t for t in dict.fromkeys(texts) if t and not _CONTROL.search(t)]
    values = [_warning_value(t) for t in texts]
    if sum(len(v.encode()) for v in values) <= WARNING_TOTAL_BYTES:
        return values
    out: list[str] = []
    written = 0
    for t in texts:
        value = _warning_value(t[:WARNING_ITEM_RUNES])
        written += len(value.encode())
        if written > WARNING_TOTAL_BYTES:
            break
        out.append(value)
    return out


def _warning_value(text: str) -> str:
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    hdrs = {"Content-Type": "application/json"}
    if headers:
        hdrs.update(headers)
    return web.Response(body=negotiation.encode_json(obj), status=status, headers=hdrs)


def status_response(err: errors.APIError, accept: str | None = None, *, pretty: bool = False) -> web.Response:
    """An error's Status, negotiated against ``accept`` as upstream's ErrorNegotiated does."""
    headers = {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)
    body, media = negotiation.error_body(dict(err.to_status()), accept, pretty=pretty)
    headers["Content-Type"] = media
    return web.Response(body=body, status=err.code, headers=headers)
