"""CEL cost limits of CRD rules: the estimated cost at CRD write (apiextensions-apiserver
validation.go: StaticEstimatedCostLimit 10,000,000 per rule times the node's cardinality,
StaticEstimatedCRDCostLimit 100,000,000 for the schema) and the run-time per-call limit
(apiserver pkg/apis/cel/config.go: PerCallLimit 1,000,000).

The cases are those of the Kubernetes documentation, "Resource use by validation functions"
(docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions.md): a rule over an
unbounded list of unbounded strings is refused and passes once maxItems and maxLength are set;
``self.all(x, x == 5)`` on an unbounded integer list is allowed, the same rule on the inner list of
a nested list is not.
"""

from __future__ import annotations

from typing import Any

from kplane.api.cel import cost, validations

ADVICE = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
    "strings are declared)"
)


def _schema(foo: dict[str, Any], rules: list[dict[str, Any]], on_root: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {"foo": foo}}
    (schema if on_root else foo)["x-kubernetes-validations"] = rules
    return schema


def _errors(schema: dict[str, Any]) -> list[str]:
    return [str(e) for e in validations.compile_rules(schema, "openAPIV3Schema")[0]]


def test_unbounded_strings_refused() -> None:
    """An unbounded list of unbounded strings: ``contains`` on each is refused (> 100x)."""
    schema = _schema(
        {"type": "array", "items": {"type": "string"}}, [{"rule": "self.foo.all(x, x.contains('a string'))"}]
    )
    assert _errors(schema)[0] == (
        "openAPIV3Schema.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by "
        f"factor of more than 100x {ADVICE}"
    )


def test_bounded_strings_accepted() -> None:
    """The same rule with maxItems 25 and maxLength 10 is accepted."""
    schema = _schema(
        {"type": "array", "maxItems": 25, "items": {"type": "string", "maxLength": 10}},
        [{"rule": "self.foo.all(x, x.contains('a string'))"}],
    )
    assert _errors(schema) == []


def test_flat_list_accepted_nested_refused() -> None:
    """``self.all(x, x == 5)`` fits the budget on an unbounded integer list, but not on the inner
    lists of an unbounded list of lists (each inner list's cost times the outer cardinality)."""
    flat = _schema({"type": "array", "items": {"type": "integer"}}, [{"rule": "self.all(x, x == 5)"}], False)
    assert _errors(flat) == []
    inner: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}
    nested = _schema({"type": "array", "items": inner}, [], False)
    del nested["properties"]["foo"]["x-kubernetes-validations"]
    inner["x-kubernetes-validations"] = [{"rule": "self.all(x, x == 5)"}]
    assert _errors(nested)[0] == (
        "openAPIV3Schema.properties[foo].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule "
        f"cost exceeds budget by factor of more than 100x {ADVICE}"
    )


def test_factor_wording() -> None:
    """getCostErrorMessage: %f below 1.5x, %.1f up to 100x."""
    assert cost.exceeds_message("estimated rule cost", 12_000_000, 10_000_000).startswith(
        "estimated rule cost exceeds budget by factor of 1.200000x"
    )
    assert "factor of 2.5x" in cost.exceeds_message("estimated rule cost", 25_000_000, 10_000_000)


def test_schema_total_refused() -> None:
    """Rules each under the per-rule limit but over 100,000,000 together: each big contributor is
    blamed, then the schema."""
    rules = [{"rule": f"self.all(x, x.all(y, y == {i}))"} for i in range(20)]
    schema = _schema(
        {
            "type": "array",
            "maxItems": 1000,
            "items": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
        },
        rules,
        False,
    )
    errs = _errors(schema)
    assert errs[0] == (
        "openAPIV3Schema.properties[foo].x-kubernetes-validations[0].rule: Forbidden: contributed to "
        "estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    )
    assert errs[-1].startswith(
        "openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 "
        "schema exceeds budget by factor of"
    )


def test_runtime_per_call_limit() -> None:
    """A rule the estimate accepts (bounded lists) but whose cost on a large object passes the
    per-call limit stops validation with upstream's error; a small object passes."""
    schema = _schema(
        {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
        [{"rule": "self.all(x, self.all(y, x != y || x == y))", "message": "pairs"}],
        False,
    )
    errs, tree = validations.compile_rules(schema, "openAPIV3Schema")
    assert errs == [] and tree is not None
    assert tree.validate({"foo": list(range(50))}, None) == []
    found = [str(e) for e in tree.validate({"foo": list(range(900))}, None)]
    assert found == [
        "foo: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further "
        "validation rules will be run due to call cost exceeds limit for rule: pairs"
    ]
