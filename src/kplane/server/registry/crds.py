"""CustomResourceDefinitions: from a stored CRD to served resources, and back.

``crd_records`` turns a CRD into catalog records (one per served version). ``CRDStrategy`` checks a
CRD on write and fills its status (``NamesAccepted`` and ``Established`` conditions, accepted names,
stored versions), so a CRD is established the moment it is stored. ``CRDController`` keeps the
catalog in step: it registers a CRD's resources synchronously after each write of the CRD (so the
next request can use them) and from a watch (restarts, other writers), and hands a terminating CRD to
``crdfinalizer``, which deletes every custom object before removing the cleanup finalizer.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from typing import TYPE_CHECKING, Any

from kplane._util.clock import Clock
from kplane._util.lazy import lazy_module
from kplane.api import errors
from kplane.api.catalog import Catalog, PrinterColumn, ResourceRecord, ScaleSpec
from kplane.api.gvk import GroupResource
from kplane.api.validation import apiextensions
from kplane.server import storage
from kplane.server.registry import crdconditions, crdfinalizer, strategy
from kplane.server.registry.fieldschema import WriteOptions
from kplane.server.registry.objects import rfc3339
from kplane.server.registry.store import Registry

if TYPE_CHECKING:
    from kplane.api import cel
else:
    cel = lazy_module("kplane.api.cel")  # the CEL engine loads with the first CRD write, not at start-up

log = logging.getLogger("kplane.server.crds")
Object = dict[str, Any]

CRD_PREFIX = "/registry/apiextensions.k8s.io/customresourcedefinitions/"
_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version names: GA > beta > alpha, higher numbers first, then others."""
    m = _VERSION_RE.match(name)
    if not m:
        return (3, 0, 0, name)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, name)


def _scope(spec: Object) -> str:
    return "Cluster" if spec.get("scope") == "Cluster" else "Namespaced"


def crd_records(crd: Object) -> list[ResourceRecord]:
    """The catalog records of an established CRD: one per served version, preferred version first."""
    served = [v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]
    served.sort(key=lambda v: version_priority(v["name"]))
    return [_record(crd, v, preferred=i == 0) for i, v in enumerate(served)]


def storage_record(crd: Object) -> ResourceRecord | None:
    """The record of the CRD's storage version, served or not (None without one): what its objects
    are deleted through when the CRD goes, as upstream's finalizer uses the storage version's store."""
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return _record(crd, v, preferred=False)
    return None


def _record(crd: Object, v: Object, *, preferred: bool) -> ResourceRecord:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    storage_version = next((x["name"] for x in spec.get("versions") or [] if x.get("storage")), "")
    kind = names.get("kind", "")
    raw_conversion = spec.get("conversion")
    conversion: Object = raw_conversion if isinstance(raw_conversion, dict) else {}
    webhook = conversion.get("webhook") if conversion.get("strategy") == "Webhook" else None
    webhook = webhook if isinstance(webhook, dict) else None
    subs = v.get("subresources") or {}
    scale_cfg = subs.get("scale")
    scale = None
    if isinstance(scale_cfg, dict):
        scale = ScaleSpec(
            spec_replicas_path=scale_cfg.get("specReplicasPath", ".spec.replicas"),
            status_replicas_path=scale_cfg.get("statusReplicasPath", ".status.replicas"),
            label_selector_path=scale_cfg.get("labelSelectorPath"),
        )
    columns = tuple(
        PrinterColumn(
            name=c.get("name", ""),
            type=c.get("type", "string"),
            json_path=c.get("jsonPath", ""),
            format=c.get("format", ""),
            description=c.get("description", ""),
            priority=int(c.get("priority", 0)),
        )
        for c in v.get("additionalPrinterColumns") or []
    )
    schema = ((v.get("schema") or {}).get("openAPIV3Schema")) or None
    selectable = tuple(
        s.get("jsonPath", "").lstrip(".") for s in v.get("selectableFields") or [] if s.get("jsonPath")
    )
    return ResourceRecord(
        group=group,
        version=v["name"],
        plural=names.get("plural", ""),
        singular=names.get("singular") or kind.lower(),
        kind=kind,
        list_kind=names.get("listKind") or kind + "List",
        scope=_scope(spec),  # type: ignore[arg-type]
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        has_status=isinstance(subs.get("status"), dict),
        scale=scale,
        printer_columns=columns,
        field_selectors=selectable,
        schema=schema,
        storage_version=storage_version,
        custom=True,
        preferred=preferred,
        tracks_generation=True,
        conversion_webhook=webhook,
        terminating=bool((crd.get("metadata") or {}).get("deletionTimestamp")),
    )


def _validate_crd(crd: Object, old: Object | None = None) -> list[errors.FieldError]:
    errs: list[errors.FieldError] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [errors.required("spec")]
    group = spec.get("group")
    raw_names = spec.get("names")
    names: Object = raw_names if isinstance(raw_names, dict) else {}
    plural = names.get("plural")
    if not group:
        errs.append(errors.required("spec.group"))
    elif "." not in group:
        errs.append(errors.invalid("spec.group", group, "should be a domain with at least one dot"))
    if not plural:
        errs.append(errors.required("spec.names.plural"))
    elif not _DNS_LABEL.match(plural):
        errs.append(errors.invalid("spec.names.plural", plural, "a lowercase RFC 1123 label is required"))
    if not names.get("kind"):
        errs.append(errors.required("spec.names.kind"))
    name = (crd.get("metadata") or {}).get("name")
    if plural and group and name != f"{plural}.{group}":
        errs.append(errors.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errs.append(errors.not_supported("spec.scope", spec.get("scope"), ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        errs.append(
            errors.invalid(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
        return errs
    storage_count = sum(1 for v in versions if isinstance(v, dict) and v.get("storage"))
    if storage_count != 1:
        errs.append(
            errors.invalid(
                "spec.versions", storage_count, "must have exactly one version marked as storage version"
            )
        )
    seen: set[str] = set()
    for i, v in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(v, dict) or not v.get("name"):
            errs.append(errors.required(f"{path}.name"))
            continue
        if v["name"] in seen:
            errs.append(errors.FieldError("FieldValueDuplicate", f"{path}.name", "", v["name"]))
        seen.add(v["name"])
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errs.append(errors.required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
            continue
        schema_path = f"{path}.schema.openAPIV3Schema"
        structural = _structural_errors(schema, schema_path, root=True)
        errs.extend(structural)
        if not structural:  # upstream compiles CEL only on schemas without structural errors
            errs.extend(cel.compile_rules(schema, schema_path, stored=_rule_sources(old))[0])
    old_spec = old.get("spec") if old is not None and isinstance(old.get("spec"), dict) else None
    errs.extend(apiextensions.conversion(spec, old_spec))
    return errs


def _rule_sources(crd: Object | None) -> frozenset[str]:
    """The CEL rules already stored in ``crd``: on update they compile against the stored
    expressions' library set, new ones against the previous minor's (apiserver environment)."""
    if crd is None:
        return frozenset()
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or ():
                if isinstance(rule, dict):
                    found.update(
                        v
                        for k, v in rule.items()
                        if k in ("rule", "messageExpression") and isinstance(v, str)
                    )
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk((crd.get("spec") or {}).get("versions"))
    return frozenset(found)


def _structural_errors(node: Any, path: str, *, root: bool = False) -> list[errors.FieldError]:
    """The structural-schema rules that matter for serving: every node typed."""
    if not isinstance(node, dict):
        return [errors.invalid(path, node, "must be an object")]
    errs: list[errors.FieldError] = []
    typed = (
        "type" in node
        or node.get("x-kubernetes-int-or-string")
        or node.get("x-kubernetes-preserve-unknown-fields")
    )
    if not typed:
        errs.append(errors.required(f"{path}.type", "must not be empty for specified object fields"))
    if root and node.get("type") not in (None, "object"):
        errs.append(errors.invalid(f"{path}.type", node.get("type"), "must be object at the root"))
    for name, child in (node.get("properties") or {}).items():
        errs.extend(_structural_errors(child, f"{path}.properties[{name}]"))
    if isinstance(node.get("items"), dict):
        errs.extend(_structural_errors(node["items"], f"{path}.items"))
    if isinstance(node.get("additionalProperties"), dict):
        errs.extend(_structural_errors(node["additionalProperties"], f"{path}.additionalProperties"))
    return errs


class CRDStrategy(strategy.Strategy):
    """CRDs: validated on write, born established, with the cleanup finalizer."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def prepare_for_create(
        self, record: ResourceRecord, obj: Object, list_current: strategy.ListCurrent
    ) -> None:
        """Upstream's PrepareForCreate: status is reset to the storage version alone (with the
        empty accepted names Go's zero value prints); the names are accepted and the CRD
        established afterwards, by ``CRDController``. The cleanup finalizer comes with the first
        delete, not here."""
        spec = obj.get("spec")
        versions = spec.get("versions") if isinstance(spec, dict) else None
        stored = [
            v["name"]
            for v in versions or []
            if isinstance(v, dict) and v.get("storage") and isinstance(v.get("name"), str)
        ][:1]
        obj["status"] = {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": stored}

    def finalizers_on_delete(self, record: ResourceRecord) -> tuple[str, ...]:
        return (crdfinalizer.CLEANUP_FINALIZER,)

    def mark_deleting(self, obj: Object) -> None:
        """The first delete also reports the coming cleanup (``Terminating``, upstream's CRD REST
        ``Delete``)."""
        obj["status"] = crdfinalizer.pending(obj, rfc3339(self.clock))["status"]

    def prepare_for_update(self, record: ResourceRecord, new: Object, old: Object) -> None:
        super().prepare_for_update(record, new, old)
        self._fill_status(new, old)

    def validate(self, record: ResourceRecord, obj: Object, old: Object | None) -> list[errors.FieldError]:
        errs = _validate_crd(obj, old)
        if old is not None and not errs:
            for field in ("group",):
                if (obj["spec"] or {}).get(field) != (old.get("spec") or {}).get(field):
                    errs.append(errors.invalid(f"spec.{field}", obj["spec"].get(field), "field is immutable"))
            if (obj["spec"] or {}).get("scope") != (old.get("spec") or {}).get("scope"):
                errs.append(errors.invalid("spec.scope", obj["spec"].get("scope"), "field is immutable"))
        return errs

    def _fill_status(self, obj: Object, old: Object | None) -> None:
        fill_status(obj, old, rfc3339(self.clock))


def established(crd: Object) -> bool:
    return crdconditions.is_true(crd, "Established")


def accept_names(crd: Object, now: str) -> Object:
    """``crd`` as upstream's naming controller writes it: names accepted, Established False
    ("Installing") until the establishing controller follows. Unchanged once accepted."""
    if crdconditions.is_true(crd, "NamesAccepted") or established(crd):
        return crd
    status = dict(crd.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    kept = [c for c in conditions if c.get("type") not in ("NamesAccepted", "Established")]
    status["conditions"] = [
        *kept,
        crdconditions.condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now),
        crdconditions.condition(
            "Established", "False", "Installing", "the initial names have been accepted", now
        ),
    ]
    status["acceptedNames"] = dict((crd.get("spec") or {}).get("names") or {})
    return {**crd, "status": status}


def establish(crd: Object, now: str) -> Object:
    """``crd`` as upstream's establishing controller writes it: Established True (once)."""
    if established(crd):
        return crd
    status = dict(crd.get("status") or {})
    conditions = [
        c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") != "Established"
    ]
    conditions.append(
        crdconditions.condition(
            "Established", "True", "InitialNamesAccepted", "the initial names have been accepted", now
        )
    )
    status["conditions"] = conditions
    return {**crd, "status": status}


def fill_status(obj: Object, old: Object | None, now: str) -> None:
    """A CRD's status after a main-endpoint update: stored versions, accepted names and the
    naming conditions kept up to date (the naming controller's work, done on the write)."""
    raw_spec = obj.get("spec")
    spec: Object = raw_spec if isinstance(raw_spec, dict) else {}
    status = dict((old or {}).get("status") or obj.get("status") or {})
    stored = list(status.get("storedVersions") or [])
    for v in spec.get("versions") or []:
        if isinstance(v, dict) and v.get("storage") and v.get("name") not in stored:
            stored.append(v["name"])
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    for ctype, reason, message in (
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ):
        if ctype not in conditions:
            conditions[ctype] = crdconditions.condition(ctype, "True", reason, message, now)
    status["conditions"] = list(conditions.values())
    status["acceptedNames"] = dict(spec.get("names") or {})
    status["storedVersions"] = stored
    obj["status"] = status


def strategies(clock: Clock) -> dict[tuple[str, str], strategy.Strategy]:
    """This module's strategies by (group, kind), for the ``Registry``'s construction."""
    return {("apiextensions.k8s.io", "CustomResourceDefinition"): CRDStrategy(clock)}


class CRDController:
    """Keeps the catalog equal to the established CRDs, and finishes CRD deletions."""

    def __init__(self, registry: Registry, catalog: Catalog, clock: Clock) -> None:
        self.registry = registry
        self.catalog = catalog
        self.clock = clock
        self._task: asyncio.Task[None] | None = None
        self._finalizer = crdfinalizer.CRDFinalizer(
            registry, clock, crd_record=self.crd_record, storage_record=storage_record
        )
        self._establishing: dict[str, asyncio.Task[None]] = {}
        registry.after_write(
            self._after_write, resource=("apiextensions.k8s.io", "customresourcedefinitions")
        )

    def _after_write(self, record: ResourceRecord, obj: Object, deleted: bool) -> None:
        if record.group == "apiextensions.k8s.io" and record.plural == "customresourcedefinitions":
            self.sync(obj, deleted=deleted)

    def crd_record(self) -> ResourceRecord:
        record = self.catalog.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert record is not None
        return record

    async def start(self) -> None:
        page = await self.registry.storage.list(CRD_PREFIX)
        for crd in page.items:
            self.sync(crd)
        self._task = asyncio.get_running_loop().create_task(self._follow(page.revision))

    async def close(self) -> None:
        tasks = [t for t in [self._task, *self._establishing.values()] if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._finalizer.close()

    def sync(self, crd: Object, *, deleted: bool = False) -> None:
        """Make the catalog serve exactly what ``crd`` defines (nothing, once deleted)."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        gr = GroupResource(spec.get("group", ""), names.get("plural", ""))
        if not gr.group or not gr.resource:
            return
        if deleted:
            self.catalog.replace_group_resource(gr, [])
            return
        self.catalog.replace_group_resource(gr, crd_records(crd))
        if (crd.get("metadata") or {}).get("deletionTimestamp"):
            self._finalizer.finish(crd["metadata"]["name"], gr)
        elif not established(crd):
            self._establish_soon(crd["metadata"]["name"])

    def _establish_soon(self, name: str) -> None:
        task = self._establishing.get(name)
        if task is None or task.done():
            self._establishing[name] = asyncio.get_running_loop().create_task(self._establish(name))

    async def _establish(self, name: str) -> None:
        """Upstream's naming then establishing controllers, as two status writes."""
        opts = WriteOptions(field_manager="kube-apiserver")
        try:
            for step in (accept_names, establish):
                transform = functools.partial(step, now=rfc3339(self.clock))
                crd = await self.registry.update(
                    self.crd_record(), "", name, transform, subresource="status", opts=opts
                )
                if (crd.get("metadata") or {}).get("deletionTimestamp"):
                    return
        except errors.NotFound:
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("establishing CRD %s failed", name)

    async def _follow(self, revision: int) -> None:
        while True:
            try:
                watch = self.registry.storage.watch(CRD_PREFIX, revision)
                async for ev in watch:
                    revision = ev.revision
                    self.sync(ev.object, deleted=ev.type == storage.DELETED)
            except asyncio.CancelledError:
                raise
            except storage.Expired:
                page = await self.registry.storage.list(CRD_PREFIX)
                for crd in page.items:
                    self.sync(crd)
                revision = page.revision
            except Exception:
                log.exception("CRD watch failed; restarting")
                await self.clock.sleep(1.0)
