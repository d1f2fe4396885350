"""A kopf operator with admission handlers only, run by ``test_webhooks_kopf.py`` as
``kopf run --standalone``: kopf serves its own HTTPS webhook server on 127.0.0.1 and manages the
webhook configurations itself. Certificate files come from the environment (see the test)."""

from __future__ import annotations

import os
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1",
        host="127.0.0.1",
        port=int(os.environ["KOPF_TEST_PORT"]),
        certfile=os.environ["KOPF_TEST_CERT"],
        pkeyfile=os.environ["KOPF_TEST_KEY"],
    )
    settings.admission.managed = "kplane-test.kopf.dev"


@kopf.on.validate("configmaps", id="no-forbidden")
def refuse_forbidden(body: kopf.Body, **_: Any) -> None:
    if (body.get("metadata") or {}).get("labels", {}).get("forbidden") == "yes":
        raise kopf.AdmissionError("kopf refuses forbidden configmaps", code=403)


@kopf.on.mutate("configmaps", id="stamp")
def stamp(patch: kopf.Patch, **_: Any) -> None:
    patch.setdefault("metadata", {}).setdefault("labels", {})["stamped-by"] = "kopf"
