"""The documents stay true: the README's library example and command lines run, its map of the code
names what exists, every link and repository path in the docs exists, and the design document's
rule examples are the ones the tests compile."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from viz.core.rules.language import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("viz/", "tests/", "docs/", "pages/", ".ci/", ".streamlit/")


def _section(heading: str, fence: str) -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"## {heading}\n", 1)[1]
    return re.search(rf"```{fence}\n(.+?)\n```", section, re.S).group(1)


def test_readme_library_example_runs_and_exports_figures(tmp_path, monkeypatch, capsys):
    """The README's notebook example runs as written and writes a PNG and an SVG."""
    code = _section("Use it as a library", "python")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "nice" in printed and "12.5" in printed
    assert (tmp_path / "attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "cache.svg").read_bytes()[:400]


def test_readme_command_lines_run(tmp_path):
    """Every line of the README's command-line block runs from the repository root and exits 0 (the
    benchmark aside: it has its own tests), in order, so `preset seed > seed.json` feeds the traces."""
    lines = [line.split("#", 1)[0].strip() for line in _section("Command line", "bash").splitlines()]
    lines = [line for line in lines if line and " bench" not in line]
    assert len(lines) >= 4
    (tmp_path / "viz").symlink_to(ROOT / "viz")  # paths in the README are the repository's
    for line in lines:
        assert line.startswith("python -m viz ")
        command = f"{sys.executable} {line[len('python '):]}"
        result = subprocess.run(["/bin/bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, (line, result.stderr[-2000:])
        assert result.stdout.strip() or ">" in line, line


def _map() -> list[str]:
    """The paths the README's map of the code names, built from its indentation."""
    paths, stack = [], []
    for line in _section("The code", "").splitlines():
        indent = (len(line) - len(line.lstrip(" "))) // 2
        names = []
        for word in line.split():
            if not re.fullmatch(r"[\w.-]+(/|\.\w+)", word):
                break
            names.append(word)
        if not names:
            continue
        stack = stack[:indent]
        paths += ["".join(stack) + name for name in names]
        if names[0].endswith("/"):
            stack.append(names[0])
    return paths


def test_readme_map_names_what_exists():
    """Every file and folder the README's map of the code names exists, every domain of the core among them."""
    named = _map()
    missing = [path for path in named if not (ROOT / path).exists()]
    assert not missing, missing
    domains = {p.parent.name for p in (ROOT / "viz" / "core").glob("*/__init__.py")}
    assert {f"viz/core/{d}/" for d in domains} <= set(named), sorted(domains)


def test_links_in_the_docs_exist():
    """Every relative Markdown link or image in the README and docs/ points at a file that exists."""
    broken = []
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (doc.parent / target.split("#")[0]).exists():
                broken.append(f"{doc.name}: {target}")
    assert not broken, broken


def test_repository_paths_in_the_docs_exist():
    """Every repository path the docs quote in backticks (`viz/…`, `tests/…`, `docs/…`) exists."""
    missing = []
    for doc in DOCS:
        for quoted in re.findall(r"`([^`\s]+)`", doc.read_text()):
            path = quoted.rstrip(".,:;")
            if path.startswith(TOP) and not re.search(r"[*<>{}…]", path) and not (ROOT / path).exists():
                missing.append(f"{doc.name}: {path}")
    assert not missing, missing


def test_design_document_lists_the_rule_examples():
    """docs/design.md names exactly the rule examples the tests compile (viz.core.rules.language.EXAMPLES)."""
    design = (ROOT / "docs" / "design.md").read_text()
    line = design.split("Examples: ", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`([^`]+)`", line) == list(EXAMPLES)
