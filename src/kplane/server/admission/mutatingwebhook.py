"""MutatingAdmissionWebhook: the mutating webhooks, called one after another (upstream's
``mutating/dispatcher.go``, 1.32).

Each matching webhook sees the object as the previous ones left it; a JSONPatch answer is applied
to it (at the version the webhook matched, then converted back). When a webhook changes the object, the
chain runs the whole mutating pass once more (built-in plugins included, as upstream's reinvoker);
in that second pass only ``reinvocationPolicy: IfNeeded`` webhooks that were called before a later
change are called again.
With no configuration in force, a write costs one attribute read.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable
from typing import Any

import orjson

from kplane.api import errors
from kplane.api.patch import _base as patchbase
from kplane.api.patch import jsonpatch
from kplane.server.admission import matching, plugin, webhookconfigs, webhookdispatch
from kplane.server.registry import admitting
from kplane.server.webhooks import client as webhookclient

NAME = "MutatingAdmissionWebhook"
_MUTATION = "mutation.webhook.admission.k8s.io/"


class MutatingWebhook(plugin.Base):
    name = NAME
    dynamic = True
    """Whether it mutates depends on configurations that change: never memoized by the chain."""

    def __init__(self, ctx: plugin.Context, client: webhookclient.Client) -> None:
        self._source = webhookconfigs.Source(
            ctx.storage, webhookconfigs.MUTATING_PREFIX, mutating=True, client=client
        )
        self._dispatch = webhookdispatch.Dispatcher(ctx, client, mutating=True)

    def mutates(self, group: str, plural: str) -> bool:
        return not self._source.empty

    def mutate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        if self._source.empty or matching.exempt(attrs.record):
            return None
        return self._mutate(attrs)

    async def _mutate(self, attrs: admitting.Attributes) -> None:
        hooks = await self._source.hooks()
        if not hooks:
            return
        again = attrs.reinvocation
        if again is not None and again.round == 1:
            await self._second_round(hooks, attrs, again)
            return
        previously: list[str] = []
        reinvoke: set[str] = set()
        for index, hook in enumerate(hooks):
            invoked, changed = await self._run(hook, attrs, 0, index)
            if changed:
                # every IfNeeded webhook called before this change must see it
                reinvoke.update(previously)
                if attrs.reinvocation is None:
                    attrs.reinvocation = admitting.Reinvocation()
                attrs.reinvocation.requested = True
            if invoked and hook.reinvoke:
                previously.append(hook.uid)
        if attrs.reinvocation is not None:
            output = copy.deepcopy(attrs.obj)
            attrs.reinvocation.state[NAME] = (previously, reinvoke, output)

    async def _second_round(
        self,
        hooks: tuple[webhookconfigs.Hook, ...],
        attrs: admitting.Attributes,
        again: admitting.Reinvocation,
    ) -> None:
        """The chain's second pass: only IfNeeded webhooks already called, and only those that a
        later change (a webhook's, or a built-in plugin's in this pass) has not been shown yet."""
        state = again.state.get(NAME)
        if state is None:
            return
        previously, reinvoke, output = state
        if not patchbase.json_equal(attrs.obj, output):
            reinvoke = reinvoke | set(previously)
        for index, hook in enumerate(hooks):
            if hook.uid in reinvoke:
                await self._run(hook, attrs, 1, index)

    async def _run(
        self, hook: webhookconfigs.Hook, attrs: admitting.Attributes, round_: int, index: int
    ) -> tuple[bool, bool]:
        """Call ``hook`` if it applies; (whether it was called, whether it changed the object).
        Records upstream's audit annotations of the call (``mutation.webhook.admission.k8s.io/``,
        ``failed-open.mutation.webhook.admission.k8s.io/`` when it failed open)."""
        inv = await self._dispatch.should_call(hook, attrs)
        if inv is None:
            return False, False
        where = f"round_{round_}_index_{index}"
        changed = False
        try:
            verdict = await self._dispatch.call(inv, attrs)
            changed = self._apply(inv, attrs, verdict.patch, verdict.patch_type)
            return True, changed
        except webhookdispatch.CallFailure as failure:
            err = webhookdispatch.failure_error(hook, failure)
            if err is not None:
                raise err from None
            attrs.audit_annotations[f"failed-open.{_MUTATION}{where}"] = hook.name
            return True, False
        finally:
            record = {"configuration": hook.configuration, "webhook": hook.name, "mutated": changed}
            attrs.audit_annotations[_MUTATION + where] = orjson.dumps(record).decode()

    def _apply(
        self, inv: webhookdispatch.Invocation, attrs: admitting.Attributes, patch: bytes, kind: str
    ) -> bool:
        if not patch:
            return False
        try:
            operations: Any = orjson.loads(patch)
        except orjson.JSONDecodeError as exc:
            raise webhookdispatch.CallFailure(
                f"received undecodable patch in webhook response: {exc}"
            ) from None
        if not isinstance(operations, list):
            raise webhookdispatch.CallFailure(
                "received undecodable patch in webhook response: json: cannot unmarshal object into Go value "
                "of type jsonpatch.Patch"
            )
        if not operations:
            return False
        if inv.obj is None or attrs.obj is None:
            raise webhookdispatch.internal(
                f'admission webhook "{inv.hook.name}" attempted to modify the object, which is not supported '
                "for this operation"
            )
        if kind != "JSONPatch":
            raise webhookdispatch.CallFailure(f'unsupported patch type "{kind}"')
        try:
            patched = jsonpatch.json_patch(inv.obj, operations)
        except patchbase.PatchError as exc:
            raise webhookdispatch.internal(str(exc)) from None
        if not isinstance(patched, dict):
            raise webhookdispatch.internal("the patched object is not a JSON object")
        result = webhookdispatch.converted_back(patched, inv, attrs)
        if patchbase.json_equal(result, attrs.obj):
            return False
        if not isinstance(result.get("metadata"), dict):
            raise errors.BadRequest("Object 'metadata' is missing or not an object after the webhook's patch")
        attrs.obj.clear()
        attrs.obj.update(result)
        return True
