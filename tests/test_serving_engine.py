"""Tier 1: one serving engine: Memory and Serving run the same Sequence, BlockManager and Scheduler; the
scheduler changes sequences only through the engine's public methods; policies are enums and classes;
each view names its sharing system; swapping and resuming keep a cache exact."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from viz import load_preset
from viz.core.engine.model import Generation, ToyModel
from viz.core.serving import scheduler
from viz.core.serving.block_manager import BlockManager, PagedKVCache, block_keys
from viz.core.serving.paged import decode_together, variants
from viz.core.serving.policies import POLICIES, Continuous, Static
from viz.core.serving.sequence import Request, RequestOutcome
from viz.core.serving.workload import (PREEMPTION_NOTE, Policy, Preemption, ServingConfig, ServingError, Sharing,
                                       workload_preset)
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)

SCENARIO = load_preset("cache-safe")
SERVING = Path(__file__).resolve().parents[1] / "viz" / "core" / "serving"
# writes into the engine's or a cache's own state, which only the engine and the cache may do
INTERNAL_WRITES = re.compile(r"\._predict\(|\._free\b|(decoder\.(tokens|values)|cache\.(table|length))(\s*,[^=\n]*)?\s*[+-]?=(?!=)")


def test_the_scheduler_never_writes_engine_or_cache_internals():
    """No serving module but the block manager (which owns the pool and the paged cache) writes a decoder's
    tokens, a cache's table or length, calls the engine's private predict, or touches a free list."""
    assert INTERNAL_WRITES.search("seq.run.decoder.tokens, x = [], []")  # the check can fail
    assert INTERNAL_WRITES.search("seq.cache.table = table") and INTERNAL_WRITES.search("seq.cache.length += 1")
    assert not INTERNAL_WRITES.search("if len(seq.cache.table) == 0 and seq.run.decoder.tokens == []:")
    offenders = [f"{path.name}:{number}" for path in SERVING.glob("*.py") if path.name != "block_manager.py"
                 for number, line in enumerate(path.read_text().splitlines(), 1) if INTERNAL_WRITES.search(line)]
    assert offenders == []


def test_the_bytes_per_slot_formula_is_written_once():
    """(heads · d_k + 1) · element size is written in one function (engine.cache.slot_nbytes) and nowhere else."""
    formula = re.compile(r"d_k\s*\+\s*1\s*\)")
    root = SERVING.parents[1]
    places = [str(path.relative_to(root)) for path in root.rglob("*.py") if formula.search(path.read_text())]
    assert places == ["core/engine/cache.py"]
    pool = BlockManager(2, 4, 3, 5)
    assert pool.slot_nbytes == (3 * 5 + 1) * 4


def test_memory_and_serving_run_on_the_same_engine(monkeypatch):
    """decode_together and serve both step scheduler.Scheduler, and both return RequestOutcomes per request."""
    executed = []
    original = scheduler.Scheduler.execute
    monkeypatch.setattr(scheduler.Scheduler, "execute",
                        lambda self, plan: executed.append(type(self.policy).__name__) or original(self, plan))
    memory = decode_together(SCENARIO, variants(SCENARIO, 2), 2)
    serving = scheduler.serve(SCENARIO, workload_preset(SCENARIO, "a burst"), ServingConfig())
    assert {"Together", "Continuous"} <= set(executed)
    assert all(isinstance(o, RequestOutcome) for o in [*memory.sequences, *serving.outcomes])


def test_policies_are_enums_that_keep_their_string_values():
    """A config given strings (as share links and pages give them) is checked into enums equal to those
    strings; each policy is a class; an unknown value is refused in words."""
    config = ServingConfig(policy="static", preemption="swap").checked()
    assert config.policy is Policy.STATIC and config.preemption is Preemption.SWAP
    assert config.policy == "static" and f"{config.preemption}" == "swap"
    assert POLICIES[Policy.CONTINUOUS] is Continuous and POLICIES[Policy.STATIC] is Static
    for bad in (dict(policy="lottery"), dict(preemption="drop")):
        with pytest.raises(ServingError):
            ServingConfig(**bad).checked()


def test_a_full_block_is_named_by_everything_before_it():
    """The same second block after a different first block gets another name; the same prefix the same names."""
    a = list(block_keys(["x", "y", "p", "q"], [1.0] * 4, 2, 2))
    b = list(block_keys(["z", "y", "p", "q"], [1.0] * 4, 2, 2))
    c = list(block_keys(["x", "y", "p", "q", "r"], [1.0] * 5, 2, 2))
    assert a[1] != b[1] and a == c
    assert list(block_keys(["x", "y"], [1.0, 2.0], 2, 1)) != list(block_keys(["x", "y"], [1.0, 3.0], 2, 1))


def test_swapping_out_and_back_in_keeps_the_cache_exact():
    """swap_out gives every block back and keeps the length; swap_in restores keys, values and records."""
    model = ToyModel(SCENARIO)
    pool = BlockManager(6, 2, model.num_heads, model.d_k)
    run = Generation(SCENARIO, "kv", model=model, cache=PagedKVCache(pool))
    run.prefill()
    cache = run.decoder.cache
    keys, values, info = cache.keys().clone(), cache.values().clone(), cache.info()
    saved = cache.swap_out()
    assert pool.free_blocks == 6 and not cache.table and len(cache) == len(SCENARIO.tokens)
    pool.allocate()  # someone else takes the lowest block meanwhile
    cache.swap_in(saved)
    assert torch.equal(cache.keys(), keys) and torch.equal(cache.values(), values)
    assert torch.equal(cache.info().pos, info.pos) and torch.equal(cache.info().token, info.token)


def test_resuming_needs_the_cache_to_hold_exactly_those_tokens():
    """Decoder.resume refuses tokens the cache does not hold; Generation.feed then predicts as step() does."""
    run = Generation(SCENARIO, "kv")
    with pytest.raises(ValueError, match="holds 0 tokens"):
        run.decoder.resume(["Today"], [1.0])
    counts, step = run.feed(list(SCENARIO.tokens), list(SCENARIO.values), predict=True)
    alone = Generation(SCENARIO, "kv")
    alone.prefill()
    assert step.token == alone.steps[0].token and torch.equal(step.logits, alone.steps[0].logits)
    assert counts.keys_encoded == len(SCENARIO.heads) * len(SCENARIO.tokens)


def test_a_prompt_equal_to_an_earlier_one_shares_all_of_it_without_a_copy():
    """Copy on write: a prompt identical to A's forks all of A's blocks, writes nothing into them, and
    still predicts exactly A's words."""
    a = Request.of("A", SCENARIO, 3)
    run = decode_together(SCENARIO, [a, Request.of("B", SCENARIO, 3)], 3)
    first, second = run.sequences
    assert second.prefix_hits == len(SCENARIO.tokens) and second.shared_with == "A"
    assert run.snapshots[1].copies == 0 and run.snapshots[1].tables[1] == run.snapshots[1].tables[0]
    assert second.words == first.words and torch.equal(second.logits, first.logits)


def test_each_view_names_its_sharing_system():
    """Memory shows copy on write (forks), Serving automatic prefix caching (full blocks); each sentence
    says which it is and where the other is taught."""
    memory = decode_together(SCENARIO, variants(SCENARIO, 2), 2)
    assert memory.system is Sharing.COPY_ON_WRITE
    assert "copy on write" in memory.system.sentence and "parallel sampling" in memory.system.sentence
    assert "Serving page" in memory.system.sentence
    workload = workload_preset(SCENARIO, "a shared system prompt")
    on = scheduler.serve(SCENARIO, workload, ServingConfig(num_blocks=80, prefix_caching=True))
    off = scheduler.serve(SCENARIO, workload, ServingConfig(num_blocks=80))
    assert on.sharing is Sharing.PREFIX_CACHING and off.sharing is None
    assert "automatic prefix caching" in on.sharing.sentence and "full blocks" in on.sharing.sentence
    assert "Memory page" in on.sharing.sentence


def test_the_preemption_note_says_current_vllm_only_recomputes():
    """Recompute and swap are not offered as equals: V1 recomputes (hitting the prefix cache), swap was V0's."""
    assert "V1" in PREEMPTION_NOTE and "recomputation only" in PREEMPTION_NOTE
    assert "prefix cache" in PREEMPTION_NOTE and "V0" in PREEMPTION_NOTE


def test_a_preempted_request_returns_through_the_prefix_cache():
    """With prefix caching on, a request preempted by recomputation takes its freed full blocks back."""
    config = ServingConfig(num_blocks=9, block_size=2, max_batch=6, prefix_caching=True)
    run = scheduler.serve(SCENARIO, workload_preset(SCENARIO, "a burst"), config)
    preempted = [o for o in run.outcomes if o.preemptions]
    assert preempted and any(o.prefix_hits for o in preempted)
    assert all(scheduler.same_as_alone(run))
