"""The ``WebApp`` custom resource: what a user asks for (spec) and what the operator reports (status)."""

from __future__ import annotations

from typing import Any

from kplane.client import dynamic

GROUP = "example.kplane.dev"
VERSION = "v1"
KIND = "WebApp"
PLURAL = "webapps"

WEBAPPS = dynamic.Resource(GROUP, VERSION, PLURAL, KIND, namespaced=True)
CRDS = dynamic.Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)

_CONDITION: dict[str, Any] = {
    "type": "object",
    "required": ["type", "status", "lastTransitionTime", "reason", "message"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "reason": {"type": "string"},
        "message": {"type": "string"},
    },
}

MANIFEST: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "webapp", "kind": KIND, "listKind": "WebAppList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["image"],
                                "properties": {
                                    "image": {"type": "string", "minLength": 1},
                                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                                    "port": {
                                        "type": "integer",
                                        "minimum": 1,
                                        "maximum": 65535,
                                        "default": 8080,
                                    },
                                    "message": {"type": "string", "default": "hello"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "observedGeneration": {"type": "integer", "format": "int64"},
                                    "conditions": {"type": "array", "items": _CONDITION},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


async def install(client: dynamic.DynamicClient) -> None:
    """Create the CRD unless it exists (the server establishes it synchronously)."""
    from kplane.api import errors

    try:
        await client.resource(CRDS).create(MANIFEST)
    except errors.AlreadyExists:
        pass
