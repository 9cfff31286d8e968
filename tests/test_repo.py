"""The README's two commands stay true: CI runs exactly the test command; the app command starts app.py."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _command(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"## {heading}\n", 1)[1]
    return re.search(r"```bash\n(.+?)\n```", section, re.S).group(1).strip()


def test_ci_runs_exactly_the_readme_test_command():
    """.ci/run ends with the README's test command, character for character."""
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert lines[-1] == _command("Run the tests")


def test_readme_app_command_runs_app_py_with_a_cpu_torch_pin():
    """The app command installs the project (torch pinned to the CPU build here) and runs app.py."""
    command = _command("Run the app")
    assert "pip install" in command and "torch==2.13.0" in command and command.endswith("streamlit run app.py")
