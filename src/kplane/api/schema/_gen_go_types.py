"""Generate ``_go_types.py`` from the Go sources of ``k8s.io/api`` and ``k8s.io/apiextensions-apiserver``
(checkouts of tag v0.32.0).

Usage: ``python -m kplane.api.schema._gen_go_types API_DIR [APIEXTENSIONS_DIR] > _go_types.py``
(into ``src/kplane/api/schema/``), then ``ruff format`` the output.

Design note. Upstream's OpenAPI carries ``enum`` for every field whose Go type is a string type
marked ``// +enum``; the values are all the constants of that type, wherever declared (kube-openapi's
enum generator). The ``kubernetes-validate`` definitions lack them. This generator reads the Go
sources with a few line-oriented patterns (the API packages are written in one regular style:
``type X string`` after a comment block, typed ``const`` blocks, one struct field per line with a
``json`` tag), resolves imports, aliases (``type ScopeType = v1.ScopeType``) and inlined structs,
and prints, for each definition, the JSON properties that hold an enum and their sorted values.
Only names and values are kept: none of the upstream prose.

It also records which properties are struct-typed Go fields that are not pointers: those exist in
the zero value of a kind (``spec`` of a Deployment, ``strategy`` of its spec), which is what
structured-merge-diff compares a create against when it builds the creator's managedFields.

And the Go type of the properties whose type is a named non-struct type (``v1.Protocol``,
``v1.ResourceList``, ``[]v1.Capability``), which the definitions cannot tell and Go's JSON decode
errors name (see ``godecode``).
"""

from __future__ import annotations

import pathlib
import pprint
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

_MODULES = "k8s.io/"
_SKIP = ("_test.go", "generated.pb.go", "zz_generated.deepcopy.go", "types_swagger_doc_generated.go")
_TYPE = re.compile(r"^type\s+(\w+)\s+(.*)$")
_CONST_LINE = re.compile(r"^\s*(\w+)\s+([\w.]+)\s*=\s*(\"[^\"]*\"|[\w.]+)\s*(?://.*)?$")
_SINGLE_CONST = re.compile(r"^const\s+(\w+)\s+([\w.]+)\s*=\s*(\"[^\"]*\"|[\w.]+)")
_FIELD = re.compile(r"^\s*(\w+)\s+(\S+)\s+`[^`]*json:\"([^\"]*)\"")
_EMBEDDED = re.compile(r"^\s*([\w.*]+)\s+`[^`]*json:\",inline\"")
_EMBEDDED_NAMED = re.compile(r"^\s*(\*?[\w.]+)\s+`[^`]*json:\"([^\",]+)")
_IMPORT = re.compile(r"^\s*(?:(\w+)\s+)?\"([^\"]+)\"")

T = TypeVar("T")
Key = tuple[str, str]  # (package dir such as "apps/v1", type name)


@dataclass
class _Package:
    imports: dict[str, str] = field(default_factory=dict)  # alias -> package dir (k8s.io/api only)
    enums: set[str] = field(default_factory=set)
    aliases: dict[str, str] = field(default_factory=dict)  # type name -> "pkg.Name" it aliases
    consts: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (type, value expr)
    structs: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)  # fields
    named: set[str] = field(default_factory=set)  # named types that are neither structs nor aliases


def _parse_file(text: str, pkg: _Package) -> None:
    lines = text.splitlines()
    comments: list[str] = []
    i = 0
    in_const = in_import = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        i += 1
        if in_import:
            if stripped == ")":
                in_import = False
            elif m := _IMPORT.match(line):
                _add_import(pkg, m.group(1), m.group(2))
            continue
        if in_const:
            if stripped == ")":
                in_const = False
            elif m := _CONST_LINE.match(line):
                pkg.consts[m.group(1)] = (m.group(2), m.group(3))
            continue
        if stripped.startswith("//"):
            comments.append(stripped)
            continue
        if stripped == "import (":
            in_import = True
        elif stripped.startswith("import "):
            if m := _IMPORT.match(stripped[len("import ") :]):
                _add_import(pkg, m.group(1), m.group(2))
        elif stripped == "const (":
            in_const = True
        elif m := _SINGLE_CONST.match(stripped):
            pkg.consts[m.group(1)] = (m.group(2), m.group(3))
        elif m := _TYPE.match(stripped):
            name, rest = m.group(1), m.group(2)
            if "// +enum" in comments:
                pkg.enums.add(name)
            if rest.startswith("="):
                pkg.aliases[name] = rest[1:].strip()
            elif rest.startswith("struct {") and not rest.endswith("}"):
                fields, i = _parse_struct(lines, i)
                pkg.structs[name] = fields
            elif not rest.startswith(("struct", "interface")):
                pkg.named.add(name)
        comments = []


def _add_import(pkg: _Package, alias: str | None, path: str) -> None:
    if path.startswith(_MODULES):
        rel = path[len(_MODULES) :]
        pkg.imports[alias or rel.rsplit("/", 1)[-1]] = rel


def _parse_struct(lines: list[str], i: int) -> tuple[list[tuple[str, str, str]], int]:
    """(json name or "" for inline, Go type, container) per field; the index after the struct.
    The container (``_element``) ends with ``?`` for a field marshalled as null when unset."""
    fields: list[tuple[str, str, str]] = []
    depth = 1
    while i < len(lines) and depth:
        line = lines[i]
        i += 1
        code = line.split("//", 1)[0]
        if depth == 1:
            if m := _EMBEDDED.match(line):
                fields.append(("", m.group(1).lstrip("*"), "scalar"))
            elif m := _EMBEDDED_NAMED.match(line):
                go_type, container = _element(m.group(1))
                fields.append((m.group(2), go_type, container))
            elif m := _FIELD.match(line):
                json_name, _, options = m.group(3).partition(",")
                if json_name and json_name != "-":
                    go_type, container = _element(m.group(2))
                    # A nil pointer, slice or map without omitempty is marshalled as null.
                    null = container != "value" and "omitempty" not in options
                    fields.append((json_name, go_type, container + ("?" if null else "")))
        depth += code.count("{") - code.count("}")
    return fields, i


def _element(go_type: str) -> tuple[str, str]:
    """(element type, where the enum goes: the value itself, list ``items`` or map values; ``value``
    for a field that is neither a pointer nor a container)."""
    if not go_type.startswith(("*", "[]", "map[")):
        return go_type, "value"
    t = go_type.lstrip("*")
    if t.startswith("[]"):
        return t[2:].lstrip("*"), "items"
    if t.startswith("map["):
        return t[t.index("]") + 1 :].lstrip("*"), "additionalProperties"
    return t, "scalar"


def _resolve(pkgs: dict[str, _Package], here: str, name: str) -> Key | None:
    """The key of the type ``name`` as written in package ``here``, aliases followed."""
    for _ in range(8):
        if "." in name:
            alias, _, base = name.partition(".")
            target = pkgs[here].imports.get(alias)
            if target is None or target not in pkgs:
                return None
            here, name = target, base
        aliased = pkgs[here].aliases.get(name)
        if aliased is None:
            return here, name
        name = aliased
    return None


def _const_value(pkgs: dict[str, _Package], here: str, expr: str) -> str | None:
    for _ in range(8):
        if expr.startswith('"'):
            return expr[1:-1]
        if "." in expr:
            alias, _, expr = expr.partition(".")
            target = pkgs[here].imports.get(alias)
            if target is None or target not in pkgs:
                return None
            here = target
        const = pkgs[here].consts.get(expr)
        if const is None:
            return None
        expr = const[1]
    return None


def load(root: pathlib.Path, module: str, pkgs: dict[str, _Package] | None = None) -> dict[str, _Package]:
    """Parse the Go module ``k8s.io/<module>`` checked out at ``root`` into ``pkgs`` (keyed by
    import path without ``k8s.io/``)."""
    pkgs = {} if pkgs is None else pkgs
    for go in sorted(root.rglob("*.go")):
        if go.name.endswith(_SKIP) or go.name in _SKIP:
            continue
        rel = f"{module}/{go.parent.relative_to(root).as_posix()}"
        _parse_file(go.read_text(), pkgs.setdefault(rel, _Package()))
    return pkgs


def enum_values(pkgs: dict[str, _Package]) -> dict[Key, list[str]]:
    """Every ``+enum`` type and its constants' values, sorted."""
    values: dict[Key, set[str]] = {(p, n): set() for p, pkg in pkgs.items() for n in pkg.enums}
    for here, pkg in pkgs.items():
        for go_type, expr in pkg.consts.values():
            key = _resolve(pkgs, here, go_type)
            if key in values:
                value = _const_value(pkgs, here, expr)
                if value is not None:
                    values[key].add(value)
    return {k: sorted(v) for k, v in values.items() if v}


def definition_enums(pkgs: dict[str, _Package]) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """definition name -> JSON property -> (container, values)."""
    enums = enum_values(pkgs)

    def fields_of(here: str, struct: str, seen: frozenset[Key]) -> dict[str, tuple[str, tuple[str, ...]]]:
        out: dict[str, tuple[str, tuple[str, ...]]] = {}
        for json_name, go_type, container in pkgs[here].structs.get(struct, ()):
            key = _resolve(pkgs, here, go_type)
            if key is None:
                continue
            if not json_name:
                if key not in seen and key[1] in pkgs[key[0]].structs:
                    out.update(fields_of(key[0], key[1], seen | {key}))
            elif key in enums:
                where = container.rstrip("?")
                out[json_name] = ("scalar" if where == "value" else where, tuple(enums[key]))
        return out

    return _per_definition(pkgs, fields_of)


def _definition(here: str, struct: str) -> str:
    return f"io.k8s.{here.replace('/', '.')}.{struct}"


def _per_definition(
    pkgs: dict[str, _Package], fields_of: Callable[[str, str, frozenset[Key]], dict[str, T]]
) -> dict[str, dict[str, T]]:
    """``fields_of`` of every struct, by definition name, structs without any left out."""
    result: dict[str, dict[str, T]] = {}
    for here, pkg in sorted(pkgs.items()):
        for struct in sorted(pkg.structs):
            props = fields_of(here, struct, frozenset({(here, struct)}))
            if props:
                result[_definition(here, struct)] = dict(sorted(props.items()))
    return result


def value_structs(pkgs: dict[str, _Package]) -> dict[str, dict[str, str | None]]:
    """definition name -> JSON property -> definition of a non-pointer struct field (present in
    the type's zero value), or None for a pointer, slice or map without ``omitempty`` (present as
    null). ``metav1.ObjectMeta`` counts; other apimachinery types marshal their zero value as a
    scalar or null (Time, Quantity, IntOrString) and are left out."""

    def fields_of(here: str, struct: str, seen: frozenset[Key]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for json_name, go_type, container in pkgs[here].structs.get(struct, ()):
            if container.endswith("?"):
                out[json_name] = None
                continue
            if go_type.endswith(".ObjectMeta") and container == "value":
                out[json_name] = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
                continue
            key = _resolve(pkgs, here, go_type)
            if key is None or key[1] not in pkgs[key[0]].structs:
                continue
            if not json_name:
                if key not in seen:
                    out.update(fields_of(key[0], key[1], seen | {key}))
            elif container == "value":
                out[json_name] = _definition(*key)
        return out

    return _per_definition(pkgs, fields_of)


def named_types(pkgs: dict[str, _Package]) -> dict[str, dict[str, str]]:
    """definition name -> JSON property -> the Go type as reflect prints it (``v1.Protocol``,
    ``[]v1.Capability``), for properties of a named non-struct type (maps of them are left out)."""

    def fields_of(here: str, struct: str, seen: frozenset[Key]) -> dict[str, str]:
        out: dict[str, str] = {}
        for json_name, go_type, container in pkgs[here].structs.get(struct, ()):
            key = _resolve(pkgs, here, go_type)
            if key is None:
                continue
            if not json_name:
                if key not in seen and key[1] in pkgs[key[0]].structs:
                    out.update(fields_of(key[0], key[1], seen | {key}))
                continue
            if key[1] not in pkgs[key[0]].named:
                continue
            shown = f"{key[0].rsplit('/', 1)[-1]}.{key[1]}"
            where = container.rstrip("?")
            if where in ("value", "scalar"):
                out[json_name] = shown
            elif where == "items":
                out[json_name] = "[]" + shown
        return out

    return _per_definition(pkgs, fields_of)


def main() -> None:
    pkgs = load(pathlib.Path(sys.argv[1]), "api")
    if len(sys.argv) > 2:
        load(pathlib.Path(sys.argv[2]), "apiextensions-apiserver", pkgs)
    data = definition_enums(pkgs)
    print("# ruff: noqa: E501")
    print('"""Generated by ``_gen_go_types`` from k8s.io/api and k8s.io/apiextensions-apiserver v0.32.0:')
    print("do not edit.")
    print()
    print("``ENUMS``: for each definition, the properties whose Go type is an upstream ``+enum`` type:")
    print('where the enum applies (``"scalar"``, list ``"items"`` or map ``"additionalProperties"``) and')
    print("the values. ``VALUE_STRUCTS``: the properties present in the zero value of the type: the")
    print("definitions of non-pointer struct fields, None for fields marshalled as null. ``NAMED``:")
    print("the Go type of the properties of a named non-struct type, as reflect prints it.")
    print('"""')
    print()
    print("ENUMS: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = " + pprint.pformat(data, width=100))
    print()
    structs = value_structs(pkgs)
    print("VALUE_STRUCTS: dict[str, dict[str, str | None]] = " + pprint.pformat(structs, width=100))
    print()
    print("NAMED: dict[str, dict[str, str]] = " + pprint.pformat(named_types(pkgs), width=100))


if __name__ == "__main__":
    main()
