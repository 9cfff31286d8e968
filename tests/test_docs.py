"""The documents stay true: the README's library example runs, the design document's examples compile."""

from __future__ import annotations

import re
from pathlib import Path

from viz.core.rules.language import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]


def test_readme_library_example_runs_and_exports_figures(tmp_path, monkeypatch, capsys):
    """The README's notebook example runs as written and writes a PNG and an SVG."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Use it as a library\n", 1)[1]
    code = re.search(r"```python\n(.+?)\n```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "nice" in printed and "12.5" in printed
    assert (tmp_path / "attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "cache.svg").read_bytes()[:400]


def test_design_document_lists_the_rule_examples():
    """docs/design.md names exactly the rule examples the tests compile (viz.core.rules.language.EXAMPLES)."""
    design = (ROOT / "docs" / "design.md").read_text()
    line = design.split("Examples: ", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`([^`]+)`", line) == list(EXAMPLES)
