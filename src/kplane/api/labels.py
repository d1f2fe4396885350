"""Label selectors: the string grammar of ``?labelSelector=`` and the structured ``LabelSelector``.

Grammar (upstream ``k8s.io/apimachinery/pkg/labels``), requirements joined by ``,`` (AND), blanks
ignored between tokens::

    key=value  key==value  key!=value  key in (v1,v2)  key notin (v1,v2)  key  !key  key>1  key<1

Keys are qualified names (``[prefix/]name``: a DNS subdomain of at most 253 characters, then at
most 63 characters of ``[A-Za-z0-9._-]`` starting and ending alphanumeric); values are empty or at
most 63 such characters (``kplane.api.names`` checks both). ``!=`` and ``notin`` also match
objects that lack the key.

A parsed ``Selector`` is compiled to a tuple of small closures, because ``matches`` runs once per
object per list or watch event; it is immutable and hashable. Its ``str`` is canonical: requirements
sorted by key, values sorted, as upstream prints them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kplane.api import errors, names

Check = Callable[[Mapping[str, str]], bool]


class Operator(enum.Enum):
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_SET_OPERATORS = {"In": Operator.IN, "NotIn": Operator.NOT_IN}
_EXIST_OPERATORS = {"Exists": Operator.EXISTS, "DoesNotExist": Operator.DOES_NOT_EXIST}

# --- error texts (upstream field.Invalid and ErrorList.ToAggregate) ---------------------------------


def _invalid(path: str, shown: str, detail: str) -> str:
    """Upstream's ``field.Invalid`` text; ``shown`` is the value already rendered Go-style."""
    return f"{path}: Invalid value: {shown}: {detail}"


def _aggregate(errs: list[str]) -> str:
    """An ``ErrorList.ToAggregate()`` message: repeated messages are shown once."""
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --- requirements and selectors ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    """One condition on one label key. ``values`` is sorted and free of duplicates."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
        """A validated requirement; raises ``ValueError`` with upstream's message when invalid."""
        vals = list(values)
        errs: list[str] = []
        key_errs = names.qualified_name_errors(key)
        if key_errs:
            errs.append(_invalid("key", errors.go_quote(key), "; ".join(key_errs)))
        count_problem = None
        match operator:
            case Operator.IN | Operator.NOT_IN if not vals:
                count_problem = "for 'in', 'notin' operators, values set can't be empty"
            case Operator.EQUALS | Operator.DOUBLE_EQUALS | Operator.NOT_EQUALS if len(vals) != 1:
                count_problem = "exact-match compatibility requires one single value"
            case Operator.EXISTS | Operator.DOES_NOT_EXIST if vals:
                count_problem = "values set must be empty for exists and does not exist"
            case Operator.GREATER_THAN | Operator.LESS_THAN if len(vals) != 1:
                count_problem = "for 'Gt', 'Lt' operators, exactly one value is required"
        if count_problem:
            errs.append(_invalid("values", errors.go_strings(vals), count_problem))
        if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
            for i, v in enumerate(vals):
                if _parse_int(v) is None:
                    detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                    errs.append(_invalid(f"values[{i}]", errors.go_quote(v), detail))
        for i, v in enumerate(vals):  # every value is a label value, Gt/Lt ones included
            value_errs = names.label_value_errors(v)
            if value_errs:
                errs.append(_invalid(f"values[{i}][{key}]", errors.go_quote(v), "; ".join(value_errs)))
        if errs:
            raise ValueError(_aggregate(errs))
        return cls(key, operator, tuple(sorted(set(vals))))

    def __str__(self) -> str:
        match self.operator:
            case Operator.EXISTS:
                return self.key
            case Operator.DOES_NOT_EXIST:
                return "!" + self.key
            case Operator.IN | Operator.NOT_IN:
                return f"{self.key} {self.operator.value} ({','.join(self.values)})"
            case Operator.GREATER_THAN:
                return f"{self.key}>{self.values[0]}"
            case Operator.LESS_THAN:
                return f"{self.key}<{self.values[0]}"
            case _:
                return f"{self.key}{self.operator.value}{self.values[0]}"

    def compile(self) -> Check:
        """A function of a label map that is True when this requirement holds."""
        key, values = self.key, self.values
        match self.operator:
            case Operator.EQUALS | Operator.DOUBLE_EQUALS | Operator.IN if len(values) == 1:
                value = values[0]
                return lambda labels: labels.get(key) == value
            case Operator.IN:
                allowed = frozenset(values)
                return lambda labels: labels.get(key) in allowed
            case Operator.NOT_EQUALS | Operator.NOT_IN if len(values) == 1:
                value = values[0]
                return lambda labels: labels.get(key) != value
            case Operator.NOT_IN:
                denied = frozenset(values)
                return lambda labels: labels.get(key) not in denied
            case Operator.EXISTS:
                return lambda labels: key in labels
            case Operator.DOES_NOT_EXIST:
                return lambda labels: key not in labels
            case _:
                bound = int(values[0])
                greater = self.operator is Operator.GREATER_THAN

                def compare(labels: Mapping[str, str]) -> bool:
                    have = labels.get(key)
                    number = _parse_int(have) if have is not None else None
                    if number is None:
                        return False
                    return number > bound if greater else number < bound

                return compare

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return self.compile()(labels or {})


_NO_LABELS: Mapping[str, str] = {}


class Selector:
    """An AND of requirements, compiled for matching. Immutable; equal when the requirements are.

    ``Selector.everything()`` (no requirements) matches every object, ``Selector.nothing()``
    matches none (upstream's result for a nil ``LabelSelector``).
    """

    __slots__ = ("_checks", "_nothing", "requirements")

    def __init__(self, requirements: Iterable[Requirement] = (), *, _nothing: bool = False) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(sorted(requirements, key=lambda r: r.key))
        self._checks = tuple(r.compile() for r in self.requirements)
        self._nothing = _nothing

    @classmethod
    def everything(cls) -> Selector:
        return _EVERYTHING

    @classmethod
    def nothing(cls) -> Selector:
        return _NOTHING

    @property
    def empty(self) -> bool:
        """True when the selector selects everything (no requirements)."""
        return not self.requirements and not self._nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected (None means no labels)."""
        if self._nothing:
            return False
        m = labels if labels is not None else _NO_LABELS
        # A plain loop: this runs per object per list, and all() would allocate a generator each time.
        for check in self._checks:  # noqa: SIM110
            if not check(m):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "Selector(<nothing>)" if self._nothing else f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self.requirements == other.requirements and self._nothing == other._nothing

    def __hash__(self) -> int:
        return hash((self.requirements, self._nothing))


_EVERYTHING = Selector()
_NOTHING = Selector(_nothing=True)


# --- the string grammar --------------------------------------------------------------------------

_IDENT, _END = "identifier", "end of string"
_SYMBOLS = ("!=", "==", "!", "=", "(", ")", ",", ">", "<")
_SPECIAL = frozenset("=!(),<>")
_BLANK = frozenset(" \t\r\n")


def _tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, literal) pairs; kind is ``identifier``, ``end of string`` or the symbol itself."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _BLANK:
            i += 1
        elif ch in _SPECIAL:
            two = text[i : i + 2]
            sym = two if two in ("!=", "==") else ch
            tokens.append((sym, sym))
            i += len(sym)
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and text[j] not in _BLANK:
                j += 1
            tokens.append((_IDENT, text[i:j]))
            i = j
    tokens.append((_END, ""))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, str]:
        tok = self.tokens[self.pos]
        if tok[0] != _END:
            self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        out: list[Requirement] = []
        while True:
            kind, lit = self.peek()
            if kind == _END:
                return out
            if kind not in (_IDENT, "!"):
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                out.append(self.requirement())
            except ValueError as e:
                raise ValueError(f"unable to parse requirement: {e}") from None
            kind, lit = self.take()
            if kind == _END:
                return out
            if kind != ",":
                raise ValueError(f"found '{lit}', expected: ',' or 'end of string'")
            kind, lit = self.peek()
            if kind not in (_IDENT, "!"):
                raise ValueError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        kind, lit = self.take()
        negated = kind == "!"
        if negated:
            kind, lit = self.take()
        if kind != _IDENT:  # "in" and "notin" are keys here, as in upstream's Values context
            raise ValueError(f"found '{lit}', expected: identifier")
        key = lit
        key_errs = names.qualified_name_errors(key)
        if key_errs:
            # upstream validates the key against a nil field path before building the requirement
            raise ValueError(_invalid("<nil>", errors.go_quote(key), "; ".join(key_errs)))
        if negated:
            return Requirement.new(key, Operator.DOES_NOT_EXIST)
        if self.peek()[0] in (_END, ","):
            return Requirement.new(key, Operator.EXISTS)
        kind, lit = self.take()
        op = {
            "=": Operator.EQUALS,
            "==": Operator.DOUBLE_EQUALS,
            "!=": Operator.NOT_EQUALS,
            ">": Operator.GREATER_THAN,
            "<": Operator.LESS_THAN,
        }.get(kind)
        if kind == _IDENT and lit in ("in", "notin"):
            op = Operator.IN if lit == "in" else Operator.NOT_IN
        if op is None:
            raise ValueError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        if op in (Operator.IN, Operator.NOT_IN):
            return Requirement.new(key, op, self.value_set())
        return Requirement.new(key, op, [self.exact_value()])

    def exact_value(self) -> str:
        kind, lit = self.peek()
        if kind in (_END, ","):
            return ""
        self.take()
        if kind != _IDENT:
            raise ValueError(f"found '{lit}', expected: identifier")
        return lit

    def value_set(self) -> set[str]:
        """``( v1, v2, ... )``; empty members (``()``, ``(a,)``, ``(,a)``) are the value ``""``.
        The messages are upstream's, including its missing comma after ``found 'x'``."""
        kind, lit = self.take()
        if kind != "(":
            raise ValueError(f"found '{lit}' expected: '('")
        kind, lit = self.peek()
        if kind == ")":
            self.take()
            return {""}
        if kind not in (_IDENT, ","):
            raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            kind, lit = self.take()
            if kind == _IDENT:
                values.add(lit)
                after, after_lit = self.peek()
                if after == ")":
                    break
                if after != ",":
                    raise ValueError(f"found '{after_lit}', expected: ',' or ')'")
            elif kind == ",":
                if not values:
                    values.add("")
                after = self.peek()[0]
                if after == ")":
                    values.add("")
                    break
                if after == ",":
                    self.take()
                    values.add("")
            else:
                raise ValueError(f"found '{lit}', expected: ',', or identifier")
        self.take()  # the closing parenthesis
        return values


def parse(text: str) -> Selector:
    """Parse a label selector string; ``""`` selects everything.

    Raises ``ValueError`` with upstream's wording on bad syntax or invalid keys/values; the server
    answers it with 400 BadRequest.
    """
    if not text or text.isspace():
        return _EVERYTHING
    return Selector(_Parser(text).parse())


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """Convert a ``metav1.LabelSelector`` (``matchLabels``, ``matchExpressions``).

    None selects nothing and ``{}`` selects everything, as upstream's ``LabelSelectorAsSelector``.
    Raises ``ValueError`` for an unknown operator or invalid keys/values.
    """
    if selector is None:
        return _NOTHING
    requirements = [
        Requirement.new(k, Operator.EQUALS, [v]) for k, v in (selector.get("matchLabels") or {}).items()
    ]
    for expr in selector.get("matchExpressions") or ():
        name = expr.get("operator")
        values = expr.get("values") or ()
        if name in _SET_OPERATORS:
            op = _SET_OPERATORS[name]
        elif name in _EXIST_OPERATORS:
            op = _EXIST_OPERATORS[name]
        else:
            raise ValueError(f'"{name}" is not a valid label selector operator')
        requirements.append(Requirement.new(expr.get("key", ""), op, values))
    return Selector(requirements)


def format(selector: Mapping[str, Any] | None) -> str:
    """A ``metav1.LabelSelector`` as a selector string (e.g. a Scale's ``status.selector``).

    Empty and None selectors give ``""`` (printers show ``<none>`` for it).
    Raises ``ValueError`` like ``from_label_selector``.
    """
    return str(from_label_selector(selector))


def _parse_int(text: str) -> int | None:
    # Go's strconv.ParseInt(s, 10, 64): optional sign, ASCII digits only, 64-bit range.
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None
