"""The toy's decode step with its keys and values held by other caches: our KVCache, the naive
``torch.cat`` cache and transformers' ``DynamicCache`` and ``StaticCache``.

Each cache stands behind the same append-then-attend step (the engine's attention for every
cache), so what differs is only where K and V live. Used by ``python -m viz bench``'s peers section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import torch
import transformers

from ..core.engine.cache import CatCache, KVCache, TokenInfo
from ..core.engine.cost import sequence
from ..core.engine.model import ToyModel
from ..core.timing import Timing, TimingPlan, time_in_turn

PEERS = ("kv", "cat", "DynamicCache", "StaticCache")  # the last two from transformers

Append = Callable[[torch.Tensor, torch.Tensor, TokenInfo], tuple[torch.Tensor, torch.Tensor]]


def _engine_append(cache: KVCache | CatCache) -> Append:
    def append(keys: torch.Tensor, values: torch.Tensor, info: TokenInfo):
        cache.append(keys, values, info)
        return cache.keys(), cache.values()
    return append


def _transformers_append(model: ToyModel, kind: str, capacity: int) -> Append:
    """transformers' DynamicCache or StaticCache, holding K as (1, heads, len, d_k) and V as
    (1, heads, len, 1), the layout a Hugging Face attention layer gives them."""
    if kind == "DynamicCache":
        cache = transformers.DynamicCache()
    else:
        config = transformers.PretrainedConfig(num_hidden_layers=1)
        cache = transformers.StaticCache(config=config, max_cache_len=capacity)
    length = 0

    def append(keys: torch.Tensor, values: torch.Tensor, info: TokenInfo):
        nonlocal length
        length += values.shape[0]
        heads, m = keys.shape[0], values.shape[0]
        k_all, v_all = cache.update(keys[None], values[None, None, :, None].expand(1, heads, m, 1), 0)
        # a StaticCache returns its whole buffer: the filled part is what a mask would let through
        return k_all[0, :, :length], v_all[0, 0, :length, 0]  # (heads, len, d_k), (len,)
    return append


def _peer_append(model: ToyModel, peer: str, capacity: int) -> Append:
    if peer == "kv":
        return _engine_append(KVCache(model.num_heads, model.d_k, device=model.device, dtype=model.dtype))
    if peer == "cat":
        return _engine_append(CatCache(model.num_heads, model.d_k, device=model.device, dtype=model.dtype))
    return _transformers_append(model, peer, capacity)


@dataclass(frozen=True)
class PeerPoint:
    """One decode step at total length n with K and V held by one of :data:`PEERS`."""

    n: int
    cache: str
    per_token: Timing


def measure_peers(model: ToyModel, n: int, plan: TimingPlan, device: torch.device,
                  peers: tuple[str, ...] = PEERS) -> tuple[PeerPoint, ...]:
    """The decode step with the cache swapped: encode the new token, append its K and V, attend.

    The peers are timed in turn, one step each per round. Key records (position, token, value)
    come from one precomputed table for every peer, so what differs is where K and V live;
    KVCache and the cat cache also store the records they are handed, a small handicap the
    transformers caches do not carry.
    """
    prompt = n - plan.warmup - 1
    tokens, values = sequence(model.scenario, n + plan.max_repeats)
    info = model.token_info(tokens, values, 1, prompt)  # records of every token, one table
    prompt_info = info.slice(0, prompt)

    def stepper(peer: str) -> Callable[[], None]:
        append = _peer_append(model, peer, n + plan.max_repeats)
        append(model.encode_keys(prompt_info), model.encode_values(prompt_info), prompt_info)  # prefill
        lengths: Iterator[int] = iter(range(prompt + 1, n + plan.max_repeats + 1))

        def step() -> None:
            length = next(lengths)
            new = info.slice(length - 1, length)  # the new token's record
            keys, cached_values = append(model.encode_keys(new), model.encode_values(new), new)
            model.attend(new, model.encode_queries(1), info.slice(0, length), keys, cached_values)
        return step

    timings = time_in_turn({peer: stepper(peer) for peer in peers}, plan, device)
    return tuple(PeerPoint(n, peer, timings[peer][0]) for peer in peers)
