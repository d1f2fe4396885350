"""Cost of CEL on the custom resource write path; prints one JSON line.

Measures, in process, what kplane's registry does: ``eval_one_rule_us`` is one typical rule
(``self.replicas <= self.maxReplicas``, rule scoped at ``spec``) on a typical custom object, through
the same ``RuleTree.validate`` walk the write path uses (target ≤ 50 µs, issue 9);
``eval_all_rules_us`` runs the 25 rules of a CRD using every Kubernetes library on one object;
``compile_crd_ms`` compiles that CRD's rules (what a CRD write costs, done once per write and once
per schema for the write path) and ``compile_rule_us`` is the same per rule.

    python benchmarks/cel_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from kplane.api.cel import compile_rules

ONE_RULE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.maxReplicas", "message": "too many"}
            ],
            "properties": {
                "replicas": {"type": "integer"},
                "maxReplicas": {"type": "integer"},
                "image": {"type": "string"},
                "ports": {"type": "array", "items": {"type": "integer"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

OBJECT: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {
        "name": "w1",
        "namespace": "default",
        "labels": {"app": "web"},
        "uid": "0d9c",
        "generation": 1,
    },
    "spec": {
        "replicas": 3,
        "maxReplicas": 10,
        "image": "nginx:1.27",
        "ports": [80, 443],
        "labels": {"tier": "frontend"},
        "name": "web1",
        "endpoint": "https://example.com:8443/x",
        "memory": "512Mi",
        "address": "10.1.2.3",
        "subnet": "10.1.0.0/16",
        "tags": ["a", "c"],
        "tier": "gold",
        "mode": "fast",
        "minReplicas": 1,
    },
}


def _all_libraries_schema() -> dict[str, Any]:
    s = {"type": "string"}

    def rules(*items: str) -> list[dict[str, str]]:
        return [{"rule": r} for r in items]

    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": rules(
                    "self.minReplicas <= self.replicas", "self.replicas <= self.maxReplicas"
                ),
                "properties": {
                    "replicas": {"type": "integer", "x-kubernetes-validations": rules("self >= 0")},
                    "minReplicas": {"type": "integer"},
                    "maxReplicas": {"type": "integer"},
                    "image": s,
                    "ports": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "x-kubernetes-validations": rules(
                            "self.isSorted()", "self.min() > 0", "self.max() < 65536", "self.sum() < 100000"
                        ),
                    },
                    "labels": {
                        "type": "object",
                        "additionalProperties": s,
                        "x-kubernetes-validations": rules("self.all(k, k.lowerAscii() == k)"),
                    },
                    "name": {
                        **s,
                        "x-kubernetes-validations": rules("self.find('[a-z]+') != ''", "self.size() < 64"),
                    },
                    "endpoint": {
                        **s,
                        "x-kubernetes-validations": rules("isURL(self)", "url(self).getScheme() == 'https'"),
                    },
                    "memory": {
                        **s,
                        "x-kubernetes-validations": rules(
                            "isQuantity(self)", "quantity(self).isLessThan(quantity('1Gi'))"
                        ),
                    },
                    "address": {
                        **s,
                        "x-kubernetes-validations": rules("isIP(self)", "ip(self).family() == 4"),
                    },
                    "subnet": {
                        **s,
                        "x-kubernetes-validations": rules(
                            "isCIDR(self)", "cidr('10.0.0.0/8').containsCIDR(self)"
                        ),
                    },
                    "tags": {
                        "type": "array",
                        "items": s,
                        "x-kubernetes-validations": rules("sets.contains(['a', 'b', 'c'], self)"),
                    },
                    "tier": {**s, "x-kubernetes-validations": rules("self in ['free', 'gold']")},
                    "mode": {
                        **s,
                        "x-kubernetes-validations": rules(
                            "'%s!'.format([self]).size() > 1", "self.charAt(0) != 'x'"
                        ),
                    },
                },
            }
        },
    }


def _per_call(fn: Any, rounds: int) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            fn()
        best = min(best, (time.perf_counter() - start) / rounds)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    _, one = compile_rules(ONE_RULE, "")
    assert one is not None and one.validate(OBJECT, None) == []
    big_schema = _all_libraries_schema()
    errs, big = compile_rules(big_schema, "")
    assert errs == [] and big is not None, errs
    assert big.validate(OBJECT, None) == [], big.validate(OBJECT, None)
    n_rules = (
        sum(
            len(p.get("x-kubernetes-validations", []))
            for p in big_schema["properties"]["spec"]["properties"].values()
        )
        + 2
    )
    compile_s = _per_call(lambda: compile_rules(big_schema, ""), max(args.rounds // 200, 5))
    result = {
        "eval_one_rule_us": round(_per_call(lambda: one.validate(OBJECT, None), args.rounds) * 1e6, 2),
        "eval_all_rules_us": round(_per_call(lambda: big.validate(OBJECT, None), args.rounds // 4) * 1e6, 1),
        "rules": n_rules,
        "compile_crd_ms": round(compile_s * 1e3, 2),
        "compile_rule_us": round(compile_s / n_rules * 1e6, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
