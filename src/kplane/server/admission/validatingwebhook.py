"""ValidatingAdmissionWebhook: the validating webhooks, called concurrently (upstream's
``validating/dispatcher.go``, 1.32).

Which webhooks apply is decided first, in order (a selector or matchCondition error ends the
request); then every applicable webhook is called at once and all are awaited. The refusal answered
is that of the first webhook in configuration order that refused or failed closed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from kplane.api import errors
from kplane.server.admission import matching, plugin, webhookconfigs, webhookdispatch
from kplane.server.registry import admitting
from kplane.server.webhooks import client as webhookclient

NAME = "ValidatingAdmissionWebhook"
_FAILED_OPEN = "failed-open.validating.webhook.admission.k8s.io/"


class ValidatingWebhook(plugin.Base):
    name = NAME

    def __init__(self, ctx: plugin.Context, client: webhookclient.Client) -> None:
        self._source = webhookconfigs.Source(
            ctx.storage, webhookconfigs.VALIDATING_PREFIX, mutating=False, client=client
        )
        self._dispatch = webhookdispatch.Dispatcher(ctx, client, mutating=False)

    def validate(self, attrs: admitting.Attributes) -> Awaitable[None] | None:
        if self._source.empty or matching.exempt(attrs.record):
            return None
        return self._validate(attrs)

    async def _validate(self, attrs: admitting.Attributes) -> None:
        hooks = await self._source.hooks()
        if not hooks:
            return
        invocations = []
        for hook in hooks:
            inv = await self._dispatch.should_call(hook, attrs)
            if inv is not None:
                invocations.append(inv)
        if not invocations:
            return
        outcomes = await asyncio.gather(*(self._one(inv, attrs, i) for i, inv in enumerate(invocations)))
        for err in outcomes:
            if err is not None:
                raise err

    async def _one(
        self, inv: webhookdispatch.Invocation, attrs: admitting.Attributes, index: int
    ) -> errors.APIError | None:
        try:
            await self._dispatch.call(inv, attrs)
        except webhookdispatch.CallFailure as failure:
            err = webhookdispatch.failure_error(inv.hook, failure)
            if err is None:  # upstream's failed-open audit annotation
                attrs.audit_annotations[f"{_FAILED_OPEN}round_0_index_{index}"] = inv.hook.name
            return err
        except errors.APIError as err:
            return err
        return None
