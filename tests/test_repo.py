"""The README's two commands stay true and are all the set-up: CI runs exactly the test command, which
installs what a fresh machine lacks and runs every tier; the app command starts app.py; the tiers are
marked as tests/conftest.py says."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import SLOW, tier

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "tests" / "setup.sh"
# What tests/setup.sh checks for each Debian package, checked here the same way.
NEEDED = {"chromium": "/usr/bin/chromium", "haproxy": "haproxy", "redis-server": "/usr/bin/redis-server"}


def _command(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"## {heading}\n", 1)[1]
    return re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()


def _missing(path: str) -> list[str]:
    result = subprocess.run(["/bin/bash", str(SETUP), "--missing"], capture_output=True, text=True,
                            env={"PATH": path}, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_ci_runs_exactly_the_readme_test_command():
    """.ci/run ends with the README's test command, character for character."""
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert lines[-1] == _command("Run the tests")


def test_readme_test_command_sets_up_then_runs_every_tier():
    """The test command runs tests/setup.sh, then pytest on two workers with no tier left out; both
    scripts are executable."""
    command = _command("Run the tests")
    setup, _, run = command.partition(" && ")
    assert setup == "tests/setup.sh" and run == ".venv/bin/python -m pytest -n 2", command
    assert os.access(SETUP, os.X_OK) and os.access(ROOT / ".ci" / "run", os.X_OK)


def test_readme_app_command_runs_app_py_with_a_cpu_torch_pin():
    """The app command installs the project (torch pinned to the CPU build here) and runs app.py."""
    command = _command("Run the app")
    assert "pip install" in command and "torch==2.13.0" in command and command.endswith("streamlit run app.py")


def test_setup_installs_the_torch_the_app_command_pins():
    """tests/setup.sh installs the test extra with the same torch pin as the README's app command."""
    pins = set(re.findall(r"torch==[\d.]+", SETUP.read_text()))
    assert pins == set(re.findall(r"torch==[\d.]+", _command("Run the app"))) and len(pins) == 1
    assert '-e ".[test]"' in SETUP.read_text()


def test_setup_names_exactly_the_packages_missing_here():
    """`tests/setup.sh --missing` lists a needed Debian package exactly when it is absent."""
    import shutil

    path = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    absent = {name for name, where in NEEDED.items()
              if not (Path(where).exists() if where.startswith("/") else shutil.which(where, path=path))}
    python = shutil.which("python3", path=path)
    if python is None or subprocess.run([python, "-c", "import ensurepip, venv"], capture_output=True).returncode:
        absent.add("python3-venv")
    assert set(_missing(path)) == absent


def test_setup_reports_a_tool_missing_from_the_path(tmp_path):
    """With HAProxy off the PATH, `tests/setup.sh --missing` names it (so a fresh machine would install it)."""
    (tmp_path / "python3").symlink_to(Path(sys.executable).resolve())
    assert "haproxy" in _missing(str(tmp_path))


def test_tiers_follow_where_a_test_lives():
    """tests/browser/ is the browser tier, test_page_* and AppTest users the page tier, the rest core."""
    here = ROOT / "tests"
    never = lambda path: False  # noqa: E731 - a file that does not use AppTest
    assert tier(here / "browser" / "test_x.py", (), never) == "browser"
    assert tier(here / "test_page_x.py", (), never) == "page"
    assert tier(here / "test_x.py", ("app",), never) == "page"
    assert tier(here / "test_x.py", (), lambda path: True) == "page"
    assert tier(here / "test_x.py", ("tmp_path",), never) == "core"


def test_tier_markers_are_registered():
    """pyproject.toml registers core, page, browser and slow, so `-m` selects on known names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = {marker.split(":")[0] for marker in config["tool"]["pytest"]["ini_options"]["markers"]}
    assert {"core", "page", "browser", "slow"} <= names


def test_slow_names_tests_that_exist():
    """Every entry of conftest's SLOW names a test file, and a test defined in it, that exist."""
    for entry in SLOW:
        name, _, test = entry.partition("::")
        path = ROOT / "tests" / name
        assert path.exists(), entry
        if test:
            defined = {node.name for node in ast.walk(ast.parse(path.read_text()))
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
            assert test in defined, entry


def test_readme_marker_expressions_use_registered_tiers():
    """Every `-m` expression the README shows (the fast loop among them) names only registered markers."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    registered = {marker.split(":")[0] for marker in config["tool"]["pytest"]["ini_options"]["markers"]}
    expressions = re.findall(r'pytest -m (?:"([^"]+)"|(\w+))', (ROOT / "README.md").read_text())
    words = {word for quoted, bare in expressions for word in (quoted or bare).split()} - {"and", "or", "not"}
    assert expressions and "not browser and not slow" in {quoted for quoted, _ in expressions}
    assert words <= registered, words - registered
