"""The README's code is real: its informer example is taken from a program the tests run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_informer_example_is_the_tested_program() -> None:
    """Every line of the README's informer + work queue snippet appears in examples/informer_workqueue.py
    (which tests/unit/informers/test_example.py runs against a real server)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Informer plus work queue", 1)[1]
    snippet = re.search(r"```python\n(.*?)```", section, re.S)
    assert snippet is not None
    lines = [
        ln.strip() for ln in snippet.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]
    assert 8 <= len(lines) <= 14
    program = {ln.strip() for ln in (ROOT / "examples" / "informer_workqueue.py").read_text().splitlines()}
    missing = [ln for ln in lines if ln not in program]
    assert not missing, f"README lines not in the tested example: {missing}"
