"""The dashboard's pure ES modules (YAML, diff, Prometheus text), run by Node.js where it is
installed: YAML output read back by PyYAML gives the object again; diffs and quantiles are right."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kplane.server import dashboard

NODE = shutil.which("node")
STATIC = Path(dashboard.__file__).parent / "static"

pytestmark = pytest.mark.skipif(
    NODE is None, reason="node is not installed: the dashboard's modules are not run"
)


def _js(module: str, expression: str, *args: Any) -> Any:
    """``expression`` evaluated with ``module``'s exports in scope as ``m`` and ``args`` as ``a``."""
    assert NODE is not None
    source = (
        f"import * as m from {json.dumps((STATIC / module).as_uri())};\n"
        f"const a = {json.dumps(args)};\n"
        f"process.stdout.write(JSON.stringify({expression}));\n"
    )
    out = subprocess.run(
        [NODE, "--input-type=module", "-e", source], capture_output=True, text=True, timeout=20
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


TRICKY: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}, "annotations": {}},
    "data": {
        "bool-like": "true",
        "yes": "no",
        "number-like": "0123",
        "float-like": "1e3",
        "empty": "",
        "colon": "a: b",
        "hash": "# not a comment",
        "lead-space": " x",
        "multi": "line one\nline two\n",
        "multi-no-newline": "a\n  b",
        "unicode": "héllo ✓",
        "quote": 'say "hi"',
        "null-like": "null",
        "tilde": "~",
        "dash": "- item",
    },
    "spec": {
        "items": [{"name": "a", "ports": [{"containerPort": 80}]}, {"name": "b"}],
        "matrix": [[1, 2], [], {}],
        "flags": [True, False, None, 0, -1.5],
        "nested": {"empty-list": [], "empty-map": {}, "deep": {"k": [{"x": {"y": ["z"]}}]}},
    },
}


def test_yaml_reads_back_as_the_same_object() -> None:
    """Every value kind and every string YAML would misread survives a round trip through PyYAML."""
    text = _js("yaml.js", "m.toYAML(a[0])", TRICKY)
    assert yaml.safe_load(text) == TRICKY


def test_yaml_looks_like_kubectl() -> None:
    """Block style, two-space indent, list items under their key, numeric-looking strings quoted."""
    text = _js(
        "yaml.js",
        "m.toYAML(a[0])",
        {"metadata": {"name": "web", "resourceVersion": "12"}, "spec": {"c": [{"name": "a", "image": "x"}]}},
    )
    assert text == 'metadata:\n  name: web\n  resourceVersion: "12"\nspec:\n  c:\n  - name: a\n    image: x\n'


def test_diff_marks_removed_then_added_lines() -> None:
    """A changed line is a removal then an addition; unchanged lines are context."""
    diff = _js("diff.js", "m.diffLines(a[0], a[1])", "a\nb\nc\nd", "a\nx\nc\nd\ne")
    assert [d["op"] + d["text"] for d in diff] == [" a", "-b", "+x", " c", " d", "+e"]


def test_hunks_keep_context_around_changes() -> None:
    """Far from a change, lines collapse into one gap marker."""
    before = "\n".join(str(i) for i in range(20))
    after = before.replace("10", "ten")
    out = _js("diff.js", "m.hunks(m.diffLines(a[0], a[1]), 2)", before, after)
    assert [d["op"] + d["text"] for d in out] == ["@…", " 8", " 9", "-10", "+ten", " 11", " 12", "@…"]


def test_large_diffs_stay_bounded() -> None:
    """Past the table bound the diff degrades to all removed, all added, and still ends."""
    before = "\n".join(f"a{i}" for i in range(3000))
    after = "\n".join(f"b{i}" for i in range(3000))
    ops = _js("diff.js", "m.diffLines(a[0], a[1]).map(d => d.op).join('')", before, after)
    assert ops == "-" * 3000 + "+" * 3000


METRICS = """# HELP controller_runtime_reconcile_total Reconciles
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="deployment",result="success"} 10.0
controller_runtime_reconcile_total{controller="deployment",result="error"} 2.0
controller_runtime_reconcile_time_seconds_bucket{controller="deployment",le="0.005"} 5.0
controller_runtime_reconcile_time_seconds_bucket{controller="deployment",le="0.01"} 9.0
controller_runtime_reconcile_time_seconds_bucket{controller="deployment",le="+Inf"} 10.0
workqueue_depth{controller="deployment",name="deployment"} 3.0
apiserver_request_total{code="200"} 7.0
other{label="a \\"quoted\\" value"} 1
"""


def test_prometheus_text_is_parsed_by_prefix() -> None:
    """Samples of the asked families only, with their labels unescaped."""
    out = _js(
        "prom.js", "m.parse(a[0], ['controller_runtime_reconcile_total', 'workqueue', 'other'])", METRICS
    )
    assert out == [
        {
            "name": "controller_runtime_reconcile_total",
            "labels": {"controller": "deployment", "result": "success"},
            "value": 10,
        },
        {
            "name": "controller_runtime_reconcile_total",
            "labels": {"controller": "deployment", "result": "error"},
            "value": 2,
        },
        {"name": "workqueue_depth", "labels": {"controller": "deployment", "name": "deployment"}, "value": 3},
        {"name": "other", "labels": {"label": 'a "quoted" value'}, "value": 1},
    ]


def test_quantile_interpolates_inside_the_bucket() -> None:
    """histogram_quantile's rule: p50 of 10 observations, 5 under 5 ms and 4 more under 10 ms, is
    5 ms; p90 is at the 10 ms bound; over two scrapes only the increase counts."""
    after = {"0.005": 5, "0.01": 9, "+Inf": 10}
    assert _js("prom.js", "m.quantile(0.5, {}, a[0])", after) == pytest.approx(0.005)
    assert _js("prom.js", "m.quantile(0.9, {}, a[0])", after) == pytest.approx(0.01)
    before = {"0.005": 5, "0.01": 5, "+Inf": 5}
    assert _js("prom.js", "m.quantile(0.5, a[1], a[0])", after, before) == pytest.approx(
        0.005 + 0.005 * 2.5 / 4
    )
