"""Shared test set-up, and the tier every test is marked with.

Tiers (markers registered in pyproject.toml) follow from where a test lives, so nobody marks them by
hand: ``browser`` for tests/browser/, ``page`` for tests/test_page_*.py and every test file that drives
the app through AppTest, ``core`` for the rest. ``slow`` is given by hand: ``@pytest.mark.slow`` on the
test, or its name in ``SLOW`` below. The fast loop leaves out the browser and the slow tests::

    .venv/bin/python -m pytest -m "not browser and not slow" -n 2
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def app():
    """The whole app (app.py's frame) on the Prefill page, the first page with the scenario editors,
    with a fresh session (the default page, Home, shows no editors) and every editor panel opened,
    as a person editing would have them."""
    from streamlit.testing.v1 import AppTest

    from apptest_helpers import open_panels

    at = AppTest.from_file("../app.py", default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    open_panels(at)
    at.switch_page("pages/prefill.py").run()
    assert not at.exception, at.exception
    return at


HERE = Path(__file__).resolve().parent
TIERS = ("core", "page", "browser")
APPTEST_WORDS = ("AppTest", "apptest_helpers")  # a test file that drives the app without a browser

# The slowest tests outside the browser tier, by file or by file::test (seconds from `pytest --durations`
# on 2 shared cores, 2026-11-25). They run in the whole suite, not in the fast loop.
SLOW = {
    "test_deploy.py",  # installs the project into a fresh virtual environment, then serves it
    "test_cluster.py::test_visitors_stay_on_their_process_across_a_reconnect",  # two app processes behind HAProxy
    "test_cluster.py::test_a_class_opening_the_teachers_link_gets_decode",  # the same cluster
    "test_hostile_links.py::test_generated_hostile_links_open_on_every_page",  # 317 s: every link, every page
    "test_real_model.py::test_training_is_deterministic_and_loadable",  # 37 s: trains GPT-2 twice
    "test_real_model.py::test_llama_training_is_deterministic_and_shares_the_tokenizer",  # 16 s
    "test_real_model.py::test_repeated_timing_changes_nothing_but_the_clock",  # 17 s
    "test_real_model.py::test_cached_and_uncached_sampling_agree",  # 17 s
}


def tier(path: Path, fixtures, reads_apptest) -> str:
    """The tier of a test in ``path`` that asks for ``fixtures``; ``reads_apptest(path)`` says whether
    its file drives the app through AppTest."""
    if "browser" in path.relative_to(HERE).parts[:-1]:
        return "browser"
    if path.name.startswith("test_page_") or "app" in fixtures or reads_apptest(path):
        return "page"
    return "core"


def is_slow(path: Path, name: str) -> bool:
    """Whether ``SLOW`` names the test ``name`` (parameters left off) in ``path``, or its whole file."""
    return path.name in SLOW or f"{path.name}::{name.split('[')[0]}" in SLOW


def pytest_collection_modifyitems(config, items):
    """Mark every collected test with its tier, unless it names one itself, and ``SLOW``'s tests as slow."""
    read: dict[Path, bool] = {}

    def reads_apptest(path: Path) -> bool:
        if path not in read:
            read[path] = any(word in path.read_text() for word in APPTEST_WORDS)
        return read[path]

    for item in items:
        path = Path(item.path)
        if HERE not in path.parents:
            continue
        if not any(item.get_closest_marker(name) for name in TIERS):
            item.add_marker(getattr(pytest.mark, tier(path, getattr(item, "fixturenames", ()), reads_apptest)))
        if is_slow(path, item.name):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def decode(app):
    """The whole app on the Decode page (the ``app`` fixture, switched there)."""
    from apptest_helpers import on_page

    return on_page(app, "pages/decode.py")
