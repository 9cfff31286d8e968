"""Tier 1: sampling is deterministic per seed and greedy in its limits."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from viz import Sampling, generate, load_preset, sample

LOGITS = torch.tensor([15.3, 14.2, 8.15, 14.2])


def draws(settings_: Sampling, count: int = 50) -> list[int]:
    generator = torch.Generator().manual_seed(settings_.seed)
    return [sample(LOGITS, settings_, generator).index for _ in range(count)]


def test_greedy_takes_the_first_maximum():
    """Greedy picks the first index of the maximum."""
    assert sample(torch.tensor([1.0, 3.0, 3.0]), Sampling()).index == 1
    assert sample(LOGITS, Sampling()).index == 0


def test_same_seed_same_tokens():
    """Two generators with the same seed draw the same words; another seed differs."""
    s = Sampling(strategy="sample", temperature=3.0, seed=42)
    assert draws(s) == draws(s)
    assert draws(s) != draws(Sampling(strategy="sample", temperature=3.0, seed=43))


def test_temperature_zero_and_near_zero_equal_greedy():
    """Temperature 0 (and a tiny one) sampling gives the greedy choice every time."""
    for temperature in (0.0, 1e-4):
        assert set(draws(Sampling(strategy="sample", temperature=temperature))) == {0}


def test_top_k_one_equals_greedy():
    """top_k = 1 leaves only the greedy word."""
    result = sample(LOGITS, Sampling(strategy="sample", top_k=1, temperature=5.0))
    assert result.index == 0 and result.kept.tolist() == [True, False, False, False]
    assert set(draws(Sampling(strategy="sample", top_k=1, temperature=5.0))) == {0}


def test_top_k_ties_keep_the_lower_index():
    """With a tie at the boundary, top_k keeps the lower index."""
    result = sample(LOGITS, Sampling(top_k=2))
    assert result.kept.tolist() == [True, True, False, False]


def test_top_p_keeps_the_smallest_set_reaching_p():
    """top_p keeps the most likely words until their total reaches p."""
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert sample(logits, Sampling(top_p=0.5)).kept.tolist() == [True, False, False, False]
    assert sample(logits, Sampling(top_p=0.8)).kept.tolist() == [True, True, False, False]
    assert sample(logits, Sampling(top_p=0.81)).kept.tolist() == [True, True, True, False]
    assert sample(logits, Sampling(top_p=1.0)).kept.all()


def test_temperature_scales_the_distribution():
    """Base probabilities are softmax(logits / T)."""
    result = sample(LOGITS, Sampling(temperature=2.0))
    assert torch.allclose(result.base_probs, torch.softmax(LOGITS.double() / 2.0, 0))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=1, max_size=12), st.floats(0, 10),
       st.integers(0, 12), st.floats(0.01, 1.0), st.integers(0, 2**32))
def test_probabilities_sum_to_one_and_choice_is_kept(logits, temperature, top_k, top_p, seed):
    """For any settings, probs sum to 1, are zero outside kept, and the choice is a kept word."""
    settings_ = Sampling(strategy="sample", temperature=temperature, top_k=min(top_k, len(logits)),
                         top_p=top_p, seed=seed)
    result = sample(torch.tensor(logits), settings_, torch.Generator().manual_seed(seed))
    assert result.probs.sum().item() == pytest.approx(1.0)
    assert result.base_probs.sum().item() == pytest.approx(1.0)
    assert bool(result.kept[result.index])
    assert (result.probs[~result.kept] == 0).all()


def test_generation_with_sampling_is_reproducible():
    """A sampling preset gives the same tokens on every run."""
    scenario = load_preset("content")
    assert generate(scenario, 20, "kv").tokens == generate(scenario, 20, "kv").tokens
