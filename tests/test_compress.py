"""Tier 1: eviction and quantisation change the toy's results only as specified."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from viz import generate, load_preset, preset_names
from viz.core.engine.cache import TokenInfo
from viz.core.serving.compress import (QMAX, CacheSpec, EvictingCache, EvictionPolicy, QuantizedCache, _pack_int4,
                          _unpack_int4, compare_with_full, dequantize, quantize)

STEPS = 6


def assert_same_as_full(comparison):
    """Every prediction of the compressed run equals the full one exactly."""
    for step in comparison.steps:
        assert torch.equal(step.context_compressed, step.context_full)
        assert torch.equal(step.logits_compressed, step.logits_full)
        assert torch.equal(step.weights_compressed, step.weights_full.to(step.weights_compressed.dtype))
        assert not step.token_changed
    assert comparison.free_tokens == comparison.tokens


@pytest.mark.parametrize("name", preset_names())
def test_a_window_longer_than_the_sequence_changes_nothing(name):
    """With a window at least as long as the whole run, nothing is evicted and nothing changes."""
    scenario = load_preset(name)
    longest = len(scenario.tokens) + STEPS
    comparison = compare_with_full(scenario, STEPS, CacheSpec(EvictionPolicy(window=longest)), device="cpu")
    assert comparison.evicted == []
    assert_same_as_full(comparison)
    assert comparison.bytes_saved == 0


def test_the_full_spec_and_an_empty_policy_change_nothing():
    """The plain cache, and a policy with no window and nothing dropped, equal the full cache."""
    scenario = load_preset("seed")
    assert_same_as_full(compare_with_full(scenario, STEPS, CacheSpec(), device="cpu"))
    assert_same_as_full(compare_with_full(scenario, STEPS, CacheSpec(EvictionPolicy()), device="cpu"))


@pytest.mark.parametrize("name", preset_names())
@pytest.mark.parametrize("policy", [EvictionPolicy(window=2), EvictionPolicy(window=3, sinks=1),
                                    EvictionPolicy(drop=frozenset({1, 3})), EvictionPolicy(window=1)])
def test_eviction_renormalises_the_full_softmax_over_the_kept_keys(name, policy):
    """After eviction a step's weights are the full run's softmax restricted to the kept keys and
    renormalised, and its context is their weighted sum of the kept values."""
    scenario = load_preset(name)
    comparison = compare_with_full(scenario, STEPS, CacheSpec(policy), device="cpu")
    full = generate(scenario, STEPS, "kv", device="cpu")
    values = torch.tensor(list(scenario.values) + [full.steps[k].value for k in range(STEPS - 1)],
                          dtype=torch.float64)
    for step, full_step in zip(comparison.steps, full.steps):
        scores = full_step.attention.masked_scores[:, -1].double()  # (heads, len)
        expected = torch.softmax(scores.masked_fill(~step.kept, -torch.inf), dim=-1)
        assert torch.allclose(step.weights_compressed.double(), expected, atol=1e-6)
        context = (expected * values[: len(step.positions)]).sum(-1)
        assert torch.allclose(step.context_compressed.double(), context, atol=1e-4)


def test_the_first_prediction_comes_from_prefill_and_is_never_affected():
    """Prefill reads the whole prompt, so prediction 0 is the full one whatever the policy."""
    scenario = load_preset("sliding-window")
    step = compare_with_full(scenario, 3, CacheSpec(EvictionPolicy(window=1)), device="cpu").steps[0]
    assert bool(step.kept.all()) and torch.equal(step.context_compressed, step.context_full)


@pytest.mark.parametrize("window, sinks", [(1, 0), (2, 0), (2, 1), (3, 2), (4, 4)])
def test_sliding_window_and_sinks_keep_exactly_the_specified_positions(window, sinks):
    """At decode step k the cache holds the first `sinks` positions and the last `window` ones."""
    scenario = load_preset("sliding-window")
    comparison = compare_with_full(scenario, STEPS, CacheSpec(EvictionPolicy(window, sinks)), device="cpu")
    for step in comparison.steps[1:]:
        n = len(step.positions)
        expected = {p for p in range(1, n + 1) if p > n - window or p <= sinks}
        assert set(step.positions[step.kept].tolist()) == expected
        assert step.nbytes_compressed == len(expected) * (2 * 16 + 1) * 4


def test_manual_eviction_drops_the_chosen_positions_only():
    """Dropping positions 2 and 4 by hand removes exactly those keys, from the first decode step on."""
    scenario = load_preset("seed")
    comparison = compare_with_full(scenario, STEPS, CacheSpec(EvictionPolicy(drop=frozenset({2, 4}))), device="cpu")
    assert sorted(comparison.evicted) == [2, 4]
    for step in comparison.steps[1:]:
        assert set(step.positions[~step.kept].tolist()) == {2, 4}


def test_the_newest_key_is_never_evicted():
    """A query always sees its own key, even if its position is on the drop list."""
    cache = EvictingCache(1, 2, EvictionPolicy(window=1, drop=frozenset({5})))
    pos = torch.arange(1, 6)
    cache.append(torch.ones(1, 5, 2), pos.float(), TokenInfo(pos, pos, pos.double(), torch.full((5,), 5)))
    assert cache.info().pos.tolist() == [5] and cache.values().tolist() == [5.0]
    assert cache.evicted == [1, 2, 3, 4]


def test_eviction_can_change_the_chosen_word():
    """With the seed, keeping the last 2 tokens plus 1 sink changes the second word (warm, not nice)."""
    comparison = compare_with_full(load_preset("seed"), 3, CacheSpec(EvictionPolicy(window=2, sinks=1)), device="cpu")
    assert comparison.first_change == 1
    assert comparison.steps[1].token_full == "nice" and comparison.steps[1].token_compressed == "warm"
    assert comparison.free_tokens[5] == "warm"


# -- quantisation ----------------------------------------------------------------------------
@pytest.mark.parametrize("bits", ["int8", "int4"])
@pytest.mark.parametrize("name", preset_names())
def test_per_token_scales_store_the_toy_exactly_enough_to_change_nothing(bits, name):
    """The toy's keys are ±1 or 0 and each value has its own scale, so per-token quantisation keeps
    every key exactly and every value within its bound; the chosen words stay the same."""
    scenario = load_preset(name)
    comparison = compare_with_full(scenario, STEPS, CacheSpec(bits=bits), device="cpu")
    full = generate(scenario, STEPS, "kv", device="cpu")
    cache = QuantizedCache(len(scenario.heads), scenario.d_k, bits)
    cache.append(full.cache.keys(), full.cache.values(), full.cache.info())
    assert torch.equal(cache.keys(), full.cache.keys())
    assert bool(((cache.values() - full.cache.values()).abs() <= cache.value_error_bound() + 1e-5).all())
    assert comparison.first_change is None
    assert comparison.max_context_error < 1e-4


def _one_by_one(cache, full):
    """Feed ``full``'s tokens to ``cache`` one append each, as decode writes them; return the cache."""
    info = full.info()
    for i in range(len(full)):
        cache.append(full.keys()[:, i:i + 1], full.values()[i:i + 1],
                     TokenInfo(*(getattr(info, f)[i:i + 1] for f in ("pos", "token", "value", "n"))))
    return cache


def test_per_token_bytes_count_codes_and_scales():
    """Per token, int8 per-token holds heads·d_k key bytes + a float scale per head, and 1 + 4 for the value;
    int4 packs two codes per byte."""
    full = generate(load_preset("seed"), 1, "kv", device="cpu").cache  # 4 heads, d_k 64
    for bits, key_bytes in (("int8", 64), ("int4", 32)):
        cache = _one_by_one(QuantizedCache(4, 64, bits), full)
        assert cache.nbytes == len(full) * (4 * (key_bytes + 4) + 1 + 4)
        assert cache.nbytes < full.nbytes


@pytest.mark.parametrize("bits, code_bytes", [("int8", 64), ("int4", 32)])
@pytest.mark.parametrize("group, residual", [(2, 0), (4, 4), (8, 3)])
def test_kivi_bytes_count_groups_scales_and_the_window(bits, code_bytes, group, residual):
    """KIVI after 13 tokens fed one by one: keys of whole groups older than the window are quantised with one
    float scale per (head, channel) per group; the rest, and the newest values, stay float32; older values are
    quantised per token (one code and one scale each)."""
    full = generate(load_preset("seed"), 9, "kv", device="cpu").cache  # 4 heads, d_k 64, 13 tokens
    cache = _one_by_one(QuantizedCache(4, 64, bits, "KIVI", group=group, residual=residual), full)
    n = len(full)
    quantised_keys = (n - residual) // group * group
    window_values = min(n, residual)
    assert cache.full_precision_tokens == (n - quantised_keys, window_values)
    key_bytes = (quantised_keys * 4 * code_bytes + quantised_keys // group * 4 * 64 * 4
                 + (n - quantised_keys) * 4 * 64 * 4)
    value_bytes = (n - window_values) * (1 + 4) + window_values * 4
    assert cache.nbytes == key_bytes + value_bytes
    assert torch.equal(cache.keys(), full.keys())  # ±1 keys: every channel's absmax is 1, so exact
    assert torch.equal(cache.values(), full.values().float())


def test_kivi_int8_cache_is_smaller_than_fp32_as_it_grows():
    """With one scale per channel per group (not one per channel for every appended token) the int8 cache stays
    below the fp32 one at every length past the first group; at 36 tokens (32 quantised either way) a larger G
    saves more."""
    full = generate(load_preset("seed"), 40, "kv", device="cpu").cache
    sizes = {}
    for group in (4, 16):
        cache = QuantizedCache(4, 64, "int8", "KIVI", group=group, residual=4)
        info = full.info()
        for i in range(36):
            cache.append(full.keys()[:, i:i + 1], full.values()[i:i + 1],
                         TokenInfo(*(getattr(info, f)[i:i + 1] for f in ("pos", "token", "value", "n"))))
            if i + 1 >= 4 + group:
                assert cache.nbytes < (i + 1) * (4 * 64 + 1) * 4, (group, i)
        sizes[group] = cache.nbytes
    assert sizes[16] < sizes[4] < 36 * (4 * 64 + 1) * 4


def test_kivi_keeps_the_newest_tokens_exact_and_the_rest_within_their_bounds():
    """Arbitrary keys and values: the newest R tokens come back exactly, older values within absmax / (2·q_max)
    of their own (per-token) scale, older keys within their channel-group's bound; int4 does lose precision."""
    generator = torch.Generator().manual_seed(0)
    keys = torch.randn(2, 11, 8, generator=generator)
    values = torch.randn(11, generator=generator) * 10
    pos = torch.arange(1, 12)
    cache = QuantizedCache(2, 8, "int4", "KIVI", group=4, residual=3)
    cache.append(keys, values, TokenInfo(pos, pos, values.double(), torch.full((11,), 11)))
    assert cache.full_precision_tokens == (3, 3)
    assert torch.equal(cache.keys()[:, -3:], keys[:, -3:]) and torch.equal(cache.values()[-3:], values[-3:])
    assert bool(((cache.values() - values).abs() <= cache.value_error_bound() + 1e-6).all())
    for start in (0, 4):  # the two quantised key groups
        group = keys[:, start:start + 4]
        bound = group.abs().amax(dim=1, keepdim=True) / (2 * QMAX["int4"])  # (heads, 1, d_k)
        assert bool(((cache.keys()[:, start:start + 4] - group).abs() <= bound + 1e-6).all())
    assert not torch.equal(cache.keys()[:, :8], keys[:, :8])


def test_kivi_on_the_toy_changes_bytes_not_answers():
    """The seed with int4 KIVI: every word, context and logit equals the full cache's."""
    comparison = compare_with_full(load_preset("seed"), STEPS, CacheSpec(bits="int4", scales="KIVI", group=2,
                                                                          residual=1), device="cpu")
    assert comparison.first_change is None and comparison.max_context_error == 0


def test_pack_int4_round_trips_every_code():
    """Every code in -7…7 survives packing two per byte, for odd and even widths."""
    codes = torch.arange(-7, 8, dtype=torch.int8).repeat(3, 1)  # (3, 15)
    assert _pack_int4(codes).shape == (3, 8) and _pack_int4(codes).dtype == torch.uint8
    assert torch.equal(_unpack_int4(_pack_int4(codes), 15), codes)
    assert torch.equal(_unpack_int4(_pack_int4(codes[:, :14]), 14), codes[:, :14])


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-1e4, 1e4, allow_nan=False, width=32), min_size=1, max_size=20),
       bits=st.sampled_from(["int8", "int4"]), dim=st.sampled_from([0, 1]))
def test_dequantised_values_stay_within_half_a_step(values, bits, dim):
    """For any numbers, |x - dequantize(quantize(x))| <= absmax / (2·q_max) of x's group."""
    x = torch.tensor(values, dtype=torch.float32)[None, :]  # (1, m)
    q = quantize(x, bits, group_dim=dim)
    bound = q.absmax / (2 * QMAX[bits])
    assert bool(((dequantize(q) - x).abs() <= bound * (1 + 1e-5) + 1e-6).all())


@pytest.mark.parametrize("build, message", [
    (lambda: EvictionPolicy(window=0), "at least 1"),
    (lambda: EvictionPolicy(window=2, sinks=-1), "negative"),
    (lambda: EvictionPolicy(drop=frozenset({0})), "start at 1"),
    (lambda: CacheSpec(EvictionPolicy(window=2), bits="int8"), "not both"),
    (lambda: CacheSpec(bits="int3"), "bits"),
    (lambda: CacheSpec(bits="int8", scales="per-row"), "scales"),
    (lambda: CacheSpec(bits="int8", scales="KIVI", group=3), "group"),
    (lambda: QuantizedCache(2, 4, "int8", "KIVI", residual=-1), "window"),
    (lambda: compare_with_full(load_preset("seed"), 0, CacheSpec()), "steps"),
])
def test_bad_settings_are_refused(build, message):
    """Impossible eviction or quantisation settings raise ValueError with a message."""
    with pytest.raises(ValueError, match=message):
        build()


def test_labels_describe_the_spec():
    """Each spec names itself the way the page shows it."""
    assert CacheSpec().label == "full cache"
    assert CacheSpec(EvictionPolicy(window=4, sinks=2)).label == "keep the last 4 + the first 2"
    assert CacheSpec(EvictionPolicy(drop=frozenset({3, 1}))).label == "keep without positions 1, 3"
    assert CacheSpec(bits="int8").label == "int8, per-token scales"
    assert CacheSpec(bits="int4", scales="KIVI", group=8, residual=2).label == (
        "int4, KIVI: keys per channel in groups of 8, values per token, newest 2 in full precision")


def test_an_empty_quantised_cache_has_the_kv_cache_shapes():
    """Before any append, keys, values and records are empty with KVCache's shapes and dtypes."""
    cache = QuantizedCache(3, 5, "int4", "KIVI")
    assert cache.keys().shape == (3, 0, 5) and cache.values().shape == (0,) and len(cache) == 0
    assert cache.info().value.dtype == torch.float64 and cache.nbytes == 0


def test_kivi_truncate_keeps_the_kept_tokens_and_the_window():
    """Truncating a KIVI cache fed one token at a time gives exactly the cache fed only the kept tokens:
    the same groups, codes, full-precision window and bytes."""
    full = generate(load_preset("seed"), 12, "kv", device="cpu").cache  # 15 tokens
    cut = _one_by_one(QuantizedCache(4, 64, "int4", "KIVI", group=2, residual=3), full)
    cut.truncate(9)
    fresh = QuantizedCache(4, 64, "int4", "KIVI", group=2, residual=3)
    info = full.info()
    for i in range(9):
        fresh.append(full.keys()[:, i:i + 1], full.values()[i:i + 1],
                     TokenInfo(*(getattr(info, f)[i:i + 1] for f in ("pos", "token", "value", "n"))))
    assert len(cut) == 9 and cut.full_precision_tokens == fresh.full_precision_tokens
    assert cut.nbytes == fresh.nbytes and torch.equal(cut.keys(), fresh.keys())
    assert torch.equal(cut.values(), fresh.values()) and cut.info().pos.tolist() == list(range(1, 10))
