"""Tier 1: the serving scheduler: every request's output equals decoding it alone, whatever the policy;
prefix caching shares full blocks only and counts what it saves; chunks, limits and static batches hold."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from viz import load_preset
from viz.core.engine.scenario import Head
from viz.core.serving.block_manager import BlockManager
from viz.core.serving.scheduler import decode_alone, same_as_alone, serve
from viz.core.serving.sequence import Request
from viz.core.serving.workload import (WORKLOADS, ServingConfig, ServingError, Workload, make_request, token_values,
                                       workload_preset)
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)

SCENARIO = load_preset("cache-safe")
WORDS = ["Today", "weather", "is", "so", "nice", "warm", "the", "soup", "delicious"]

CONFIGS = {
    "continuous": ServingConfig(),
    "static": ServingConfig(policy="static"),
    "recompute, tight pool": ServingConfig(num_blocks=9, block_size=2, max_batch=6),
    "swap, tight pool": ServingConfig(num_blocks=9, block_size=2, max_batch=6, preemption="swap"),
    "chunked": ServingConfig(chunk_size=4, num_blocks=40),
    "chunked, recompute, tight": ServingConfig(chunk_size=2, num_blocks=10, block_size=2, max_batch=8),
    "prefix caching": ServingConfig(num_blocks=60, prefix_caching=True),
    "everything, swap": ServingConfig(num_blocks=12, block_size=2, chunk_size=8, prefix_caching=True,
                                      preemption="swap", max_batch=8),
}


def small(workload: Workload, at_most: int = 12) -> Workload:
    """The preset with every prompt cut to its last ``at_most`` tokens, so tight pools can hold each request."""
    requests = tuple(replace(r, tokens=r.tokens[-at_most:], values=r.values[-at_most:]) for r in workload.requests)
    return Workload(workload.name, requests)


@pytest.mark.parametrize("name", WORKLOADS)
@pytest.mark.parametrize("config", list(CONFIGS), ids=list(CONFIGS))
def test_every_output_equals_decoding_alone(name, config):
    """Words, contexts and logits of every request equal decoding it alone, bit for bit, under each policy."""
    run = serve(SCENARIO, small(workload_preset(SCENARIO, name)), CONFIGS[config])
    assert all(same_as_alone(run)), same_as_alone(run)
    for request, outcome in zip(run.workload.requests, run.outcomes):
        assert len(outcome.words) == request.max_new_tokens
        assert len(outcome.token_times) == request.max_new_tokens
        assert outcome.first_token > request.arrival


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_tight_pools_preempt_and_still_match(preemption):
    """A pool too small for the burst forces preemptions; recompute redoes tokens, swap copies bytes instead."""
    config = replace(CONFIGS[f"{preemption}, tight pool"])
    run = serve(SCENARIO, small(workload_preset(SCENARIO, "a burst")), config)
    assert run.preemptions > 0
    assert all(same_as_alone(run))
    if preemption == "recompute":
        assert run.recomputed > 0 and run.swap_bytes == 0
    else:
        assert run.recomputed == 0 and run.swap_bytes > 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_workloads_and_settings_match_decoding_alone(data):
    """Random prompts, arrivals, lengths and settings (preemption, chunks, prefix caching): outputs match alone."""
    count = data.draw(st.integers(1, 6))
    requests = []
    for i in range(count):
        words = data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=10))
        requests.append(make_request(SCENARIO, f"R{i}", data.draw(st.integers(0, 60)), " ".join(words),
                                     data.draw(st.integers(1, 6))))
    config = ServingConfig(
        num_blocks=data.draw(st.integers(8, 30)), block_size=data.draw(st.sampled_from([1, 2, 4])),
        max_batch=data.draw(st.integers(1, 8)), policy=data.draw(st.sampled_from(["continuous", "static"])),
        chunk_size=data.draw(st.sampled_from([None, 1, 2, 4, 8])), prefix_caching=data.draw(st.booleans()),
        preemption=data.draw(st.sampled_from(["recompute", "swap"])), overhead=data.draw(st.integers(0, 10)))
    workload = Workload("random", tuple(requests))
    if any(r.blocks_needed(config.block_size) > config.num_blocks for r in requests):
        with pytest.raises(ServingError, match="the pool has"):
            serve(SCENARIO, workload, config)
        return
    run = serve(SCENARIO, workload, config)
    assert all(same_as_alone(run))


def test_prefix_caching_shares_full_blocks_only_and_counts_the_saving():
    """Later prompts take whole cached blocks (a multiple of the block size, never the last token), and the
    engine encodes exactly heads × hits fewer keys and hits fewer values than without the cache."""
    workload = workload_preset(SCENARIO, "a shared system prompt")
    on = serve(SCENARIO, workload, ServingConfig(num_blocks=80, prefix_caching=True))
    off = serve(SCENARIO, workload, ServingConfig(num_blocks=80))
    assert all(same_as_alone(on))
    first, *later = on.outcomes
    assert first.prefix_hits == 0
    for request, outcome in zip(workload.requests[1:], later):
        assert outcome.prefix_hits > 0
        assert outcome.prefix_hits % 4 == 0 and outcome.prefix_hits <= len(request.tokens) - 1
    heads = len(SCENARIO.heads)
    saved = off.work.keys_encoded - on.work.keys_encoded
    assert saved == heads * on.prefix_hits
    assert off.work.values_encoded - on.work.values_encoded == on.prefix_hits
    assert on.mean("ttft") < off.mean("ttft")


def test_a_prefix_shorter_than_a_block_is_not_shared():
    """Two prompts sharing 3 tokens with blocks of 4 share nothing: a partly filled block is never handed out."""
    a = make_request(SCENARIO, "A", 0, "Today weather is so nice", 2)
    b = make_request(SCENARIO, "B", 40, "Today weather is warm warm", 2)
    run = serve(SCENARIO, Workload("two", (a, b)), ServingConfig(prefix_caching=True))
    assert [o.prefix_hits for o in run.outcomes] == [0, 0]
    c = make_request(SCENARIO, "C", 40, "Today weather is so warm", 2)
    run = serve(SCENARIO, Workload("two", (a, c)), ServingConfig(prefix_caching=True))
    assert [o.prefix_hits for o in run.outcomes] == [0, 4]


def test_the_caching_pool_evicts_the_oldest_cached_block_first():
    """A freed named block stays cached until the free list is empty; then the least recently freed goes."""
    pool = BlockManager(3, 2, 1, 1, prefix_caching=True)
    blocks = [pool.allocate() for _ in range(3)]
    for block, word in zip(blocks, ["a", "b", "c"]):  # each block full of one word: its own one-block prefix
        pool.name_full_blocks([block], 2, [word, word], [1.0, 1.0], 0)
    pool.release(blocks[1])
    pool.release(blocks[0])
    assert pool.available == 2 and pool.free_blocks == 0
    new = pool.allocate()
    assert new == blocks[1] and pool.cached_prefix(["b", "b", "b"], [1.0] * 3) == []
    assert pool.cached_prefix(["a", "a", "a"], [1.0] * 3) == [blocks[0]]
    pool.share(blocks[0])  # a prefix hit revives it
    assert pool.refcount[blocks[0]] == 1 and pool.available == 0


def test_chunked_prefill_trades_the_long_prompts_first_token_for_the_others_pace():
    """With chunks, no iteration computes more prompt tokens than the chunk; the long request's first token
    comes later, and the short requests' longest gap between tokens shrinks."""
    workload = workload_preset(SCENARIO, "one long prompt, four short")
    whole = serve(SCENARIO, workload, ServingConfig(num_blocks=60))
    chunked = serve(SCENARIO, workload, ServingConfig(num_blocks=60, chunk_size=8))
    for it in chunked.iterations:
        assert sum(s.fed for s in it.states if s.phase == "prefill") <= 8
        assert sum(1 for s in it.states if s.phase == "decode") <= chunked.config.max_batch
    long = [o.name for o in workload.requests].index("long")
    assert chunked.outcomes[long].ttft > whole.outcomes[long].ttft

    def worst_gap(run):
        return max(b - a for i, o in enumerate(run.outcomes) if i != long for a, b in zip(o.token_times, o.token_times[1:]))
    assert worst_gap(chunked) < worst_gap(whole)


def test_static_batches_pad_and_never_admit_mid_batch():
    """Static batching pads every prompt to the longest and admits nobody while a batch runs; continuous
    batching on the same workload finishes sooner."""
    workload = workload_preset(SCENARIO, "a burst")
    static = serve(SCENARIO, workload, ServingConfig(policy="static", max_batch=4))
    prefills = [it for it in static.iterations if any(s.phase == "prefill" for s in it.states)]
    assert len(prefills) == 2  # 6 requests, batches of 4 then 2
    first = prefills[0]
    lengths = [len(r.tokens) for r, s in zip(workload.requests, first.states) if s.phase == "prefill"]
    assert first.padding == sum(max(lengths) - n for n in lengths)
    batch = {i for i, s in enumerate(first.states) if s.phase == "prefill"}
    for it in static.iterations[1:static.iterations.index(prefills[1])]:
        assert {i for i, s in enumerate(it.states) if s.phase in ("prefill", "decode", "idle")} <= batch
    continuous = serve(SCENARIO, workload, ServingConfig(max_batch=4))
    assert continuous.makespan < static.makespan
    assert continuous.padding == 0 and static.padding > 0


def test_blocks_are_accounted_every_iteration():
    """Every block in use belongs to a running request's table; the clock and durations add up; all is freed."""
    run = serve(SCENARIO, small(workload_preset(SCENARIO, "a burst")), CONFIGS["recompute, tight pool"])
    for it in run.iterations:
        held = sum(len(s.table) for s in it.states)
        assert held == sum(len(b.owners) for b in it.blocks)
        assert it.reserved_slots <= run.config.slots
        assert it.duration == run.config.overhead + it.tokens + it.padding
    assert all(not b.owners for b in run.iterations[-1].blocks)
    for a, b in zip(run.iterations, run.iterations[1:]):
        assert b.start >= a.end


def test_refusals_name_the_problem():
    """A head that reads n, a request larger than the pool and settings off the limits are refused in words."""
    seed = load_preset("seed")
    workload = workload_preset(seed, "a burst")
    with pytest.raises(ServingError, match="reads n"):
        serve(seed, workload, ServingConfig())
    assert all(same_as_alone(serve(seed, workload, ServingConfig(policy="static"))))
    with pytest.raises(ServingError, match="the pool has 2"):
        serve(SCENARIO, workload, ServingConfig(num_blocks=2))
    for bad in (dict(num_blocks=0), dict(block_size=3), dict(max_batch=9), dict(chunk_size=5),
                dict(preemption="drop"), dict(policy="lottery"), dict(overhead=-1)):
        with pytest.raises(ServingError):
            serve(SCENARIO, workload, ServingConfig(**bad))
    for args in (("", 0, "a", 1), ("R", -1, "a", 1), ("R", 0, "", 1), ("R", 0, "a", 0), ("R", 0, "a " * 200, 1)):
        with pytest.raises(ServingError):
            make_request(SCENARIO, *args)
    with pytest.raises(ServingError, match="same name"):
        serve(SCENARIO, Workload("dup", (workload.requests[0], workload.requests[0])), ServingConfig())


def test_token_values_and_the_alone_reference():
    """Prompt tokens take the scenario's value, then the vocabulary's, then 1; decode_alone is generate's run."""
    assert token_values(SCENARIO, ["weather", "nice", "banana"]) == (20.0, 7.0, 1.0)
    request = Request(name="A", arrival=0, tokens=SCENARIO.tokens, values=SCENARIO.values, max_new_tokens=5)
    from viz import generate
    steps = decode_alone(SCENARIO, request)
    reference = generate(SCENARIO, 5)
    assert [s.token for s in steps] == [s.token for s in reference.steps]
    assert torch.equal(torch.stack([s.logits for s in steps]), torch.stack([s.logits for s in reference.steps]))


def test_the_work_budget_and_the_pool_size_bound_a_click():
    """A big scenario's heavy workload is refused by the work meter, and a pool over 64 MiB before it is allocated."""
    rules = ["True", "k.pos == q.pos", "k.pos % 2 == 0", "k.value > 5"] * 4
    big = replace(SCENARIO.with_heads([Head(f"h{i}", r) for i, r in enumerate(rules)], [None] * 16), d_k=1024)
    prompt = " ".join(WORDS * 10)[:600]
    workload = Workload("heavy", tuple(make_request(big, f"R{i}", 0, prompt, 32) for i in range(12)))
    with pytest.raises(ServingError, match="more engine work than one click"):
        serve(big, workload, ServingConfig(num_blocks=60, block_size=16, max_batch=8))
    with pytest.raises(ServingError, match="MiB"):
        serve(big, workload, ServingConfig(num_blocks=128, block_size=16))
    with pytest.raises(ServingError, match="more engine work than one click"):
        same_as_alone(serve(SCENARIO, workload_preset(SCENARIO, "a burst"), ServingConfig()), budget_ms=1.0)
