"""Types of a test CRD, ``widgets.gen.kplane.dev`` (v1 stored, v1beta1 served), with every marker."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal

import msgspec

from kplane.client.models import meta_v1
from kplane.runtime import markers as m
from kplane.runtime import rbac

GROUP = "gen.kplane.dev"


class Mode(enum.StrEnum):
    """How a widget runs."""

    FAST = "Fast"
    SLOW = "Slow"


class Port(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A named port."""

    name: Annotated[str, m.MaxLength(15)]
    number: Annotated[int, m.Minimum(1), m.Maximum(65535)]


class WidgetSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the user asks for."""

    image: Annotated[str, m.MinLength(1), m.Pattern("^[a-z]")]
    """The container image."""
    replicas: Annotated[int, m.Minimum(0), m.Maximum(10)] = 1
    """How many copies run."""
    mode: Mode | None = None
    tier: Literal["gold", "silver"] | None = None
    ports: Annotated[list[Port], m.ListMapKeys("name"), m.MaxItems(4)] | None = None
    tags: Annotated[list[str], m.Items(m.MinLength(1)), m.ListType("set")] | None = None
    labels: dict[str, str] | None = None
    extra: dict[str, Any] | None = None
    size: int | str | None = None
    ratio: Annotated[int, msgspec.Meta(gt=0, lt=100)] | None = None
    started: datetime.datetime | None = None
    template: Annotated[dict[str, Any], m.EmbeddedResource] | None = None
    note: Annotated[str, m.Required, m.Default("none")] = "none"
    budget: Annotated[int, m.XValidation("self % 2 == 0", message="budget must be even")] | None = None


class WidgetStatus(msgspec.Struct, kw_only=True, omit_defaults=True):
    observed_generation: int | None = msgspec.field(default=None, name="observedGeneration")
    replicas: int | None = None


@m.kind(
    group=GROUP,
    version="v1",
    short_names=("wdg",),
    categories=("all",),
    status=True,
    scale=m.Scale(),
    storage=True,
    printer_columns=(
        m.PrinterColumn("Image", ".spec.image"),
        m.PrinterColumn("Replicas", ".spec.replicas", "integer"),
    ),
)
class Widget(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A widget: an image run a number of times."""

    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: WidgetSpec
    status: WidgetStatus | None = None


@m.kind(group=GROUP, version="v1beta1", kind="Widget", short_names=("wdg",), categories=("all",))
class WidgetV1beta1(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The older widget."""

    api_version: str | None = msgspec.field(default=None, name="apiVersion")
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: dict[str, Any] | None = None


@rbac.permission(groups=[GROUP], resources=["widgets"], verbs=["get", "list", "watch"])
@rbac.permission(groups=[GROUP], resources=["widgets/status"], verbs=["get", "update", "patch"])
@rbac.permission(groups=["core"], resources=["configmaps", "events"], verbs=["create", "patch"])
class WidgetReconciler:
    """Declares permissions only."""


@rbac.permission(groups=["apps"], resources=["deployments"], verbs=["get", "list", "watch", "create"])
@rbac.permission(groups=["core"], resources=["configmaps"], verbs=["get", "list", "watch"])
@rbac.permission(urls=["/metrics"], verbs=["get"])
async def reconcile_other(request: Any) -> None:
    """A function reconciler declaring permissions."""
