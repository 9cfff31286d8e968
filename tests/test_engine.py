"""Tier 1: the engine reproduces the seed article and the KV cache matches recomputation."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from viz import KVCache, Scenario, ToyModel, generate, load_preset
from viz.core.engine.cache import TokenInfo
from viz.core.engine.model import KVDecoder, make_decoder

SEED_CONTEXTS = [[10, 20, 20, 12.5], [10, 15, 10.3333, 5], [10, 10, 10, 10], [10, 15, 10.3333, 9]]


def close(actual: torch.Tensor, expected, tol: float = 1e-4) -> bool:
    return torch.allclose(actual.double(), torch.tensor(expected, dtype=torch.float64), atol=tol)


@pytest.fixture(scope="module")
def seed() -> Scenario:
    return load_preset("seed")


def test_seed_tokens_and_values(seed):
    """The seed prompt tokenizes to the article's four tokens with values 10/20/1/5."""
    assert seed.tokens == ("Today", "weather", "is", "so")
    assert seed.values == (10, 20, 1, 5)


def test_seed_causal_mask(seed):
    """The causal mask is lower-triangular, as the article prints it."""
    mask = generate(seed, 1).prefill.attention.visible
    assert mask.tolist() == [[True, False, False, False], [True, True, False, False],
                             [True, True, True, False], [True, True, True, True]]


def test_seed_q_k_and_scores(seed):
    """Q = ones, K = ±1 selector rows, scores ±8 for d_k = 64."""
    pre = generate(seed, 1).prefill
    assert torch.equal(pre.q, torch.ones(4, 4, 64))
    assert pre.k[0, :, 0].tolist() == [-1, 1, -1, 1]  # even positions
    assert pre.k[1, :, 0].tolist() == [-1, -1, -1, 1]  # last token (n = 4)
    assert pre.k[2, :, 0].tolist() == [1, -1, -1, -1]  # first token
    assert pre.k[3, :, 0].tolist() == [1, 1, 1, 1]  # every token
    assert set(pre.attention.scaled_scores.unique().tolist()) == {-8.0, 8.0}
    assert set(pre.attention.raw_scores.unique().tolist()) == {-64.0, 64.0}


def test_seed_prefill_contexts(seed):
    """The 4×4 prefill contexts match the article's printed tensor."""
    assert close(generate(seed, 1).prefill.contexts, SEED_CONTEXTS)


def test_seed_final_context_logits_and_greedy(seed):
    """Final context [12.5, 5, 10, 9], logits 15.3 / 14.2 / 8.15, greedy picks 'nice'."""
    step = generate(seed, 1).steps[0]
    assert close(step.context, [12.5, 5, 10, 9])
    assert close(step.logits, [15.3, 14.2, 8.15])
    assert step.token == "nice" and step.value == 7


@pytest.mark.parametrize("mode, expected", [("recompute", [12.5, 7.0, 10.0, 8.6]),
                                            ("reencode", [12.5, 7.0, 10.0, 8.6]),
                                            ("kv", [12.5, 6.0, 10.0, 8.6])])
def test_seed_decode_context(seed, mode, expected):
    """Decoding 'nice': recompute gives 7.0 for the 'last' head, the KV cache the stale 6.0."""
    trace = generate(seed, 2, mode)
    assert trace.tokens[:5] == ["Today", "weather", "is", "so", "nice"]
    assert close(trace.steps[1].context, expected)


def test_seed_last_head_not_cacheable(seed):
    """Only the head that reads n is reported as not cacheable."""
    assert generate(seed, 1).cacheable == [True, False, True, True]


def test_no_match_row_spreads_evenly(seed):
    """'Today' matches no even position: the weight spreads evenly (softmax cannot attend to nothing)."""
    attention = generate(seed, 1).prefill.attention
    assert attention.no_match[0].tolist() == [True, False, False, False]
    assert attention.weights[0, 0, 0].item() == pytest.approx(1.0)
    never = generate(load_preset("never-matches"), 1).prefill.attention
    assert bool(never.no_match[0].all())
    assert close(never.weights[0, 3], [0.25, 0.25, 0.25, 0.25], 1e-6)


def test_cache_safe_preset_agrees(seed):
    """'Attend to self' follows the article's prose in prefill, keeps the prediction, and kv == recompute."""
    safe = load_preset("cache-safe")
    prefill = generate(safe, 1).prefill.contexts
    assert close(prefill[1], [10, 20, 1, 5])  # the prose: Today 10, weather 20, is 1, so 5
    assert close(prefill[[0, 2, 3]], [SEED_CONTEXTS[i] for i in (0, 2, 3)])
    kv, full = generate(safe, 5, "kv"), generate(safe, 5, "recompute")
    for a, b in zip(kv.steps, full.steps):
        assert torch.equal(a.context, b.context)
    assert close(kv.steps[1].context, [12.5, 7.0, 10.0, 8.6])


def test_every_preset_runs_in_every_mode():
    """All presets run 8 steps in all three modes with finite numbers."""
    from viz import MODES, preset_names
    for name in preset_names():
        for mode in MODES:
            trace = generate(load_preset(name), 8, mode)
            assert len(trace.steps) == 8
            assert all(torch.isfinite(step.logits).all() for step in trace.steps)


# -- KV cache == recompute for every cacheable rule set -------------------------------------
CACHEABLE_RULES = ["k.pos % 2 == 0", "k.pos == 1", "True", "False", "k.pos == q.pos",
                   "k.pos == q.pos - 1", "q.pos - k.pos < 3", 'k.token in ("a", "b")', "k.value > 5",
                   "k.token == q.token", "abs(q.pos - k.pos) % 3 == 1 or k.value <= q.value",
                   "not (k.pos % 3 == 0) and q.pos > 2", "k.pos * 2 >= q.pos"]
WORDS = ["a", "b", "c", "dd"]


@st.composite
def cacheable_scenarios(draw) -> Scenario:
    n = draw(st.integers(1, 12))
    heads = draw(st.lists(st.sampled_from(CACHEABLE_RULES), min_size=1, max_size=5))
    weights = st.floats(-2, 2, allow_nan=False).map(lambda x: round(x, 2))
    vocab = [{"token": w, "value": draw(st.integers(-5, 20)),
              "weights": [draw(weights) for _ in heads]} for w in WORDS]
    return Scenario.from_dict({
        "tokens": [draw(st.sampled_from(WORDS)) for _ in range(n)],
        "values": [draw(st.integers(-10, 30)) for _ in range(n)],
        "d_k": draw(st.sampled_from([1, 4, 16, 64])),
        "heads": [{"name": f"h{i}", "rule": r} for i, r in enumerate(heads)],
        "vocab": vocab,
        "sampling": {"strategy": draw(st.sampled_from(["greedy", "sample"])),
                     "temperature": draw(st.sampled_from([0.5, 1.0, 2.0])),
                     "seed": draw(st.integers(0, 1000))},
    })


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cacheable_scenarios(), st.integers(1, 16))
def test_kv_equals_recompute_for_cacheable_rules(scenario, steps):
    """With no head reading n, kv, reencode and recompute give identical contexts, logits and tokens."""
    traces = [generate(scenario, steps, mode) for mode in ("recompute", "reencode", "kv")]
    assert all(traces[0].cacheable)
    reference = traces[0]
    for other in traces[1:]:
        assert other.tokens == reference.tokens
        for a, b in zip(reference.steps, other.steps):
            assert torch.equal(a.context, b.context)
            assert torch.equal(a.logits, b.logits)
            assert torch.equal(a.probs, b.probs)
            assert torch.equal(a.attention.weights, b.attention.weights)


# -- the KV cache itself ---------------------------------------------------------------------
def _info(start: int, m: int) -> TokenInfo:
    return TokenInfo(torch.arange(start, start + m), torch.zeros(m, dtype=torch.int64),
                     torch.ones(m, dtype=torch.float64), torch.full((m,), start + m - 1))


def test_cache_grows_by_doubling_and_writes_in_place():
    """1,000 appends cause only log2 growth events; between them the buffer is reused."""
    cache = KVCache(num_heads=3, d_k=8, capacity=4)
    storage = cache._k.data_ptr()
    reallocations = 0
    for i in range(1000):
        cache.append(torch.full((3, 1, 8), float(i)), torch.tensor([float(i)]), _info(i + 1, 1))
        if cache._k.data_ptr() != storage:
            reallocations += 1
            storage = cache._k.data_ptr()
    assert len(cache) == 1000
    assert cache.growth_events == reallocations == math.ceil(math.log2(1000 / 4))
    assert cache.capacity == 1024
    assert torch.equal(cache.values(), torch.arange(1000, dtype=torch.float32))
    assert torch.equal(cache.keys()[:, 10], torch.full((3, 8), 10.0))
    assert cache.info().pos.tolist() == list(range(1, 1001))


def test_cache_byte_count():
    """nbytes = length · (heads · d_k + 1) · element size; allocated bytes follow the capacity."""
    cache = KVCache(num_heads=4, d_k=64, capacity=16)
    cache.append(torch.ones(4, 5, 64), torch.ones(5), _info(1, 5))
    assert cache.nbytes == 5 * (4 * 64 + 1) * 4
    assert cache.nbytes == cache.keys().nelement() * 4 + cache.values().nelement() * 4
    assert cache.allocated_nbytes == 16 * (4 * 64 + 1) * 4
    half = KVCache(num_heads=4, d_k=64, dtype=torch.float16)
    half.append(torch.ones(4, 2, 64, dtype=torch.float16), torch.ones(2, dtype=torch.float16), _info(1, 2))
    assert half.nbytes == 2 * (4 * 64 + 1) * 2


def test_decode_uses_the_cache_without_reallocating_each_step(seed):
    """A 200-step kv decode grows the cache O(log n) times and reports its length and bytes."""
    trace = generate(seed, 200, "kv")
    cache = trace.cache
    assert len(cache) == 4 + 199
    assert cache.growth_events <= math.ceil(math.log2(203 / 16)) + 1
    last = trace.steps[-1]
    assert last.cache_length == 203 and last.cache_nbytes == cache.nbytes == 203 * (4 * 64 + 1) * 4


def test_kv_cache_keys_are_encoded_once(seed):
    """In kv mode the prompt's 'last' key keeps n = 4: position 4 stays +1 after decoding."""
    trace = generate(seed, 3, "kv")
    keys = trace.cache.keys()[1, :, 0].tolist()  # 'last' head
    assert keys == [-1, -1, -1, 1, 1, 1]
    assert trace.cache.info().n.tolist() == [4, 4, 4, 4, 5, 6]


# -- work counters -----------------------------------------------------------------------------
def test_work_counts_are_quadratic_without_cache_and_linear_with_it(seed):
    """Scores per step grow with n² for recompute and with n for kv; keys encoded with n vs constant."""
    steps = 30
    full, kv = generate(seed, steps, "recompute"), generate(seed, steps, "kv")
    h, d_k, vocab = 4, 64, 3
    for step_full, step_kv in zip(full.steps[1:], kv.steps[1:]):
        n = step_full.seq_len
        assert step_full.counts.scores == h * n * n
        assert step_kv.counts.scores == h * n
        assert step_full.counts.keys_encoded == h * n
        assert step_kv.counts.keys_encoded == h
        assert step_kv.counts.keys_read == h * (n - 1)
        assert step_kv.counts.multiply_adds == h * n * d_k + h * n + h * vocab
        assert step_full.counts.multiply_adds == h * n * n * d_k + h * n * n + h * vocab


# -- devices ----------------------------------------------------------------------------------
def test_model_runs_on_an_injected_device(seed):
    """The model puts its tensors on the device it is given (meta: shapes without a GPU)."""
    model = ToyModel(seed, device="meta")
    assert model.w_vocab.device.type == "meta"
    result = model.prefill(list(seed.tokens), list(seed.values))
    assert result.contexts.device.type == "meta" and result.contexts.shape == (4, 4)
    decoder = make_decoder("kv", model)
    decoder.prefill(list(seed.tokens), list(seed.values))
    assert isinstance(decoder, KVDecoder) and decoder.cache.keys().device.type == "meta"
    assert decoder.decode_step("nice", 7.0).attention.contexts.shape == (4, 1)


def test_float64_engine_gives_the_same_seed_numbers(seed):
    """The dtype is a parameter; float64 reproduces the article too."""
    trace = generate(seed, 2, "kv", dtype=torch.float64)
    assert close(trace.prefill.contexts, SEED_CONTEXTS)
    assert close(trace.steps[1].context, [12.5, 6.0, 10.0, 8.6], 1e-9)
