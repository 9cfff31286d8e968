"""Tier 1: every cache keeps the one Cache interface; extend, truncate and the decode loop agree."""

from __future__ import annotations

import pytest
import torch

from viz import Generation, generate, load_preset
from viz.core.engine.cache import Cache, CatCache, KVCache, TokenInfo
from viz.core.serving.compress import EvictingCache, EvictionPolicy, QuantizedCache
from viz.core.engine.model import ToyModel, make_decoder
from viz.core.serving.block_manager import BlockManager, PagedKVCache


def _caches(heads: int, d_k: int) -> dict[str, Cache]:
    pool = BlockManager(8, 3, heads, d_k)
    return {"KVCache": KVCache(heads, d_k, capacity=2), "CatCache": CatCache(heads, d_k),
            "PagedKVCache": PagedKVCache(pool), "EvictingCache": EvictingCache(heads, d_k, EvictionPolicy()),
            "QuantizedCache": QuantizedCache(heads, d_k, "int8")}


def _records(start: int, m: int) -> TokenInfo:
    pos = torch.arange(start, start + m)
    return TokenInfo(pos, pos % 3, pos.double(), torch.full((m,), start + m - 1))


@pytest.mark.parametrize("name", list(_caches(2, 4)))
def test_every_cache_keeps_the_interface_and_truncates(name):
    """Each cache is a Cache; after appends and a truncate it holds exactly the first tokens."""
    cache = _caches(2, 4)[name]
    assert isinstance(cache, Cache)
    for start, m in ((1, 4), (5, 1), (6, 2)):
        keys = torch.arange(start, start + m, dtype=torch.float32)[None, :, None].expand(2, m, 4)
        cache.append(keys.contiguous(), torch.arange(start, start + m, dtype=torch.float32), _records(start, m))
    assert len(cache) == 7 and cache.info().pos.tolist() == list(range(1, 8))
    cache.truncate(5)
    assert len(cache) == 5 and cache.info().pos.tolist() == [1, 2, 3, 4, 5]
    assert cache.keys().shape == (2, 5, 4) and cache.values().shape == (5,)
    assert torch.allclose(cache.values(), torch.arange(1, 6, dtype=torch.float32), atol=0.05)
    cache.append(torch.zeros(2, 1, 4), torch.zeros(1), _records(6, 1))  # writing on after a rollback
    assert cache.info().pos.tolist() == [1, 2, 3, 4, 5, 6] and float(cache.values()[-1]) == 0.0
    with pytest.raises(ValueError):
        cache.truncate(99)


def test_paged_truncate_returns_empty_blocks_to_the_pool():
    """Rolling back a paged cache frees the blocks it no longer needs."""
    pool = BlockManager(4, 2, 1, 2)
    cache = PagedKVCache(pool)
    cache.append(torch.ones(1, 5, 2), torch.ones(5), _records(1, 5))
    assert pool.free_blocks == 1
    cache.truncate(2)
    assert pool.free_blocks == 3 and cache.table and len(cache.table) == 1


@pytest.mark.parametrize("mode", ["recompute", "reencode", "kv"])
def test_extend_by_several_tokens_equals_one_at_a_time(mode):
    """Extending by m tokens gives the same rows as m single decode steps (cacheable heads)."""
    scenario = load_preset("cache-safe")
    words = [("nice", 7.0), ("warm", 6.0), ("nice", 7.0)]
    model = ToyModel(scenario)
    together, apart = make_decoder(mode, model), make_decoder(mode, model)
    for decoder in (together, apart):
        decoder.prefill(list(scenario.tokens), list(scenario.values))
    rows = together.extend([w for w, _ in words], [v for _, v in words]).attention
    singles = [apart.decode_step(w, v).attention for w, v in words]
    assert rows.weights.shape[1] == 3
    for i, single in enumerate(singles):
        length = single.weights.shape[-1]
        assert torch.equal(rows.contexts[:, i], single.contexts[:, 0])
        assert torch.equal(rows.weights[:, i, :length], single.weights[:, 0])


def test_step_rows_are_copies_not_views_of_the_whole_pass():
    """A decode step keeps small tensors of its own, not views that hold an n × n pass alive."""
    trace = generate(load_preset("seed"), 4, "recompute")
    for step in trace.steps:
        weights = step.attention.weights
        assert weights.shape == (4, 1, step.seq_len)
        assert weights.untyped_storage().nbytes() == weights.numel() * weights.element_size()


def test_a_generation_extended_later_equals_one_run():
    """Stepping a Generation across calls gives the same trace as generate() in one go."""
    scenario = load_preset("seed")
    run = Generation(scenario, "kv")
    run.prefill()
    for _ in range(5):
        run.step()
    whole = generate(scenario, 6, "kv")
    assert [s.token for s in run.steps] == [s.token for s in whole.steps]
    assert all(torch.equal(a.context, b.context) for a, b in zip(run.steps, whole.steps))
    early = run.trace(3)
    assert len(early.steps) == 3 and len(early.cache) == early.steps[-1].cache_length == 6
    assert early.cache.info().pos.tolist() == list(range(1, 7))
    assert torch.equal(early.cache.keys(), whole.cache.keys()[:, :6])
