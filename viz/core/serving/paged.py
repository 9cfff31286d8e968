"""The Memory page's paged lesson: a few sequences decoded together on one block pool.

A configuration of the serving engine (:class:`viz.core.serving.scheduler.Scheduler` with the
:class:`~viz.core.serving.policies.Together` policy): the same :class:`~.sequence.Sequence` and
:class:`~.block_manager.BlockManager` as the Serving page, with the other sharing system.

1. **Admission**: :func:`decode_together` admits every request in turn (a prefill each). With sharing,
   a request forks the earlier sequence with which its prompt has the longest common prefix: it
   shares every block holding that prefix, even a partly filled last one, and the first write into a
   shared block copies it (copy on write, as vLLM does for parallel sampling and beam search;
   :data:`~.workload.Sharing.COPY_ON_WRITE` says so in the page's words).
2. **Decoding**: one token per sequence per iteration, so their blocks interleave in the pool; the
   pool is snapshotted after every iteration (:class:`PoolSnapshot`).
3. **Waste**: :class:`WasteReport` compares reserving a contiguous max-length buffer per request
   with what the blocks hold.

What this module does not do: schedule under memory pressure (the pool is sized so every request
fits; running out raises :class:`~.block_manager.OutOfBlocks`), or save the shared prefix's prefill
compute (a forked prompt is fed whole and the cache checks the shared part: only memory is saved).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..engine.model import ToyModel
from ..engine.scenario import MAX_DECODE_STEPS, MAX_TOKENS, Scenario
from .block_manager import BlockManager
from .policies import Together
from .scheduler import Executed, Meter, Scheduler
from .sequence import Request, RequestOutcome, Sequence, SequenceStatus
from .workload import ServingConfig, Sharing

MAX_BLOCK_SIZE = 64
MAX_SEQUENCES = 8


def variants(scenario: Scenario, steps: int) -> list[Request]:
    """The scenario's prompt plus two that share a prefix with it: one whose last token is the
    first vocabulary word instead, and one that continues it with the last vocabulary word (or, for
    a prompt already at the length limit, ends with that word in place of its last token, so that
    every prompt is one a visitor could type)."""
    first, last = scenario.vocab[0], scenario.vocab[-1]
    if len(scenario.tokens) > 1:
        swapped = (scenario.tokens[:-1] + (first.token,), scenario.values[:-1] + (first.value,))
    else:
        swapped = (scenario.tokens + (first.token,), scenario.values + (first.value,))
    kept = len(scenario.tokens) - (len(scenario.tokens) >= MAX_TOKENS)
    prompts = [(scenario.tokens, scenario.values), swapped,
               (scenario.tokens[:kept] + (last.token,), scenario.values[:kept] + (last.value,))]
    return [Request(name=name, arrival=0, tokens=tokens, values=values, max_new_tokens=steps)
            for name, (tokens, values) in zip("ABC", prompts)]


@dataclass(frozen=True)
class PoolSnapshot:
    """The pool after one scheduler iteration, for drawing."""

    label: str  # e.g. "prefill B", "decode 3"
    tables: tuple[tuple[int, ...], ...]  # per sequence (request order): its physical blocks
    lengths: tuple[int, ...]  # per sequence: tokens held
    refcounts: tuple[int, ...]  # per physical block
    owners: tuple[tuple[int, ...], ...]  # per physical block: the sequences whose table holds it
    slots: tuple[tuple[str, ...], ...]  # per physical block: the token in each slot ("" if empty)
    copies: int  # copy-on-write events so far
    copied_from: tuple[tuple[int, int], ...] = ()  # (block, the block it copied) for each copy still held


@dataclass(frozen=True)
class WasteReport:
    """Token slots (and bytes) three ways: contiguous max-length buffers, blocks, shared blocks."""

    block_size: int
    slot_nbytes: int
    tokens: int  # tokens the sequences hold, each sequence counted in full
    contiguous_slots: int  # reserved: each request's prompt + the most new tokens it may make
    unshared_slots: int  # whole blocks each sequence would need without sharing
    paged_slots: int  # whole blocks actually in use (shared blocks once)
    stored_slots: int  # filled slots in those blocks (shared ones once)

    @property
    def contiguous_waste(self) -> int:
        """Reserved but never filled."""
        return self.contiguous_slots - self.tokens

    @property
    def fragmentation(self) -> int:
        """Empty slots at the end of partly filled blocks."""
        return self.paged_slots - self.stored_slots

    @property
    def unshared_fragmentation(self) -> int:
        """The same without sharing: each sequence's own last block."""
        return self.unshared_slots - self.tokens

    @property
    def shared(self) -> int:
        """Token slots that exist once but serve several sequences."""
        return self.tokens - self.stored_slots

    @property
    def paged_blocks(self) -> int:
        """Blocks in use (shared blocks once)."""
        return self.paged_slots // self.block_size

    def nbytes(self, slots: int) -> int:
        return slots * self.slot_nbytes


@dataclass(frozen=True)
class PagedRun:
    """Several sequences decoded together on one paged pool."""

    block_size: int
    num_blocks: int
    max_new_tokens: int
    sequences: list[RequestOutcome]  # per request: its words, its prompt prefix shared, its final table
    snapshots: list[PoolSnapshot]
    waste: WasteReport
    sharing: bool  # prefix sharing was on
    sharing_note: str  # why it is off, when it was asked for and refused
    system: Sharing = Sharing.COPY_ON_WRITE  # the sharing system this view shows


def same_outputs(a: PagedRun, b: PagedRun) -> bool:
    """Two runs of the same requests produced identical words, contexts and logits."""
    return len(a.sequences) == len(b.sequences) and all(
        x.words == y.words and torch.equal(x.contexts, y.contexts) and torch.equal(x.logits, y.logits)
        for x, y in zip(a.sequences, b.sequences))


def sharing_refusal(scenario: Scenario) -> str:
    """Why prompts with a common prefix cannot share blocks, or "" when they can."""
    readers = scenario.n_readers()
    if not readers:
        return ""
    return (f"{readers}, so a prompt key depends on how long the whole prompt is: the "
            "same prefix inside a longer prompt gets different keys, and sharing its blocks would "
            "be wrong. Sharing needs the cache-safe form of the rule.")


def _snapshot(label: str, pool: BlockManager, seqs: list[Sequence]) -> PoolSnapshot:
    """The pool after an iteration, over the sequences admitted so far."""
    size = pool.block_size
    slots = [[""] * size for _ in range(pool.num_blocks)]
    owners: list[list[int]] = [[] for _ in range(pool.num_blocks)]
    for seq in seqs:
        cache = seq.cache
        for block in cache.table:
            owners[block].append(seq.index)
        # token j of a sequence lives in slot j % B of its logical block j // B
        for j in range(len(cache)):
            slots[cache.table[j // size]][j % size] = seq.fed_tokens[j]
    return PoolSnapshot(label=label, tables=tuple(tuple(s.cache.table) for s in seqs),
                        lengths=tuple(len(s.cache) for s in seqs), refcounts=tuple(pool.refcount),
                        owners=tuple(tuple(o) for o in owners), slots=tuple(tuple(s) for s in slots),
                        copies=pool.copies, copied_from=tuple(sorted(pool.copied_from.items())))


def _waste(pool: BlockManager, seqs: list[Sequence], max_new_tokens: int) -> WasteReport:
    size = pool.block_size
    filled = [0] * pool.num_blocks  # slots of each block that some sequence has written
    for seq in seqs:
        cache = seq.cache
        for logical, block in enumerate(cache.table):  # a sharer may see fewer slots of a block than its owner
            filled[block] = max(filled[block], min(size, len(cache) - logical * size))
    lengths = [len(seq.cache) for seq in seqs]
    in_use = [b for b in range(pool.num_blocks) if pool.refcount[b] > 0]
    return WasteReport(
        block_size=size, slot_nbytes=pool.slot_nbytes, tokens=sum(lengths),
        contiguous_slots=sum(len(seq.request.tokens) + max_new_tokens for seq in seqs),
        unshared_slots=sum(math.ceil(n / size) * size for n in lengths),
        paged_slots=len(in_use) * size, stored_slots=sum(filled[b] for b in in_use))


def decode_together(scenario: Scenario, requests: list[Request], block_size: int, *,
                    share_prefix: bool = True, max_new_tokens: int | None = None,
                    device: str | torch.device | None = None, dtype: torch.dtype = torch.float32) -> PagedRun:
    """Serve ``requests`` (prompts on one scenario's heads and vocabulary) on one block pool.

    The pool holds as many blocks as contiguous buffers of prompt + ``max_new_tokens`` (default:
    the most steps asked for) would take, so the comparison is at equal memory.
    """
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block size must be between 1 and {MAX_BLOCK_SIZE} tokens, got {block_size}")
    if not 1 <= len(requests) <= MAX_SEQUENCES:
        raise ValueError(f"serve between 1 and {MAX_SEQUENCES} sequences, got {len(requests)}")
    most = max(r.max_new_tokens for r in requests)
    max_new_tokens = most if max_new_tokens is None else max_new_tokens
    if not 0 <= most <= max_new_tokens <= MAX_DECODE_STEPS:
        raise ValueError(f"steps must be between 0 and the reserved new tokens ({max_new_tokens}), "
                         f"at most {MAX_DECODE_STEPS}")
    note = sharing_refusal(scenario) if share_prefix else ""
    sharing = share_prefix and not note
    model = ToyModel(scenario, device=device, dtype=dtype)  # one model: token ids agree across sequences
    num_blocks = sum(math.ceil((len(r.tokens) + max_new_tokens) / block_size) for r in requests)
    pool = BlockManager(num_blocks, block_size, model.num_heads, model.d_k, device=model.device, dtype=model.dtype)
    config = ServingConfig(num_blocks=num_blocks, block_size=block_size, max_batch=len(requests), overhead=0)
    engine = Scheduler(scenario, tuple(requests), config, policy=lambda e: Together(e, sharing), model=model,
                       pool=pool, meter=Meter(scenario, math.inf, paged=True))
    snapshots: list[PoolSnapshot] = []

    def observe(engine: Scheduler, executed: Executed) -> None:
        admitted = [s for s in engine.sequences if s.status is not SequenceStatus.NOT_ARRIVED]
        snapshots.append(_snapshot(executed.plan.label, pool, admitted))

    engine.run(observe)
    return PagedRun(block_size=block_size, num_blocks=num_blocks, max_new_tokens=max_new_tokens,
                    sequences=[s.outcome() for s in engine.sequences], snapshots=snapshots,
                    waste=_waste(pool, engine.sequences, max_new_tokens), sharing=sharing, sharing_note=note)
