"""Tier 1: speculative decoding on the shipped GPT-2: greedy gives the model's own tokens, rejected
guesses are cropped from its DynamicCache, and the early-exit draft shares the target's weights."""

from __future__ import annotations

import pytest

from viz.core.real.model import LLAMA_DIR, RealModelError, encode, generate, load_model
from viz.core.real.speculative import early_exit_model, speculate_real
from viz.core.engine.scenario import Sampling
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)

PROMPTS = ['The "return" statement', "Return the number of", "class Foo:"]


@pytest.fixture(scope="module")
def real():
    return load_model(None, "cpu")


@pytest.mark.parametrize("draft", ["prompt lookup", "early exit", "another model"])
def test_greedy_speculation_gives_the_models_own_tokens(real, draft):
    """Greedy: the tokens equal transformers-cached greedy decoding; logits agree to float rounding (1e-4)."""
    for text, k in zip(PROMPTS, (2, 5, 3)):
        ids = list(encode(real, text).ids)
        reference = generate(real, ids, 30)
        run = speculate_real(real, ids, 30, k, draft, layers=2, draft_model=real)
        assert list(run.ids) == reference
        assert run.same_words and run.max_logit_diff < 1e-4
        assert run.target_passes == 1 + len(run.rounds) <= 30
    assert run.words == tuple(real.tokenizer.decode([i]).replace(" ", "␣").replace("\n", "↵") for i in run.ids)


def test_the_shipped_llama_drafts_for_the_gpt2(real):
    """The Llama shares the GPT-2's tokenizer: drafting for it, greedy output is still the GPT-2's own."""
    llama = load_model(LLAMA_DIR, "cpu")
    ids = list(encode(real, PROMPTS[0]).ids)
    run = speculate_real(real, ids, 30, 4, "another model", draft_model=llama)
    assert list(run.ids) == generate(real, ids, 30) and run.draft == llama.name
    assert 0 < run.accepted < run.drafted  # two models that agree on some words, not all


def test_a_model_drafting_for_itself_is_always_right(real):
    """With the target as its own draft every greedy guess is kept: k + 1 tokens per pass."""
    ids = list(encode(real, PROMPTS[1]).ids)
    run = speculate_real(real, ids, 25, 4, "another model", draft_model=real)
    assert run.acceptance == 1.0 and run.target_passes == 1 + 24 // 5 + 1


def test_rejected_guesses_are_cropped_from_the_cache(real):
    """Each round's pass grows the cache by the fed token and every guess; rollback leaves only the kept ones."""
    ids = list(encode(real, PROMPTS[2]).ids)
    run = speculate_real(real, ids, 30, 4, "early exit", layers=1)
    assert any(r.accepted < len(r.guesses) for r in run.rounds)
    for r in run.rounds:
        assert r.cache_verified == r.cache_before + 1 + len(r.guesses)
        assert r.cache_after == r.cache_before + 1 + r.accepted
    for a, b in zip(run.rounds, run.rounds[1:]):
        assert b.cache_before == a.cache_after


def test_sampling_runs_and_is_reproducible(real):
    """Sampling speculation with a seed gives the same tokens twice (its distribution is the toy tests' rule)."""
    ids = list(encode(real, PROMPTS[0]).ids)
    settings = Sampling(strategy="sample", temperature=0.8, seed=5)
    a = speculate_real(real, ids, 20, 3, "early exit", settings=settings)
    b = speculate_real(real, ids, 20, 3, "early exit", settings=settings)
    assert a.ids == b.ids and len(a.ids) == 20 and not a.greedy


def test_early_exit_shares_weights_and_limits_are_refused(real):
    """The early-exit draft keeps fewer layers on the same tensors; bad drafts and sizes are refused in words."""
    small = early_exit_model(real, 2)
    assert small.shape.layers == 2 and small.shape.parameters < real.shape.parameters
    assert small.model.transformer.wte.weight.data_ptr() == real.model.transformer.wte.weight.data_ptr()
    ids = list(encode(real, PROMPTS[0]).ids)
    with pytest.raises(RealModelError, match="keeps 1 to"):
        early_exit_model(real, real.shape.layers)
    with pytest.raises(RealModelError):
        speculate_real(real, ids, 0, 2)
    with pytest.raises(RealModelError):
        speculate_real(real, ids, 10, 9)
    with pytest.raises(RealModelError, match="the draft is one of"):
        speculate_real(real, ids, 10, 2, "oracle")
    with pytest.raises(RealModelError, match="same tokenizer"):
        speculate_real(real, ids, 10, 2, "another model")
