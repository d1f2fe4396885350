"""What both webhook plugins share: whether a webhook is called, and calling it.

``should_call`` is upstream's ``ShouldCallHook`` (generic/webhook.go, 1.32): namespace selector,
object selector, rules on the resource as addressed, then (``matchPolicy: Equivalent``) on the other
versions and groups of the same objects, then ``matchConditions`` (CEL; an error fails closed with
403 unless ``failurePolicy: Ignore``). ``call`` sends the review and checks the answer; transport and
protocol failures raise ``CallFailure`` (upstream's ``ErrCallingWebhook``), which ``failure_error``
turns into upstream's 500 ``Internal error occurred: failed calling webhook "<name>": ...`` or
nothing under ``failurePolicy: Ignore``. Denials become upstream's ``ToStatusErr``.
"""

from __future__ import annotations

import copy
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.api.cel import admission as celadmission
from kplane.api.cel import engine
from kplane.server.admission import admissionreview, celauthorizer, matching, plugin
from kplane.server.admission.webhookconfigs import Hook
from kplane.server.registry import admitting
from kplane.server.registry.objects import to_storage, to_version
from kplane.server.webhooks import client as webhookclient

log = logging.getLogger(__name__)
Object = dict[str, Any]
_NAMESPACES = "/registry/core/namespaces/"


class CallFailure(Exception):
    """The webhook could not be called or answered badly (``str()``: the reason)."""


@dataclass(slots=True)
class Invocation:
    """A webhook to call for a request: the record it matched and the objects at its version."""

    hook: Hook
    record: ResourceRecord
    obj: Object | None
    old: Object | None


def _convert(obj: Object | None, src: ResourceRecord, dst: ResourceRecord) -> Object | None:
    if obj is None or src is dst:
        return obj
    return to_version(dst, to_storage(src, copy.deepcopy(obj)))


def converted_back(obj: Object, inv: Invocation, attrs: admitting.Attributes) -> Object:
    """An object patched at the invocation's version, at the request's version."""
    result = _convert(obj, inv.record, attrs.record)
    assert result is not None
    return result


def denial(name: str, result: Object | None) -> errors.APIError:
    """Upstream's ``ToStatusErr``: the webhook's Status, its message prefixed, code at least 400."""
    status = dict(result or {})
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    denied = f'admission webhook "{name}" denied the request'
    message, reason = status.get("message"), status.get("reason")
    if isinstance(message, str) and message:
        text = f"{denied}: {message}"
    elif isinstance(reason, str) and reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = status.get("details")
    return errors.APIError(
        text,
        code=code,
        reason=reason if isinstance(reason, str) else "",
        details=details if isinstance(details, dict) else None,
    )


def internal(reason: str) -> errors.APIError:
    """``apierrors.NewInternalError``."""
    return errors.InternalError(
        f"Internal error occurred: {reason}", details={"causes": [{"message": reason}]}
    )


def failure_error(hook: Hook, failure: CallFailure) -> errors.APIError | None:
    """What a call failure becomes: nothing when the webhook fails open, else a 500."""
    if hook.fail_open:
        log.warning("Failed calling webhook, failing open %s: %s", hook.name, failure)
        return None
    return internal(f'failed calling webhook "{hook.name}": {failure}')


class Dispatcher:
    """Matches and calls the webhooks of one kind for the requests of one server."""

    def __init__(self, ctx: plugin.Context, client: webhookclient.Client, *, mutating: bool) -> None:
        self._ctx = ctx
        self._client = client
        self._mutating = mutating
        self._equivalents = matching.Equivalents(ctx.catalog)

    async def _namespace(self, name: str) -> Object | None:
        """The namespace from the cache; on a miss, read again once the cache is in sync (upstream's
        matcher falls back to a live GET: the namespace may be newer than the cache)."""
        peek = getattr(self._ctx.storage, "peek", None)
        if peek is not None:
            found = peek(_NAMESPACES + name)
            if isinstance(found, dict):
                return found
        record = self._ctx.record("", "v1", "namespaces")
        return await self._ctx.get(record, "", name)

    async def should_call(self, hook: Hook, attrs: admitting.Attributes) -> Invocation | None:
        """The invocation of ``hook`` for ``attrs``, or None when it does not apply."""
        rec = attrs.record
        is_namespace = rec.group == "" and rec.plural == "namespaces"
        namespace = attrs.name if is_namespace else attrs.namespace
        ns_error: errors.APIError | None = None
        if hook.selector_error:
            ns_error = internal(hook.selector_error)
        else:
            try:
                if not await self._namespace_selected(hook, attrs, namespace, is_namespace):
                    return None
            except matching.NamespaceNotFound:
                namespaces = self._ctx.record("", "v1", "namespaces").group_resource
                ns_error = errors.not_found(namespaces, namespace)
        if hook.object_selector is not None and not matching.selects_object(
            hook.object_selector, attrs.obj, attrs.old
        ):
            return None
        invoked = self._matched_record(hook, attrs, namespace)
        if invoked is None:
            return None
        if ns_error is not None:
            raise ns_error
        inv = Invocation(hook, invoked, _convert(attrs.obj, rec, invoked), _convert(attrs.old, rec, invoked))
        if hook.conditions and not self._conditions_match(inv, attrs):
            return None
        return inv

    async def _namespace_selected(
        self, hook: Hook, attrs: admitting.Attributes, namespace: str, is_namespace: bool
    ) -> bool:
        """Upstream's namespace matcher (raises ``NamespaceNotFound``)."""
        rec = attrs.record
        sel = hook.namespace_selector
        if sel is None or sel.empty or not matching.namespace_applies(rec.plural, rec.group, namespace):
            return True
        own = is_namespace and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE")
        found = None if own else await self._namespace(namespace)
        ns_labels = matching.namespace_labels(
            lambda _: found,
            resource=rec.plural,
            group=rec.group,
            subresource=attrs.subresource,
            operation=attrs.operation,
            namespace=namespace,
            obj=attrs.obj,
        )
        return sel.matches(ns_labels)

    def _matched_record(
        self, hook: Hook, attrs: admitting.Attributes, namespace: str
    ) -> ResourceRecord | None:
        rec = attrs.record
        req = matching.Request(
            attrs.operation, rec.group, rec.version, rec.plural, attrs.subresource, namespace
        )
        if matching.any_rule(hook.rules, req):
            return rec
        if not hook.equivalent:
            return None
        for rule in hook.rules:
            for other in self._equivalents.of(rec):
                alt = matching.Request(
                    attrs.operation, other.group, other.version, other.plural, attrs.subresource, namespace
                )
                if rule.matches(alt):
                    return other
        return None

    def _conditions_match(self, inv: Invocation, attrs: admitting.Attributes) -> bool:
        """Upstream's ``matchconditions.Matcher``: false as soon as one condition is false; errors
        deny (403) unless the webhook fails open, then the webhook is skipped."""
        request = admissionreview.admission_request("", attrs, inv.record, inv.obj, inv.old)
        failures: list[str] = []
        req = celadmission.Request(request, inv.obj, inv.old)
        authorize = celauthorizer.for_request(self._ctx.authorizer, attrs)
        with celadmission.activation(celadmission.WEBHOOK_MATCH, req, authorize) as data:
            for cond in inv.hook.conditions:
                if cond.program is None:
                    failures.append(f"expression '{cond.expression}' resulted in error: {cond.error}")
                    continue
                try:
                    value = cond.program.eval(data)
                except engine.EvalError as exc:
                    failures.append(f"expression '{cond.expression}' resulted in error: {exc}")
                    continue
                if value is False:
                    return False
        if not failures:
            return True
        if inv.hook.fail_open:
            return False
        text = failures[0] if len(failures) == 1 else "[" + ", ".join(failures) + "]"
        raise plugin.forbidden(attrs, text)

    async def call(self, inv: Invocation, attrs: admitting.Attributes) -> admissionreview.Verdict:
        """Send the review; the verdict. Raises ``CallFailure``, or the APIError upstream answers
        (a dry run the webhook cannot take; a denial)."""
        hook = inv.hook
        if attrs.dry_run:
            if hook.side_effects is None:
                raise CallFailure("Webhook SideEffects is nil")
            if hook.side_effects not in ("None", "NoneOnDryRun"):
                raise errors.BadRequest(f'admission webhook "{hook.name}" does not support dry run')
        version = admissionreview.review_version(hook.review_versions)
        if version is None:
            raise CallFailure(
                "could not create admission objects: webhook does not accept known AdmissionReview versions "
                "(v1, v1beta1)"
            )
        uid = str(uuid.uuid4())
        body = orjson.dumps(
            admissionreview.review(
                version, admissionreview.admission_request(uid, attrs, inv.record, inv.obj, inv.old)
            )
        )
        try:
            answer = await self._client.post(hook.target, body, hook.timeout)
        except webhookclient.CallError as exc:
            raise CallFailure(f"failed to call webhook: {exc}") from None
        try:
            verdict = admissionreview.verify(uid, version, self._mutating, answer)
        except admissionreview.InvalidResponse as exc:
            raise CallFailure(f"received invalid webhook response: {exc}") from None
        for key, value in verdict.audit_annotations.items():
            attrs.audit_annotations[f"{hook.name}/{key}"] = value
        attrs.warnings.extend(verdict.warnings)
        if not verdict.allowed:
            raise denial(hook.name, verdict.result)
        return verdict
