"""A small JSONPath evaluator: the subset that CRD printer columns and selectable fields use.

Supported, in kubectl's dialect (client-go ``util/jsonpath``), optionally wrapped in ``{...}``
and optionally starting with ``$``:

* fields: ``.spec.replicas``, ``.metadata.labels.app\\.kubernetes\\.io/name`` (``\\.`` escapes a
  dot), ``['app.kubernetes.io/name']`` / ``["key"]``, several quoted keys ``['a','b']``;
* recursive descent ``..name``; wildcards ``.*`` and ``[*]``;
* list indexes and slices: ``[0]``, ``[-1]``, ``[1:3]``, ``[::2]``;
* filters: ``[?(@.type=="Ready")]``, with ``== != < <= > >=`` against a quoted string, a
  number, ``true``/``false``/``null``, and bare ``[?(@.ready)]`` (present and not false/null).

Missing keys and out-of-range indexes yield no result rather than an error (client-go's
``AllowMissingKeys(true)``, which the Table convertor sets). Unsupported syntax raises
``JSONPathError`` when compiling, never while evaluating. Compiled paths are cached.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["JSONPathError", "Path", "compile_path", "find", "first"]


class JSONPathError(ValueError):
    """The expression is not in the supported JSONPath subset."""


_Step = Callable[[Iterable[Any]], list[Any]]
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Path:
    """A compiled JSONPath; ``find`` never mutates the data it walks."""

    expression: str
    steps: tuple[_Step, ...]

    def find(self, data: Any) -> list[Any]:
        """Every value the path selects in ``data``, in document order."""
        current: list[Any] = [data]
        for step in self.steps:
            current = step(current)
            if not current:
                break
        return current

    def first(self, data: Any, default: Any = None) -> Any:
        """The first selected value, or ``default`` when nothing matches."""
        found = self.find(data)
        return found[0] if found else default


def find(expression: str, data: Any) -> list[Any]:
    """Compile (cached) and evaluate ``expression`` against ``data``."""
    return compile_path(expression).find(data)


def first(expression: str, data: Any, default: Any = None) -> Any:
    """The first value ``expression`` selects in ``data``, or ``default``."""
    return compile_path(expression).first(data, default)


@functools.lru_cache(maxsize=1024)
def compile_path(expression: str) -> Path:
    """Parse ``expression`` into a ``Path``; raises ``JSONPathError`` for unsupported syntax."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps = _Parser(expression, text).parse()
    return Path(expression, tuple(steps))


# -- steps -----------------------------------------------------------------------------------


def _field_step(name: str) -> _Step:
    def step(nodes: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, dict):
                value = node.get(name, _MISSING)
                if value is not _MISSING:
                    out.append(value)
        return out

    return step


def _keys_step(names: tuple[str, ...]) -> _Step:
    def step(nodes: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, dict):
                out.extend(node[n] for n in names if n in node)
        return out

    return step


def _wildcard(nodes: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for node in nodes:
        if isinstance(node, dict):
            # client-go walks maps in key order when printing; keep results deterministic
            out.extend(node[k] for k in sorted(node))
        elif isinstance(node, list):
            out.extend(node)
    return out


def _descendants(node: Any) -> Iterable[Any]:
    yield node
    if isinstance(node, dict):
        for key in sorted(node):
            yield from _descendants(node[key])
    elif isinstance(node, list):
        for item in node:
            yield from _descendants(item)


def _recursive_step(name: str | None) -> _Step:
    def step(nodes: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            for sub in _descendants(node):
                if name is None:
                    out.append(sub)
                elif isinstance(sub, dict) and name in sub:
                    out.append(sub[name])
        return out

    return step


def _index_step(index: int) -> _Step:
    def step(nodes: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, list) and -len(node) <= index < len(node):
                out.append(node[index])
        return out

    return step


def _slice_step(start: int | None, stop: int | None, stride: int | None) -> _Step:
    window = slice(start, stop, stride)

    def step(nodes: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, list):
                out.extend(node[window])
        return out

    return step


_Compare = Callable[[Any, Any], bool]


def _same_kind(left: Any, right: Any) -> bool:
    # JSON true is not the number 1, although Python's bool is an int
    return isinstance(left, bool) == isinstance(right, bool)


def _ordered(op: _Compare) -> _Compare:
    def compare(left: Any, right: Any) -> bool:
        if not _same_kind(left, right):
            return False
        try:
            return op(left, right)
        except TypeError:  # e.g. a string against a number: no match, as in client-go
            return False

    return compare


_OPERATORS: dict[str, _Compare] = {
    "==": lambda a, b: _same_kind(a, b) and bool(a == b),
    "!=": lambda a, b: not _same_kind(a, b) or bool(a != b),
    "<=": _ordered(lambda a, b: bool(a <= b)),
    ">=": _ordered(lambda a, b: bool(a >= b)),
    "<": _ordered(lambda a, b: bool(a < b)),
    ">": _ordered(lambda a, b: bool(a > b)),
}


def _filter_step(inner: Path, op: str | None, literal: Any) -> _Step:
    compare = _OPERATORS[op] if op else None

    def matches(item: Any) -> bool:
        found = inner.find(item)
        if compare is None:
            return any(v is not None and v is not False for v in found)
        return any(compare(v, literal) for v in found)

    def step(nodes: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, list):
                out.extend(item for item in node if matches(item))
            elif isinstance(node, dict) and matches(node):
                out.append(node)
        return out

    return step


# -- parser ----------------------------------------------------------------------------------

_INTEGER = re.compile(r"-?\d+$")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_KEY = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_KEY_LIST = re.compile(r"""\s*(?:'[^']*'|"[^"]*")\s*(?:,\s*(?:'[^']*'|"[^"]*")\s*)*$""")
_FILTER = re.compile(r"^\s*@(?P<path>[^=!<>]*?)\s*(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<lit>.+?))?\s*$")


class _Parser:
    def __init__(self, original: str, text: str) -> None:
        self.original = original
        self.text = text
        self.pos = 0

    def fail(self, why: str) -> JSONPathError:
        return JSONPathError(f"invalid JSONPath {self.original!r}: {why} at offset {self.pos}")

    def parse(self) -> list[_Step]:
        steps: list[_Step] = []
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if text.startswith("..", self.pos):
                self.pos += 2
                if self.pos < len(text) and text[self.pos] == "[":
                    steps.append(_recursive_step(None))
                    continue
                name = self.name()
                steps.append(_recursive_step(None if name == "*" else name))
            elif ch == ".":
                self.pos += 1
                if self.pos >= len(text):
                    break  # a lone "." (or a trailing one) selects the current node
                if text[self.pos] == "[":
                    continue
                name = self.name()
                steps.append(_wildcard if name == "*" else _field_step(name))
            elif ch == "[":
                steps.append(self.bracket())
            elif ch.isspace():
                self.pos += 1
            elif not steps and self.pos == 0:
                # kubectl accepts "spec.replicas" without the leading dot
                steps.append(_field_step(self.name()))
            else:
                raise self.fail(f"unexpected {ch!r}")
        return steps

    def name(self) -> str:
        text = self.text
        chars: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\\" and self.pos + 1 < len(text):
                chars.append(text[self.pos + 1])
                self.pos += 2
                continue
            if ch in ".[" or ch.isspace():
                break
            chars.append(ch)
            self.pos += 1
        name = "".join(chars).strip()
        if not name:
            raise self.fail("empty field name")
        return name

    def bracket(self) -> _Step:
        end = self.closing_bracket()
        body = self.text[self.pos + 1 : end].strip()
        self.pos = end + 1
        if not body:
            raise self.fail("empty brackets")
        if body == "*":
            return _wildcard
        if body.startswith("?"):
            return self.filter(body[1:].strip())
        if body[0] in "'\"":
            return _keys_step(tuple(self.quoted_list(body)))
        if ":" in body:
            parts = body.split(":")
            if len(parts) > 3:
                raise self.fail(f"bad slice {body!r}")
            bounds = [self.integer(p) if p.strip() else None for p in parts]
            bounds += [None] * (3 - len(bounds))
            if bounds[2] == 0:
                raise self.fail("slice step must not be zero")
            return _slice_step(bounds[0], bounds[1], bounds[2])
        return _index_step(self.integer(body))

    def closing_bracket(self) -> int:
        depth = 0
        quote = ""
        for i in range(self.pos, len(self.text)):
            ch = self.text[i]
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth == 0:
                    return i
        raise self.fail("unterminated '['")

    def integer(self, text: str) -> int:
        try:
            return int(text.strip())
        except ValueError:
            raise self.fail(f"not an integer: {text!r}") from None

    def quoted_list(self, body: str) -> list[str]:
        if _KEY_LIST.match(body) is None:
            raise self.fail(f"bad key list {body!r}")
        return [a or b for a, b in _KEY.findall(body)]

    def filter(self, body: str) -> _Step:
        if not (body.startswith("(") and body.endswith(")")):
            raise self.fail("filter must look like ?(...)")
        match = _FILTER.match(body[1:-1])
        if match is None:
            raise self.fail(f"unsupported filter {body!r}")
        inner_text = match["path"].strip()
        inner = compile_path(inner_text) if inner_text else Path("@", ())
        op = match["op"]
        literal = self.literal(match["lit"]) if op else None
        return _filter_step(inner, op, literal)

    def literal(self, text: str) -> Any:
        text = text.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return text[1:-1]
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if _INTEGER.match(text):
            return int(text)
        if _NUMBER.match(text):
            return float(text)
        raise self.fail(f"unsupported literal {text!r}")
