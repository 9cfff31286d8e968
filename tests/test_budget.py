"""Tier 1: the work budget estimates before computing and keeps every rerun inside its limits."""

from __future__ import annotations

import pytest

from viz import Scenario, load_preset
from viz.core.engine.budget import (BUDGET, Budget, Shape, grant, grant_compare, grant_paged, pool_slots, prefill_work,
                                    run_work, slot_bytes, step_work)
from viz.core.engine.scenario import MAX_D_K, MAX_DECODE_STEPS, MAX_HEADS, MAX_TOKENS


def worst() -> Scenario:
    """The largest scenario the limits allow."""
    tokens = [f"w{i}" for i in range(MAX_TOKENS)]
    return Scenario.from_dict({
        "tokens": tokens, "values": [float(i % 9) for i in range(MAX_TOKENS)], "d_k": MAX_D_K,
        "heads": [{"name": f"h{i}", "rule": "k.pos % 2 == 0" if i % 2 else "q.pos - k.pos < 3"}
                  for i in range(MAX_HEADS)],
        "vocab": [{"token": "a", "value": 1, "weights": [0.1] * MAX_HEADS},
                  {"token": "b", "value": 2, "weights": [0.2] * MAX_HEADS}]})


def test_work_grows_as_the_passes_do():
    """A decode step costs more without a cache than with it, and more at a longer length."""
    shape = Shape(heads=8, d_k=64, pair_nodes=20, key_nodes=10)
    assert step_work("kv", 100, shape).ms < step_work("reencode", 100, shape).ms \
        < step_work("recompute", 100, shape).ms
    assert step_work("kv", 1000, shape).ms > step_work("kv", 100, shape).ms
    assert step_work("recompute", 200, shape).peak_bytes > 3 * step_work("recompute", 100, shape).peak_bytes


def test_bigger_rules_cost_more():
    """A rule that compares query and key costs per pair and per syntax node; a key-only one per key."""
    small, big = Shape(4, 8, pair_nodes=5), Shape(4, 8, pair_nodes=150)
    assert step_work("recompute", 500, big).ms > 5 * step_work("recompute", 500, small).ms
    seed = Shape.of(load_preset("seed"))
    assert seed.pair_nodes == 0 and seed.key_nodes > 0 and seed.heads == 4


def test_run_work_adds_the_prefill_once():
    """Predictions 0…k cost the prefill plus k steps; continuing a run does not pay the prefill again."""
    seed = load_preset("seed")
    whole, first = run_work(seed, "kv", 5), run_work(seed, "kv", 1)
    assert first.ms == pytest.approx(prefill_work(seed).ms)
    assert whole.ms == pytest.approx(first.ms + run_work(seed, "kv", 5, done=1).ms)


def test_the_seed_gets_everything_it_asks_for():
    """A classroom scenario is never cut: every mode reaches the step asked for."""
    grants = grant(load_preset("seed"), ("recompute", "reencode", "kv"), 40)
    assert all(g.granted == 40 and not g.cut and g.note == "" for g in grants.values())


def test_the_worst_scenario_is_cut_cheapest_first_within_the_budget():
    """At the limits the kv run goes furthest, recompute least, and the estimate stays in the budget."""
    scenario = worst()
    grants = grant(scenario, ("recompute", "reencode", "kv"), MAX_DECODE_STEPS + 1)
    kv, reencode, recompute = grants["kv"], grants["reencode"], grants["recompute"]
    assert kv.granted >= reencode.granted >= recompute.granted >= 1
    assert recompute.cut and "recompute" in recompute.note and f"{MAX_DECODE_STEPS}" in recompute.note
    extra = sum(g.work.ms for g in grants.values()) - 2 * prefill_work(scenario).ms  # two forced first steps
    assert extra <= BUDGET.ms
    assert max(g.work.peak_bytes for g in grants.values()) <= max(BUDGET.peak_bytes, prefill_work(scenario).peak_bytes)


def test_a_run_keeps_what_it_has_and_grows_by_the_budget():
    """A later rerun never takes steps away and adds as many as the budget allows."""
    scenario = worst()
    first = grant(scenario, ("kv",), 257)["kv"]
    second = grant(scenario, ("kv",), 257, done={"kv": first.granted})["kv"]
    assert first.granted < second.granted <= 257
    tiny = grant(scenario, ("kv",), 257, done={"kv": 10}, budget=Budget(ms=0.0))["kv"]
    assert tiny.granted == 10 and tiny.cut


def memory_prompts(scenario: Scenario) -> list[int]:
    """The Memory page's three prompt lengths for a scenario (A, B and C)."""
    from viz.core.serving.paged import variants
    return [len(r.tokens) for r in variants(scenario, 1)]


def test_the_memory_page_is_cut_to_the_budget_at_the_limits():
    """At the limits the paged view's pool fits its allocation and its work the budget, and the note says what was cut."""
    scenario = worst().cache_safe()
    prompts = memory_prompts(scenario)
    for block_size in (1, 32):
        cut = grant_paged(scenario, prompts, 16, block_size, MAX_DECODE_STEPS)
        assert cut.cut and cut.reserve < MAX_DECODE_STEPS and cut.granted <= cut.reserve
        assert pool_slots(prompts, block_size, cut.reserve) * slot_bytes(Shape.of(scenario)) <= BUDGET.pool_bytes
        assert cut.granted == 1 or cut.work.ms <= BUDGET.ms
        assert f"not {MAX_DECODE_STEPS}" in cut.note and f"{BUDGET.pool_bytes // 2**20} MB" in cut.note
        more = grant_paged(scenario, prompts, 16, block_size, MAX_DECODE_STEPS, Budget(ms=BUDGET.ms * 4))
        assert more.granted >= cut.granted and (more.granted > cut.granted or more.compare)


def test_the_seed_memory_page_is_never_cut():
    """The seed's paged view and its eviction view get every prediction, the whole reservation and the check."""
    seed = load_preset("seed").cache_safe()
    paged = grant_paged(seed, memory_prompts(seed), 16, 1, MAX_DECODE_STEPS)
    assert (paged.granted, paged.reserve, paged.compare, paged.note) == (16, MAX_DECODE_STEPS, True, "")
    compare = grant_compare(seed, 16)
    assert (compare.granted, compare.note) == (16, "")


def test_the_eviction_view_fits_the_budget_or_makes_one_prediction():
    """Three decodes of the worst scenario are cut to what fits; the note names the predictions made."""
    scenario = worst()
    compare = grant_compare(scenario, 16, Budget(ms=run_work(scenario, "kv", 4).ms * 3))
    assert compare.granted == 4 and compare.cut and "makes 4 of the 16 predictions" in compare.note
    assert grant_compare(scenario, 16, Budget(ms=0.0)).granted == 1
