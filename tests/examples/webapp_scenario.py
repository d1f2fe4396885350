"""The WebApp operator's lifecycle scenario, run against ``kplane serve`` and against ``kplane.testing``."""

from __future__ import annotations

import uuid
from typing import Any

from examples.webapp import crd, operator
from kplane import runtime
from kplane.api import errors
from kplane.client import dynamic
from tests.e2e import runtime_support as rs

DEPLOYMENTS = dynamic.Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
SERVICES = dynamic.Resource("", "v1", "services", "Service", namespaced=True)
CONFIGMAPS = dynamic.Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
NAMESPACES = dynamic.Resource("", "v1", "namespaces", "Namespace", namespaced=False)


def webapp(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{crd.GROUP}/{crd.VERSION}",
        "kind": crd.KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": "nginx:1.27", **spec},
    }


async def lifecycle(manager: runtime.Manager) -> None:
    """Create, spec change, drift of owned objects repaired, deletion through the finalizer."""
    dc = manager.api.dynamic
    await crd.install(dc)
    ns = f"w-{uuid.uuid4().hex[:6]}"
    await dc.resource(NAMESPACES).create({"metadata": {"name": ns}})
    await operator.setup(manager)
    async with rs.running(manager):
        apps = dc.resource(crd.WEBAPPS, ns)
        await apps.create(webapp("site", ns, replicas=2, message="hi"))

        async def ready() -> dict[str, Any]:
            app = await apps.get("site")
            assert app["status"]["observedGeneration"] == app["metadata"]["generation"]
            assert app["status"]["conditions"][0]["status"] == "True"
            return app

        app = await rs.eventually(ready)
        assert app["metadata"]["finalizers"] == [operator.FINALIZER]
        deploy = await dc.resource(DEPLOYMENTS, ns).get("site")
        assert deploy["spec"]["replicas"] == 2
        owner = deploy["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("WebApp", "site", True)
        assert (await dc.resource(CONFIGMAPS, ns).get("site"))["data"] == {"index.html": "hi"}
        assert (await dc.resource(SERVICES, ns).get("site"))["spec"]["ports"][0]["targetPort"] == 8080
        first_transition = app["status"]["conditions"][0]["lastTransitionTime"]

        # Spec change: new replicas, new message, new port reach the owned objects.
        await apps.patch("site", {"spec": {"replicas": 3, "message": "bye", "port": 9090}})

        async def changed() -> None:
            assert (await dc.resource(DEPLOYMENTS, ns).get("site"))["spec"]["replicas"] == 3
            assert (await dc.resource(CONFIGMAPS, ns).get("site"))["data"] == {"index.html": "bye"}
            assert (await dc.resource(SERVICES, ns).get("site"))["spec"]["ports"][0]["targetPort"] == 9090
            await ready()

        await rs.eventually(changed)
        again = await apps.get("site")
        # The Ready condition stayed True, so its lastTransitionTime did not move (SetStatusCondition).
        assert again["status"]["conditions"][0]["lastTransitionTime"] == first_transition

        # Drift: someone scales the Deployment by hand; the operator takes the field back.
        await dc.resource(DEPLOYMENTS, ns).patch("site", {"spec": {"replicas": 7}})

        async def repaired() -> None:
            assert (await dc.resource(DEPLOYMENTS, ns).get("site"))["spec"]["replicas"] == 3

        await rs.eventually(repaired)

        # Deleting a ConfigMap it owns: recreated.
        await dc.resource(CONFIGMAPS, ns).delete("site")

        async def recreated() -> None:
            assert (await dc.resource(CONFIGMAPS, ns).get("site"))["data"] == {"index.html": "bye"}

        await rs.eventually(recreated)

        # Deletion: the finalizer holds the WebApp until the owned objects are gone.
        await apps.delete("site")

        async def gone() -> None:
            for res in (
                apps,
                dc.resource(DEPLOYMENTS, ns),
                dc.resource(SERVICES, ns),
                dc.resource(CONFIGMAPS, ns),
            ):
                try:
                    await res.get("site")
                except errors.NotFound:
                    continue
                raise AssertionError(f"{res.namespace}/site still exists")

        await rs.eventually(gone)
