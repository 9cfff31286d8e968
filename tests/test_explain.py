"""Tier 1: the numbers the pages put into words come from the core as typed results."""

from __future__ import annotations

import pytest

from viz import generate, load_preset
from viz.core.engine.explain import check_cache, no_match_rows


def test_the_seed_cache_check_finds_the_stale_last_key():
    """At step 1 the 'last' head differs by 1 (6 vs 7) and its stale cached key is 'so' (position 4)."""
    seed = load_preset("seed")
    kv, full = generate(seed, 2, "kv"), generate(seed, 2, "recompute")
    check = check_cache(kv, full, 1)
    last = next(h for h in check.heads if h.head == "last")
    assert (last.kv_context, last.full_context) == (pytest.approx(6.0), pytest.approx(7.0))
    assert last.gap == pytest.approx(1.0)
    assert last.stale == [3] and check.stale == {(1, 3)}
    assert last.kv_matched == ["so", "nice"] and last.full_matched == ["nice"]
    assert [h.head for h in check.differing] == ["last"] and check.max_gap == last.gap
    assert "went stale" in last.text and all(h.text == "" for h in check.heads if h.head != "last")
    assert check.same_token == (kv.steps[1].token == full.steps[1].token)


def test_the_cache_safe_scenario_never_differs():
    """With every head cacheable, the cache equals recomputation exactly at every step."""
    safe = load_preset("cache-safe")
    kv, full = generate(safe, 12, "kv"), generate(safe, 12, "recompute")
    for step in range(12):
        check = check_cache(kv, full, step)
        assert check.max_gap == 0.0 and not check.stale and check.same_token


def test_no_match_rows_carry_the_even_spread():
    """The 'even' head matches nothing at 'Today': its one visible key takes all the weight → 10."""
    rows = no_match_rows(generate(load_preset("seed"), 1))
    first = rows[0]
    assert (first.head, first.query, first.position, first.visible) == ("even", "Today", 0, 1)
    assert first.weight_each == 1.0 and first.context == pytest.approx(10.0)
    assert all(row.no_match for row in rows)
