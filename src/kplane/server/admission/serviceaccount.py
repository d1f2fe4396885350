"""ServiceAccount (kubernetes ``plugin/pkg/admission/serviceaccount``): on Pod CREATE, name the
``default`` ServiceAccount when none is named, check that it exists, and project its token.

- Mirror pods (annotation ``kubernetes.io/config.mirror``) are left alone, and refused if they name
  a ServiceAccount.
- The ServiceAccount must exist: 403 ``error looking up service account ns/sa: serviceaccount
  "sa" not found``. ``default`` is created by the server's namespace controller
  (``registry.namespaces``) right after its namespace; as upstream, its lookup is retried ten
  times 100 to 199 ms apart before giving up.
- Unless the pod (first) or the ServiceAccount sets ``automountServiceAccountToken: false``, every
  init and regular container without a mount at ``/var/run/secrets/kubernetes.io/serviceaccount``
  gets one of a projected ``kube-api-access-<5 random>`` volume (token of 3607 s, ``ca.crt`` of the
  ``kube-root-ca.crt`` ConfigMap, the namespace from the downward API), added when some container
  got the mount; an existing ``kube-api-access-*`` volume is reused.
- A pod without ``imagePullSecrets`` gets the ServiceAccount's.
"""

from __future__ import annotations

import random
from typing import Any

from kplane.server.admission import plugin
from kplane.server.registry import admitting

NAME = "ServiceAccount"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
VOLUME_PREFIX = "kube-api-access-"
TOKEN_EXPIRATION = 3607  # one hour and seven seconds: upstream's marker of a defaulted token
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand: no vowels, no 0/1/3
_MIRROR = "kubernetes.io/config.mirror"
DEFAULT_LOOKUPS = 10


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume upstream adds (pkg/serviceaccount ``TokenVolumeSource``)."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
        },
    }


class ServiceAccount(plugin.Base):
    name = NAME
    resources = frozenset({("", "pods")})

    def __init__(self, ctx: plugin.Context, *, _rng: random.Random | None = None) -> None:
        self.ctx = ctx
        self.rng = _rng or random.Random()

    def mutates(self, group: str, plural: str) -> bool:
        return group == "" and plural == "pods"

    async def mutate(self, attrs: admitting.Attributes) -> None:
        if attrs.operation != "CREATE" or not plugin.is_pod(attrs) or attrs.obj is None:
            return
        pod = attrs.obj
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return
        if _MIRROR in plugin.as_dict(plugin.as_dict(pod.get("metadata")).get("annotations")):
            if spec.get("serviceAccountName") or spec.get("serviceAccount"):
                raise plugin.forbidden(attrs, "a mirror pod may not reference service accounts")
            return
        sa_name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        if not isinstance(sa_name, str):
            return  # the schema step reports the type
        spec["serviceAccountName"] = sa_name
        spec["serviceAccount"] = sa_name  # v1's deprecated twin, as upstream's conversion writes it
        sa = await self._lookup(attrs.namespace, sa_name)
        if sa is None:
            raise plugin.forbidden(
                attrs,
                f"error looking up service account {attrs.namespace}/{sa_name}: "
                f'serviceaccount "{sa_name}" not found',
            )
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        if automount is not False:
            self._mount_token(spec)
        if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [
                {"name": s.get("name")}
                for s in plugin.as_list(sa.get("imagePullSecrets"))
                if isinstance(s, dict)
            ]

    async def _lookup(self, namespace: str, name: str) -> dict[str, Any] | None:
        record = self.ctx.record("", "v1", "serviceaccounts")
        for attempt in range(DEFAULT_LOOKUPS if name == "default" else 1):
            if attempt:
                await self.ctx.clock.sleep(0.1 + self.rng.random() * 0.099)
            found = await self.ctx.get(record, namespace, name)
            if found is not None:
                return found
        return None

    def _mount_token(self, spec: dict[str, Any]) -> None:
        volumes = plugin.as_list(spec.get("volumes"))
        volume_name = next(
            (
                v["name"]
                for v in volumes
                if isinstance(v, dict) and str(v.get("name", "")).startswith(VOLUME_PREFIX)
            ),
            None,
        )
        if volume_name is None:
            volume_name = VOLUME_PREFIX + "".join(self.rng.choice(_ALPHABET) for _ in range(5))
        mounted = False
        for key in ("initContainers", "containers"):
            for container in plugin.as_list(spec.get(key)):
                if not isinstance(container, dict):
                    continue
                mounts = plugin.as_list(container.get("volumeMounts"))
                if any(isinstance(m, dict) and m.get("mountPath") == MOUNT_PATH for m in mounts):
                    continue
                container["volumeMounts"] = [
                    *mounts,
                    {"name": volume_name, "readOnly": True, "mountPath": MOUNT_PATH},
                ]
                mounted = True
        if mounted and not any(isinstance(v, dict) and v.get("name") == volume_name for v in volumes):
            spec["volumes"] = [*volumes, token_volume(volume_name)]
