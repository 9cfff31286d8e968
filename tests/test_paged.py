"""Tier 1: the paged KV cache holds exactly what the contiguous one does, and sharing changes nothing."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from viz import generate, load_preset, preset_names
from viz.core.engine.cache import TokenInfo
from viz.core.limits import MAX_TOKENS
from viz.core.engine.scenario import Head
from viz.core.serving.block_manager import BlockManager, OutOfBlocks, PagedKVCache
from viz.core.serving.paged import decode_together, same_outputs, sharing_refusal, variants
from viz.core.serving.sequence import Request


def paged(block_size: int, num_blocks: int = 64):
    """make_cache for generate(): a fresh pool and one paged cache on it."""
    return lambda model: PagedKVCache(BlockManager(num_blocks, block_size, model.num_heads, model.d_k,
                                                device=model.device, dtype=model.dtype))


def tokens(start: int, m: int, heads: int = 2, d_k: int = 3, tag: float = 0.0):
    """m synthetic tokens at positions start… whose keys and values identify them."""
    pos = torch.arange(start, start + m)
    keys = (pos[None, :, None] + tag + torch.zeros(heads, m, d_k)).float()  # (heads, m, d_k)
    values = pos.float() * 10 + tag  # (m,)
    info = TokenInfo(pos, pos + 100 * int(tag), values.double(), torch.full((m,), start + m - 1))
    return keys, values, info


def concat(*parts):
    """Join (keys, values, info) runs into one."""
    keys = torch.cat([p[0] for p in parts], dim=1)  # (heads, m, d_k)
    values = torch.cat([p[1] for p in parts])  # (m,)
    info = TokenInfo(*(torch.cat([getattr(p[2], f) for p in parts]) for f in ("pos", "token", "value", "n")))
    return keys, values, info


@pytest.mark.parametrize("name", preset_names())
@pytest.mark.parametrize("block_size", [1, 3, 4, 16])
def test_paged_cache_gives_exactly_the_contiguous_contexts(name, block_size):
    """Through generate(make_cache=...), every context, weight, logit and token equals the KVCache run."""
    scenario = load_preset(name)
    plain = generate(scenario, 7, "kv", device="cpu")
    paged_run = generate(scenario, 7, "kv", device="cpu", make_cache=paged(block_size))
    assert isinstance(paged_run.cache, PagedKVCache)
    assert paged_run.tokens == plain.tokens
    for a, b in zip(plain.steps, paged_run.steps):
        assert torch.equal(a.context, b.context)
        assert torch.equal(a.attention.weights, b.attention.weights)
        assert torch.equal(a.logits, b.logits)
        assert a.cache_nbytes == b.cache_nbytes
    assert torch.equal(paged_run.cache.keys(), plain.cache.keys())
    assert torch.equal(paged_run.cache.values(), plain.cache.values())
    for field in ("pos", "token", "value", "n"):
        assert torch.equal(getattr(paged_run.cache.info(), field), getattr(plain.cache.info(), field))


@settings(max_examples=25, deadline=None)
@given(block_size=st.integers(1, 9), steps=st.integers(1, 12))
def test_paged_cache_matches_for_any_block_size_and_length(block_size, steps):
    """For any block size and number of steps, the paged run equals the contiguous run."""
    scenario = load_preset("previous-token")
    plain = generate(scenario, steps, "kv", device="cpu")
    paged_run = generate(scenario, steps, "kv", device="cpu", make_cache=paged(block_size))
    assert torch.equal(torch.stack([s.context for s in plain.steps]),
                       torch.stack([s.context for s in paged_run.steps]))
    assert len(paged_run.cache.table) == -(-len(plain.cache) // block_size)


def test_block_table_spans_only_the_blocks_needed():
    """A cache of 10 tokens in blocks of 4 holds 3 blocks; allocated bytes include the empty slots."""
    pool = BlockManager(8, 4, 2, 3)
    cache = PagedKVCache(pool)
    cache.append(*tokens(1, 10))
    assert cache.table == [0, 1, 2] and len(cache) == 10
    assert cache.nbytes == 10 * pool.slot_nbytes == 10 * (2 * 3 + 1) * 4
    assert cache.allocated_nbytes == 12 * pool.slot_nbytes
    assert pool.free_blocks == 5


def test_fork_shares_blocks_and_copies_on_write():
    """A fork shares the prefix blocks (refcount 2); writing into a shared block copies it first,
    and afterwards each sequence still reads exactly its own tokens."""
    pool = BlockManager(8, 4, 2, 3)
    a = PagedKVCache(pool)
    a.append(*tokens(1, 6))  # blocks 0 (full) and 1 (2 of 4 slots)
    b = a.fork(5)  # shares block 0 and block 1, where b sees only slot 0
    assert b.table == [0, 1] and pool.refcount[:2] == [2, 2]
    b_prompt = concat(tokens(1, 5), tokens(6, 2, tag=0.5))
    b.append(*b_prompt)  # positions 1-5 already held, 6-7 are b's own
    assert pool.copies == 1 and b.table[0] == 0 and b.table[1] != 1
    assert pool.refcount[0] == 2 and pool.refcount[1] == 1
    a.append(*tokens(7, 3))
    assert pool.copies == 1  # a's block 1 is no longer shared: no copy needed
    expected_a = tokens(1, 9)
    assert torch.equal(a.keys(), expected_a[0]) and torch.equal(a.values(), expected_a[1])
    assert torch.equal(b.keys(), b_prompt[0]) and torch.equal(b.values(), b_prompt[1])
    assert torch.equal(b.info().token, b_prompt[2].token)


def test_fork_refuses_a_prompt_that_differs_from_the_shared_prefix():
    """Appending a prompt whose first tokens differ from the shared blocks is an error, not a silent mix."""
    pool = BlockManager(4, 4, 2, 3)
    a = PagedKVCache(pool)
    a.append(*tokens(1, 4))
    with pytest.raises(ValueError, match="shared prefix"):
        a.fork(3).append(*tokens(1, 5, tag=0.25))


def test_pool_runs_out_of_blocks_with_a_clear_error():
    """More tokens than the pool has slots raise OutOfBlocks."""
    cache = PagedKVCache(BlockManager(2, 2, 2, 3))
    with pytest.raises(OutOfBlocks, match="all 2 blocks"):
        cache.append(*tokens(1, 5))


def test_positions_must_run_on():
    """Appending with a gap in positions is refused."""
    cache = PagedKVCache(BlockManager(2, 2, 2, 3))
    cache.append(*tokens(1, 2))
    with pytest.raises(ValueError, match="gap"):
        cache.append(*tokens(5, 1))


@pytest.mark.parametrize("name", ["cache-safe", "content", "previous-token", "sliding-window"])
@pytest.mark.parametrize("share", [True, False])
def test_decoding_together_equals_generating_alone(name, share):
    """Each sequence decoded on the shared pool gets generate()'s contexts, logits and words exactly."""
    scenario = load_preset(name)
    requests = variants(scenario, 5)
    run = decode_together(scenario, requests, 3, share_prefix=share, device="cpu")
    for request, seq in zip(requests, run.sequences):
        alone = generate(scenario.with_tokens(list(request.tokens), list(request.values)), 5, "kv", device="cpu")
        assert seq.words == tuple(step.token for step in alone.steps)
        assert torch.equal(seq.contexts, torch.stack([step.context for step in alone.steps]))
        assert torch.equal(seq.logits, torch.stack([step.logits for step in alone.steps]))
        assert seq.tokens == tuple(alone.tokens[:-1])


@pytest.mark.parametrize("length", [1, 2, MAX_TOKENS - 1, MAX_TOKENS])
def test_every_variant_prompt_is_one_a_visitor_could_type(length):
    """B swaps the last token for the first word, C continues with the last word; at the length limit
    C ends with that word instead, so no prompt the Memory page offers is over the limit."""
    seed = load_preset("seed")
    scenario = seed.with_tokens([f"t{i}" for i in range(length)], [1.0] * length)
    a, b, c = variants(scenario, 2)
    assert a.tokens == scenario.tokens and b.tokens[-1] == seed.vocab[0].token and c.tokens[-1] == seed.vocab[-1].token
    assert len(c.tokens) == min(length + 1, MAX_TOKENS)
    for request in (a, b, c):
        assert scenario.with_prompt(" ".join(request.tokens)).tokens == request.tokens


def test_shared_prefix_decoding_equals_unshared_and_uses_fewer_blocks():
    """Sharing prompt prefixes gives identical outputs to unshared decoding, in fewer slots."""
    scenario = load_preset("cache-safe")
    requests = variants(scenario, 6)
    shared = decode_together(scenario, requests, 2, share_prefix=True, device="cpu")
    alone = decode_together(scenario, requests, 2, share_prefix=False, device="cpu")
    assert shared.sharing and not alone.sharing
    assert [s.prefix_hits for s in shared.sequences] == [0, 3, 4]
    assert [s.shared_with for s in shared.sequences] == [None, "A", "A"]
    for a, b in zip(shared.sequences, alone.sequences):
        assert a.words == b.words and a.tokens == b.tokens
        assert torch.equal(a.contexts, b.contexts) and torch.equal(a.logits, b.logits)
    assert shared.waste.paged_slots < alone.waste.paged_slots
    assert shared.waste.shared > 0 == alone.waste.shared
    assert shared.waste.tokens == alone.waste.tokens


def test_reference_counts_match_the_block_tables_at_every_iteration():
    """In every snapshot a block's reference count is the number of tables that hold it."""
    scenario = load_preset("cache-safe")
    run = decode_together(scenario, variants(scenario, 5), 2, device="cpu")
    for snap in run.snapshots:
        for block, count in enumerate(snap.refcounts):
            assert count == len(snap.owners[block]) == sum(t.count(block) for t in snap.tables)
        for table, length in zip(snap.tables, snap.lengths):
            assert len(table) == -(-length // run.block_size)
    assert run.snapshots[-1].copies >= 1  # C wrote into the block it shared with A
    assert [s.label for s in run.snapshots[:3]] == ["prefill A", "prefill B", "prefill C"]


def test_sequences_interleave_in_the_pool():
    """Decoding one token per sequence per iteration interleaves their blocks in the pool."""
    scenario = load_preset("cache-safe")
    run = decode_together(scenario, variants(scenario, 9), 2, share_prefix=False, device="cpu")
    a_table = run.sequences[0].table
    assert any(later - earlier > 1 for earlier, later in zip(a_table, a_table[1:]))


def test_sharing_is_refused_when_a_head_reads_n():
    """The seed's 'last' head reads n, so prompt keys depend on the prompt length: no sharing."""
    seed = load_preset("seed")
    assert sharing_refusal(seed).startswith("Head 'last' reads n, so") and sharing_refusal(seed.cache_safe()) == ""
    two = seed.with_heads([*seed.heads, Head("also", "k.pos == n - 1")], [*range(len(seed.heads)), None])
    assert sharing_refusal(two).startswith("Heads 'last' and 'also' read n, so")
    three = two.with_heads([*two.heads, Head("too", "k.pos == n")], [*range(len(two.heads)), None])
    assert sharing_refusal(three).startswith("Heads 'last', 'also' and 'too' read n, so")
    run = decode_together(seed, variants(seed, 3), 4, share_prefix=True, device="cpu")
    assert not run.sharing and "reads n" in run.sharing_note
    assert all(s.prefix_hits == 0 for s in run.sequences)
    c = generate(seed.with_tokens(list(variants(seed, 3)[2].tokens), list(variants(seed, 3)[2].values)), 3, "kv")
    assert run.sequences[2].words == tuple(step.token for step in c.steps)


def test_waste_report_counts_slots_three_ways():
    """Contiguous buffers reserve prompt + max new tokens each; blocks waste at most a partial block
    per table; every held token is either stored or shared."""
    scenario = load_preset("cache-safe")
    requests = variants(scenario, 4)
    run = decode_together(scenario, requests, 4, max_new_tokens=32, device="cpu")
    w = run.waste
    assert w.contiguous_slots == sum(len(r.tokens) + 32 for r in requests)
    assert w.tokens == sum(len(r.tokens) + 3 for r in requests)
    assert w.contiguous_waste == w.contiguous_slots - w.tokens > 0
    assert 0 <= w.fragmentation < w.block_size * len(requests)
    assert w.stored_slots + w.shared == w.tokens
    assert w.paged_slots <= w.unshared_slots < w.contiguous_slots
    assert w.nbytes(w.paged_slots) == w.paged_slots * (4 * 64 + 1) * 4
    one = decode_together(scenario, requests, 1, share_prefix=False, device="cpu").waste
    assert one.fragmentation == 0 and one.paged_slots == one.tokens


@pytest.mark.parametrize("kwargs, message", [
    ({"block_size": 0}, "block size"),
    ({"block_size": 4, "max_new_tokens": 2}, "reserved"),
])
def test_bad_settings_are_refused(kwargs, message):
    """A block size out of range or more steps than reserved room is a ValueError with a message."""
    scenario = load_preset("cache-safe")
    with pytest.raises(ValueError, match=message):
        decode_together(scenario, variants(scenario, 3), **kwargs)


def test_too_many_sequences_are_refused():
    """More than the limit of sequences is refused."""
    scenario = load_preset("cache-safe")
    requests = [Request.of(f"s{i}", scenario, 1) for i in range(9)]
    with pytest.raises(ValueError, match="between 1 and 8"):
        decode_together(scenario, requests, 4)


def test_same_outputs_tells_runs_apart():
    """same_outputs holds for sharing vs not sharing, and fails when the requests differ."""
    scenario = load_preset("cache-safe")
    a = decode_together(scenario, variants(scenario, 3), 4, share_prefix=True, device="cpu")
    b = decode_together(scenario, variants(scenario, 3), 4, share_prefix=False, device="cpu")
    other = decode_together(scenario, variants(scenario, 3)[::-1], 4, device="cpu")
    assert same_outputs(a, b) and not same_outputs(a, other)


def test_each_block_copied_on_write_is_named_with_the_block_it_copied_while_held():
    """'your soup' shared by three forks in blocks of 4: each copy-on-write gives the writer a private
    block, and the snapshot names it with the shared block it copied (its shared tokens kept in front);
    a freed copy is forgotten (the pool hands the block out again as a fresh one)."""
    soup = load_preset("your soup").cache_safe()
    run = decode_together(soup, variants(soup, 4), 4, share_prefix=True, max_new_tokens=32)
    last = run.snapshots[-1]
    assert last.copies >= 1 and len(last.copied_from) == last.copies
    for block, source in last.copied_from:
        assert last.refcounts[block] == 1 and block != source and last.slots[block][0] == last.slots[source][0]
    pool = BlockManager(4, 2, 1, 3)
    shared = pool.allocate()
    pool.refcount[shared] += 1  # a second holder
    copy = pool.copy_on_write(shared)
    assert pool.copied_from == {copy: shared}
    pool.release(copy)
    assert pool.copied_from == {}
