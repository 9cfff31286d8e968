"""The floor plan holds: import-linter's contracts (pyproject.toml) and the page scripts' imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]


def test_import_contracts_are_kept():
    """Layers core → figures → ui, no Streamlit/Plotly/pandas in the core, no cycles: lint-imports passes."""
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_app_and_pages_never_import_the_developer_tools():
    """app.py and pages/*.py use the core, figures and the Streamlit layer, never viz.tools."""
    offenders = {path.name: sorted(m for m in _imports(path) if m == "viz.tools" or m.startswith("viz.tools."))
                 for path in SCRIPTS}
    assert SCRIPTS and not any(offenders.values()), offenders


def test_pages_do_no_tensor_math():
    """Pages render only: they import neither torch nor numpy (numbers come from the core)."""
    offenders = {path.name: sorted(m for m in _imports(path) if m.split(".")[0] in ("torch", "numpy"))
                 for path in SCRIPTS if path.parent.name == "pages"}
    assert not any(offenders.values()), offenders
