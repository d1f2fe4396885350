"""Generates ``kplane.client.models``: msgspec Structs for the built-in kinds (``make models``).

Input: the Kubernetes definitions the server validates with (``kplane.api.schema.builtin``).
Output: one module per group-version (``apps_v1.py``, ``core_v1.py``, ``meta_v1.py``...) holding
one Struct per definition reachable from a kind the server serves (``BUILTIN_RECORDS``), plus
``Scale``, ``Status`` and ``DeleteOptions``.

Shape of a model: attributes are snake_case, each renamed to its wire name; every field is
optional and defaults to None (the server fills what it must, and partial objects are what
server-side apply wants); ``omit_defaults`` keeps None fields off the wire; ``gc=False`` makes
instances smaller and faster to decode (models hold no reference cycles). A kind carries
``gvk: ClassVar[GroupVersionKind]``. Wire types: ``int-or-string`` → ``int | str``; ``Quantity``
→ ``str``; ``Time``/``MicroTime`` → ``datetime`` (msgspec parses RFC 3339 in C: faster and
smaller than a str); free-form objects (``RawExtension``, ``FieldsV1``, ``JSON``) → ``dict`` or
``Any``.

Run: ``python -m kplane.client._modelgen [output_dir]``.
"""

from __future__ import annotations

import keyword
import pathlib
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from kplane.api import builtin
from kplane.api.schema import builtin as schema_builtin

OUT_DIR = pathlib.Path(__file__).parent / "models"

_PREFIXES = (
    ("io.k8s.api.", ""),
    ("io.k8s.apimachinery.pkg.apis.", ""),
    ("io.k8s.apiextensions-apiserver.pkg.apis.", ""),
    ("io.k8s.kube-aggregator.pkg.apis.", ""),
)

_INLINE: dict[str, str] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "str",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int | str",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "datetime.datetime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "datetime.datetime",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "dict[str, Any]",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "dict[str, Any]",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": "dict[str, Any]",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "Any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "Any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "Any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "Any",
}

_EXTRA_ROOTS = (
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
)

_RESERVED = {"gvk", "str", "int", "float", "bool", "list", "dict", "Any", "datetime", "msgspec", "ClassVar"}


def module_of(name: str) -> str:
    """``io.k8s.api.apps.v1.Deployment`` → ``apps_v1``; ``...apis.meta.v1.Time`` → ``meta_v1``."""
    package = name.rsplit(".", 1)[0]
    for prefix, repl in _PREFIXES:
        if package.startswith(prefix):
            package = repl + package[len(prefix) :]
            break
    else:
        package = package.rsplit(".", 1)[-1]
    return package.replace(".", "_").replace("-", "_")


def snake(wire: str) -> str:
    """A Python attribute for a wire name: ``podIP`` → ``pod_ip``, ``clusterIPs`` → ``cluster_ips``."""
    s = re.sub(r"[^0-9A-Za-z]+", "_", wire).strip("_")
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", s)
    s = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])(?![A-Z]s(?:[^a-z]|$))", "_", s)
    s = s.lower()
    if keyword.iskeyword(s) or s in _RESERVED or not s or s[0].isdigit():
        s += "_"
    return s


def _ref_name(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def roots() -> list[str]:
    """Definition names of every built-in kind and its list, plus the extra meta types."""
    out: list[str] = []
    for rec in builtin.BUILTIN_RECORDS:
        for kind in (rec.kind, rec.list_kind):
            name = schema_builtin.definition_name_for_gvk(rec.group, rec.version, kind)
            if name is not None and name not in out:
                out.append(name)
    out.extend(n for n in _EXTRA_ROOTS if n not in out)
    return out


def closure(defs: Mapping[str, Mapping[str, Any]], start: list[str]) -> list[str]:
    """Every definition reachable from ``start`` through ``$ref`` (inline types excluded), sorted."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen or name in _INLINE:
            continue
        seen.add(name)
        todo.extend(_refs(defs[name]))
    return sorted(seen)


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, Mapping):
        ref = _ref_name(schema)
        if ref:
            yield ref
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


class _Module:
    def __init__(self, name: str) -> None:
        self.name = name
        self.imports: set[str] = set()
        self.uses_datetime = False
        self.uses_any = False
        self.uses_gvk = False
        self.classes: list[str] = []


def type_of(schema: Mapping[str, Any], mod: _Module) -> str:
    """The annotation (without ``| None``) for a property schema, recording imports in ``mod``."""
    ref = _ref_name(schema)
    if ref is not None:
        if ref in _INLINE:
            text = _INLINE[ref]
            mod.uses_datetime |= "datetime" in text
            mod.uses_any |= "Any" in text
            return text
        target = module_of(ref)
        cls = ref.rsplit(".", 1)[-1]
        if target == mod.name:
            return cls
        mod.imports.add(target)
        return f"{target}.{cls}"
    types = schema.get("type")
    kind = next((t for t in types if t != "null"), None) if isinstance(types, list) else types
    if kind == "string":
        if schema.get("format") == "date-time":
            mod.uses_datetime = True
            return "datetime.datetime"
        return "str"
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        return f"list[{type_of(schema.get('items') or {}, mod)}]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        return f"dict[str, {type_of(schema['additionalProperties'], mod)}]"
    mod.uses_any = True
    return "dict[str, Any]" if kind == "object" else "Any"


def _doc(text: str) -> str:
    first = re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0] if text else ""
    first = first.replace("\\", "\\\\").replace('"""', "'''")
    return first or "A Kubernetes API type."


def render_class(name: str, schema: Mapping[str, Any], mod: _Module) -> str:
    cls = name.rsplit(".", 1)[-1]
    lines = [f"class {cls}(_base.Model):", f'    """{_doc(str(schema.get("description") or ""))}"""', ""]
    gvks = schema.get("x-kubernetes-group-version-kind") or []
    if len(gvks) == 1:
        g = gvks[0]
        mod.uses_gvk = True
        gvk = f'"{g.get("group", "")}", "{g["version"]}", "{g["kind"]}"'
        lines.append(f"    gvk: ClassVar[GroupVersionKind] = GroupVersionKind({gvk})")
    used: set[str] = set()
    for wire, prop in (schema.get("properties") or {}).items():
        attr = snake(wire)
        while attr in used:
            attr += "_"
        used.add(attr)
        annotation = type_of(prop, mod)
        if attr == wire:
            lines.append(f"    {attr}: {annotation} | None = None")
        else:
            lines.append(f'    {attr}: {annotation} | None = msgspec.field(default=None, name="{wire}")')
    if not schema.get("properties"):
        lines.append("    pass")
    return "\n".join(lines)


def render_module(mod: _Module) -> str:
    head = [
        "# ruff: noqa: E501",
        f'"""Generated by ``kplane.client._modelgen`` from the Kubernetes {schema_builtin.KUBERNETES_VERSION}'
        f' definitions: do not edit."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    if mod.uses_datetime:
        head.append("import datetime")
    if mod.uses_any or mod.uses_gvk:
        names = ", ".join(n for n, used in (("Any", mod.uses_any), ("ClassVar", mod.uses_gvk)) if used)
        head.append(f"from typing import {names}")
    head += ["", "import msgspec", ""]
    if mod.uses_gvk:
        head.append("from kplane.api.gvk import GroupVersionKind")
    imported = sorted({"_base", *mod.imports})
    head.append(f"from kplane.client.models import {', '.join(imported)}")
    head.append("")
    if not any("msgspec.field" in c for c in mod.classes):
        head.remove("import msgspec")
    return "\n".join(head) + "\n\n" + "\n\n\n".join(mod.classes) + "\n"


def generate(out_dir: pathlib.Path = OUT_DIR) -> list[pathlib.Path]:
    """Write every model module (and ``__init__.py``/``_base.py``) into ``out_dir``; returns the paths."""
    defs = schema_builtin.definitions()
    modules: dict[str, _Module] = {}
    for name in closure(defs, roots()):
        mod_name = module_of(name)
        mod = modules.setdefault(mod_name, _Module(mod_name))
        mod.classes.append(render_class(name, defs[name], mod))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for mod in modules.values():
        path = out_dir / f"{mod.name}.py"
        path.write_text(render_module(mod))
        written.append(path)
    names = sorted(modules)
    init = [
        "# ruff: noqa: E501",
        '"""Typed models of the built-in Kubernetes kinds, one module per group-version (generated).',
        "",
        "``msgspec.json.decode(data, type=apps_v1.Deployment)`` decodes; ``msgspec.json.encode`` encodes.",
        "Each module is imported on first use (all of them cost ~7 MiB of memory), so a program pays only",
        'for the kinds it uses. Regenerate with ``make models``; do not edit."""',
        "",
        "import importlib",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
        f"    from kplane.client.models import {', '.join(names)}",
        "",
        f"__all__ = [{', '.join(repr(n) for n in names)}]",
        "",
        "",
        "def __getattr__(name: str) -> Any:",
        "    if name in __all__:",
        '        return importlib.import_module(f"{__name__}.{name}")',
        '    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "",
    ]
    (out_dir / "__init__.py").write_text("\n".join(init))
    (out_dir / "_base.py").write_text(_BASE)
    return [*written, out_dir / "__init__.py", out_dir / "_base.py"]


_BASE = '''"""The base of every generated model (generated: do not edit)."""

from __future__ import annotations

import msgspec


class Model(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """A Kubernetes API value: all fields optional, None fields omitted on the wire."""
'''


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = pathlib.Path(args[0]) if args else OUT_DIR
    for path in generate(out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
