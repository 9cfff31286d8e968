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
    # over 5 s each in a fast loop beside other work (load 11), 2026-11-25 23:25 UTC
    "test_real_model.py::test_bench_quick_reports_positive_measurements",  # 181 s
    "test_real_model.py::test_cached_and_uncached_greedy_generation_agree_over_many_steps",  # 124 s
    "test_real_model.py::test_llama_cached_and_uncached_agree_and_match_generate",  # 38 s
    "test_real_model.py::test_greedy_generation_matches_transformers_generate",  # 10 s
    "test_scale_cli.py::test_standard_input_and_a_real_process",  # 55 s
    "test_scale_cli.py::test_the_command_and_transformers_agree_on_a_hybrid",  # 7 s
    "test_totality.py::test_accepted_scenarios_run_in_every_mode",  # 39 s
    "test_totality.py::test_accepted_rules_agree_with_python_pair_by_pair",  # 33 s
    "test_serving_speculative.py::test_the_distribution_test_catches_a_rule_that_accepts_every_guess",  # 38 s
    "test_serving_speculative.py::test_sampling_speculation_keeps_the_targets_distribution",  # 20-29 s each
    "test_scale_hybrid.py::test_what_the_formula_would_miscount_is_refused",  # 17 s
    "test_scale_hybrid.py::test_qwen3_next_counts_its_fixed_state_beside_twelve_attention_layers",  # 12 s
    "test_scale_hybrid.py::test_prefill_peak_is_the_whole_prompt_in_every_layer",  # 11 s
    "test_paged.py::test_paged_cache_matches_for_any_block_size_and_length",  # 15 s
    "test_serving_bench.py::test_quick_serving_section_measures_every_part",  # 13 s
    "test_scenario.py::test_loader_never_raises_anything_but_scenario_error",  # 10 s
    "test_docs.py::test_readme_command_lines_run",  # 10 s
    "test_docs.py::test_readme_library_example_runs_and_exports_figures",  # 6 s
    "test_bench.py::test_quick_json_has_every_section_and_goal",  # 9 s
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
    """The whole app on the Decode page (the ``app`` fixture, switched there), with the fold of the
    cache's figures open (its st.metric rows), as a visitor reading them has it."""
    from apptest_helpers import on_page

    app.session_state["decode_numbers_open"] = True  # pages/decode.py NUMBERS_FOLD
    return on_page(app, "pages/decode.py")
