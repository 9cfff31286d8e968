"""Tier 2 (AppTest, slow): every Memory and Serving view at the limits stays inside the work budget.

The worst link the limits allow is opened on Memory with its heaviest settings (reservation 256, 16
predictions, block sizes 1 and 32, sharing on and off, every eviction and quantisation method) and on
every Serving section. What the page computed is recorded on the way (the engine's own functions,
wrapped) and judged by the budget's estimate, not by a clock: within the budget, or cut to the one
prediction the limits bound and saying so.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import viz.core.serving.compress as compress
import viz.core.serving.paged as paged
from viz.core.engine.budget import (BUDGET, Shape, paged_work, pool_slots, run_work, slot_bytes)
from viz.core.engine.scenario import MAX_DECODE_STEPS
from viz.core.engine.share import View, encode_view
from viz.tools.worst_case import APP, worst_scenarios

pytestmark = pytest.mark.slow
WORST = worst_scenarios()["matrix"]
CUT = "engine work per click"  # the budget's note, on every view it cut


def worst_on(page: str, settings: dict) -> AppTest:
    """A fresh visitor opening the worst link on ``page`` with these widget settings."""
    at = AppTest.from_file(str(APP), default_timeout=300)
    for key, value in encode_view(View(WORST)).items():
        at.query_params[key] = value
    for key, value in settings.items():
        at.session_state[key] = value
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def notes(at) -> list[str]:
    return [w.value for w in at.warning if CUT in w.value]


@pytest.fixture
def calls(monkeypatch):
    """Every decode_together and compare_with_full the page makes, with its arguments."""
    made: list[tuple[str, tuple, dict]] = []
    for module, name in ((paged, "decode_together"), (compress, "compare_with_full")):
        real = getattr(module, name)

        def spy(*args, real=real, name=name, **kwargs):
            made.append((name, args, kwargs))
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, spy)
    return made


@pytest.mark.parametrize("block_size, share", [(1, True), (32, False)])
def test_memorys_paged_view_at_the_limits_fits_the_budget(calls, block_size, share):
    """The pool fits what a click may allocate; both runs fit the budget, or one run and one prediction is all."""
    at = worst_on("pages/memory.py", {"memory_block_size": block_size, "memory_steps": 16,
                                      "memory_reserve": MAX_DECODE_STEPS, "memory_share": share})
    runs = [c for c in calls if c[0] == "decode_together"]
    assert runs
    scenario, requests, size = runs[0][1]
    reserve = runs[0][2]["max_new_tokens"]
    prompts, steps = [len(r.tokens) for r in requests], max(r.max_new_tokens for r in requests)
    shape = Shape.of(scenario)
    assert size == block_size and pool_slots(prompts, size, reserve) * slot_bytes(shape) <= BUDGET.pool_bytes
    spent = len(runs) * paged_work(shape, prompts, steps, size, reserve).ms
    assert spent <= BUDGET.ms or (len(runs), steps) == (1, 1)
    assert notes(at)  # at the limits something was cut, and the page says what


@pytest.mark.parametrize("settings", [
    {"memory_method": "Sliding window"}, {"memory_method": "Sinks + window"}, {"memory_method": "Drop by hand"},
    {"memory_method": "Quantise", "memory_scales": "per-token"},
    {"memory_method": "Quantise", "memory_scales": "KIVI", "memory_group": 1, "memory_residual": 16}],
    ids=lambda s: "-".join(str(v) for v in s.values()))
def test_memorys_eviction_views_at_the_limits_fit_the_budget(calls, settings):
    """Three decodes of the worst scenario fit the budget, or only the first prediction is made and the page says so."""
    at = worst_on("pages/memory.py", {"memory_tab": "Eviction and quantisation", "memory_evict_steps": 16, **settings})
    (name, args, _), = [c for c in calls if c[0] == "compare_with_full"]
    scenario, steps = args[0], args[1]
    assert 3 * run_work(scenario, "kv", steps).ms <= BUDGET.ms or (steps == 1 and notes(at))


@pytest.mark.parametrize("section", ["Continuous batching", "Chunked prefill", "Prefix caching",
                                     "Speculative decoding", "FlashAttention"])
def test_every_serving_section_at_the_limits_answers_within_the_budget(section):
    """Each section on the worst link draws its run or refuses it in words (its meter stops at the budget)."""
    at = worst_on("pages/serving.py", {"serving_section": section})
    assert not at.exception
    for error in at.error:
        assert "engine work" in error.value or "refused" in error.value or "cannot" in error.value, error.value
