"""The counts in the README's "Hostile input" table, from the tests themselves.

    .venv/bin/python tests/hostile_tally.py            # core, AppTest and CLI tiers (a few minutes)
    .venv/bin/python tests/hostile_tally.py --browser  # also the Chromium tier

Runs the hostile-input tests in this process; every case they try is counted where the test
decides its outcome (``hostile_text.record``): refused with a message, accepted and run, or what
must never happen, a traceback or lost state. A test that fails counts one more traceback in the
table (its category is printed with it), so a broken build cannot print a clean table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TESTS = ["test_hostile.py", "test_totality.py", "test_scenario.py", "test_hostile_links.py",
         "test_hostile_render.py", "test_cli.py", "test_model_folder.py", "test_guard.py"]
BROWSER = ["browser/test_hostile_text.py"]


class Failures:
    """A pytest plugin that keeps the tests that failed."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed:
            self.failed.append(report.nodeid)


def table(tally: dict[str, dict[str, int]], failed: list[str]) -> str:
    rows = ["| category | cases tried | refused with a message | accepted and run | tracebacks (goal 0) "
            "| state lost (goal 0) |", "|---|--:|--:|--:|--:|--:|"]
    total = dict.fromkeys(("refused", "ran", "traceback", "state lost"), 0)
    for category, counts in tally.items():
        tried = sum(counts.values())
        rows.append(f"| {category} | {tried:,} | {counts['refused']:,} | {counts['ran']:,} | "
                    f"{counts['traceback']} | {counts['state lost']} |")
        for key in total:
            total[key] += counts[key]
    if failed:
        rows.append(f"| failed tests: {', '.join(failed)} | {len(failed)} | | | {len(failed)} | |")
        total["traceback"] += len(failed)
    rows.append(f"| **all** | **{sum(total.values()):,}** | **{total['refused']:,}** | **{total['ran']:,}** | "
                f"**{total['traceback']}** | **{total['state lost']}** |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    files = TESTS + (BROWSER if "--browser" in argv else [])
    failures = Failures()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(HERE.parent),
                        *(str(HERE / f) for f in files)], plugins=[failures])
    from hostile_text import TALLY  # the module the tests recorded into (tests/ is on sys.path now)

    print(table(TALLY, failures.failed))
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
