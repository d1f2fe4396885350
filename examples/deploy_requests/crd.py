"""The ``DeployRequest`` custom resource: "set container C of Deployment D to image I"."""

from __future__ import annotations

from typing import Any

from kplane.client import dynamic

GROUP = "deploy.example.kplane.dev"
VERSION = "v1"
KIND = "DeployRequest"
PLURAL = "deployrequests"

DEPLOY_REQUESTS = dynamic.Resource(GROUP, VERSION, PLURAL, KIND, namespaced=True)

MANIFEST: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": PLURAL,
            "singular": "deployrequest",
            "kind": KIND,
            "listKind": "DeployRequestList",
        },
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
                                "required": ["deployment", "container", "image"],
                                "properties": {
                                    "deployment": {"type": "string", "minLength": 1},
                                    "container": {"type": "string", "minLength": 1},
                                    "image": {"type": "string", "minLength": 1},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string", "enum": ["Applied", "Failed"]},
                                    "message": {"type": "string"},
                                    "deploymentResourceVersion": {"type": "string"},
                                    "attempts": {"type": "integer", "minimum": 1},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
