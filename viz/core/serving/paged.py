"""A paged KV cache for the toy, as vLLM's PagedAttention manages memory, and several sequences
decoding together on one pool of blocks.

1. **Blocks**: a :class:`BlockPool` preallocates ``num_blocks`` physical blocks of ``block_size``
   token slots each (keys for every head, the value, and each key's record). Blocks are handed out
   from a free list and carry a reference count.
2. **Block tables**: a :class:`PagedKVCache` is one sequence's view: a table mapping its logical
   blocks (tokens 1…B, B+1…2B, …) to physical blocks anywhere in the pool. It has
   the :class:`~viz.core.engine.cache.Cache` interface, so ``generate(..., make_cache=...)`` and the
   engine's kv decoder use it unchanged; ``keys()`` gathers the blocks in table order.
3. **Sharing**: :meth:`PagedKVCache.fork` gives a new sequence the blocks of a common prefix
   (reference count + 1). Writing into a block that someone else also holds copies it first
   (copy-on-write), so no sequence ever sees another's tokens.
4. **Scheduling**: :func:`decode_together` admits every request (prefill, sharing the longest
   common prompt prefix with an earlier one), then decodes one token per sequence per iteration,
   so their blocks interleave in the pool, and snapshots the pool after every iteration.
5. **Waste**: :class:`WasteReport` compares reserving a contiguous max-length buffer per request
   with what the blocks hold.

What this module does not do: schedule under memory pressure (preempting or swapping a sequence
when the pool runs out raises :class:`OutOfBlocks` instead), save the shared prefix's prefill
compute (the engine's prefill is one pass over the prompt, so only memory is saved here), or
implement a paged attention kernel: attention is the engine's, over the gathered keys.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import torch

from ..engine.cache import TokenInfo, _check_truncate
from ..engine.model import Generation, ToyModel
from ..engine.scenario import MAX_DECODE_STEPS, MAX_TOKENS, Scenario

MAX_BLOCK_SIZE = 64
MAX_SEQUENCES = 8
_RECORDS = ("pos", "token", "value", "n")


class OutOfBlocks(ValueError):
    """The pool has no free block left."""


class BlockPool:
    """Fixed-size physical blocks for every sequence's keys, values and key records."""

    def __init__(self, num_blocks: int, block_size: int, num_heads: int, d_k: int, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        if num_blocks < 1 or block_size < 1:
            raise ValueError("a pool needs at least one block of at least one slot")
        self.num_blocks, self.block_size, self.num_heads, self.d_k = num_blocks, block_size, num_heads, d_k
        device = torch.device(device)
        self.k = torch.zeros(num_blocks, num_heads, block_size, d_k,
                             device=device, dtype=dtype)  # (blocks, heads, B, d_k)
        self.v = torch.zeros(num_blocks, block_size, device=device, dtype=dtype)  # (blocks, B)
        self.pos = torch.zeros(num_blocks, block_size, device=device, dtype=torch.int64)
        self.token = torch.zeros(num_blocks, block_size, device=device, dtype=torch.int64)
        self.value = torch.zeros(num_blocks, block_size, device=device, dtype=torch.float64)
        self.n = torch.zeros(num_blocks, block_size, device=device, dtype=torch.int64)
        self.refcount = [0] * num_blocks
        self._free = list(range(num_blocks))  # a heap: the lowest free block is handed out first
        self.copies = 0  # copy-on-write events

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    @property
    def slot_nbytes(self) -> int:
        """Bytes one token takes in a block: a key per head plus the value (as KVCache counts)."""
        return (self.num_heads * self.d_k + 1) * self.k.element_size()

    def allocate(self) -> int:
        if not self._free:
            raise OutOfBlocks(f"all {self.num_blocks} blocks of the pool are in use")
        block = heapq.heappop(self._free)
        self.refcount[block] = 1
        return block

    def share(self, block: int) -> None:
        assert self.refcount[block] > 0, "only a block in use can be shared"
        self.refcount[block] += 1

    def release(self, block: int) -> None:
        assert self.refcount[block] > 0, "block released twice"
        self.refcount[block] -= 1
        if self.refcount[block] == 0:
            heapq.heappush(self._free, block)

    def copy_on_write(self, block: int) -> int:
        """A private copy of a shared block for the sequence about to write into it."""
        new = self.allocate()
        # copy every slot: the writer keeps the shared tokens before its own, the rest is overwritten
        for name in ("k", "v", *_RECORDS):
            tensor = getattr(self, name)
            tensor[new] = tensor[block]
        self.release(block)
        self.copies += 1
        return new

    def write(self, block: int, start: int, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Fill slots start…start+m of one block: keys (heads, m, d_k), values (m,)."""
        end = start + values.shape[0]
        self.k[block, :, start:end] = keys
        self.v[block, start:end] = values
        for name in _RECORDS:
            getattr(self, name)[block, start:end] = getattr(info, name)


class PagedKVCache:
    """One sequence's KV cache as a block table into a shared :class:`BlockPool`.

    Same interface as :class:`~viz.core.engine.model.KVCache` (``append``, ``keys``, ``values``, ``info``,
    ``len``, ``nbytes``). Appending positions the cache already holds (a prompt whose prefix was
    shared by :meth:`fork`) checks that they match what the shared blocks hold and writes only the rest.
    """

    def __init__(self, pool: BlockPool, table: list[int] | None = None, length: int = 0):
        self.pool = pool
        self.table: list[int] = list(table or [])  # logical block i -> physical block
        self.length = length
        self.num_heads, self.d_k = pool.num_heads, pool.d_k

    def fork(self, tokens: int | None = None) -> "PagedKVCache":
        """A new sequence that shares the blocks holding this one's first ``tokens`` tokens."""
        tokens = self.length if tokens is None else tokens
        assert 0 <= tokens <= self.length
        # the last shared block may hold more of this sequence's tokens; the fork's length hides them,
        # and its first write there copies the block (copy-on-write) before overwriting them
        shared = self.table[: math.ceil(tokens / self.pool.block_size)]
        for block in shared:
            self.pool.share(block)
        return PagedKVCache(self.pool, shared, tokens)

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Write m tokens: keys (heads, m, d_k), values (m,), their records; positions run on."""
        m = values.shape[0]
        assert keys.shape == (self.num_heads, m, self.d_k), keys.shape
        first = int(info.pos[0]) if m else self.length + 1
        held = self.length - first + 1  # leading tokens this cache already holds (a shared prefix)
        if held < 0:
            raise ValueError(f"position {first} would leave a gap after the {self.length} tokens held")
        if held > 0:
            if first != 1 or held > m:
                raise ValueError(f"positions {first}… overlap the cache in a way a shared prefix cannot")
            self._check_prefix(keys[:, :held], values[:held], info.slice(0, held))
        i = held
        size = self.pool.block_size
        while i < m:  # fill the last block, then a fresh one, a block's worth of tokens at a time
            slot = self.length % size  # the next free slot of the last block (0: it is full)
            if slot == 0:
                self.table.append(self.pool.allocate())
            elif self.pool.refcount[self.table[-1]] > 1:  # someone else reads this block too
                self.table[-1] = self.pool.copy_on_write(self.table[-1])
            take = min(size - slot, m - i)
            self.pool.write(self.table[-1], slot, keys[:, i:i + take], values[i:i + take],
                            info.slice(i, i + take))
            self.length += take
            i += take

    def _check_prefix(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        held = self.info()
        same = (torch.equal(self.keys(), keys) and torch.equal(self.values(), values)
                and all(torch.equal(getattr(held, name), getattr(info, name)) for name in ("pos", "token", "value")))
        if not same:
            raise ValueError("the shared prefix holds different keys or values than this prompt")

    def _gather(self, tensor: torch.Tensor) -> torch.Tensor:
        index = torch.tensor(self.table, dtype=torch.int64, device=tensor.device)
        return tensor[index].reshape(-1)[: self.length]  # (table, B) -> (len,) in logical order

    def keys(self) -> torch.Tensor:
        index = torch.tensor(self.table, dtype=torch.int64, device=self.pool.k.device)
        blocks = self.pool.k[index]  # (table, heads, B, d_k)
        slots = len(self.table) * self.pool.block_size
        return blocks.transpose(0, 1).reshape(self.num_heads, slots, self.d_k)[:, : self.length]  # (heads, len, d_k)

    def values(self) -> torch.Tensor:
        return self._gather(self.pool.v)  # (len,)

    def info(self) -> TokenInfo:
        return TokenInfo(*(self._gather(getattr(self.pool, name)) for name in _RECORDS))

    def truncate(self, length: int) -> None:
        """Forget the tokens after the first ``length``; blocks left empty go back to the pool."""
        _check_truncate(length, self.length)
        keep = math.ceil(length / self.pool.block_size)
        for block in self.table[keep:]:
            self.pool.release(block)
        del self.table[keep:]
        self.length = length

    def __len__(self) -> int:
        return self.length

    @property
    def nbytes(self) -> int:
        """Bytes of the tokens this sequence holds (shared slots counted for each holder)."""
        return self.length * self.pool.slot_nbytes

    @property
    def allocated_nbytes(self) -> int:
        """Bytes of the blocks its table points to, including the unfilled end of the last one."""
        return len(self.table) * self.pool.block_size * self.pool.slot_nbytes


# -- several sequences on one pool -----------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """One sequence to serve: its prompt (tokens and values) and how many predictions to make."""

    name: str
    tokens: tuple[str, ...]
    values: tuple[float, ...]
    steps: int

    @classmethod
    def of(cls, name: str, scenario: Scenario, steps: int) -> "Request":
        return cls(name, scenario.tokens, scenario.values, steps)


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
    return [Request("A", scenario.tokens, scenario.values, steps),
            Request("B", *swapped, steps),
            Request("C", scenario.tokens[:kept] + (last.token,), scenario.values[:kept] + (last.value,), steps)]


@dataclass(frozen=True)
class SequenceRun:
    """What one sequence produced when decoded on the shared pool."""

    name: str
    tokens: tuple[str, ...]  # prompt, then every generated token fed back
    prompt_length: int
    shared_prefix: int  # prompt tokens whose blocks came from an earlier sequence
    shared_with: str | None
    contexts: torch.Tensor  # (steps, heads) the context behind each prediction
    logits: torch.Tensor  # (steps, vocab)
    chosen: tuple[str, ...]  # the word chosen at each prediction
    table: tuple[int, ...]  # the final block table


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

    def nbytes(self, slots: int) -> int:
        return slots * self.slot_nbytes


@dataclass(frozen=True)
class PagedRun:
    """Several sequences decoded together on one paged pool."""

    block_size: int
    num_blocks: int
    max_new_tokens: int
    sequences: list[SequenceRun]
    snapshots: list[PoolSnapshot]
    waste: WasteReport
    sharing: bool  # prefix sharing was on
    sharing_note: str  # why it is off, when it was asked for and refused


def same_outputs(a: PagedRun, b: PagedRun) -> bool:
    """Two runs of the same requests produced identical words, contexts and logits."""
    return len(a.sequences) == len(b.sequences) and all(
        x.chosen == y.chosen and torch.equal(x.contexts, y.contexts) and torch.equal(x.logits, y.logits)
        for x, y in zip(a.sequences, b.sequences))


def sharing_refusal(scenario: Scenario) -> str:
    """Why prompts with a common prefix cannot share blocks, or "" when they can."""
    readers = scenario.n_readers()
    if not readers:
        return ""
    return (f"{readers}, so a prompt key depends on how long the whole prompt is: the "
            "same prefix inside a longer prompt gets different keys, and sharing its blocks would "
            "be wrong. Sharing needs the cache-safe form of the rule.")


class _Sequence:
    """A request in flight: the engine's one decode loop over a paged cache."""

    def __init__(self, index: int, request: Request, model: ToyModel, cache: PagedKVCache,
                 shared: int, shared_with: str | None, seed: int):
        self.index, self.request = index, request
        self.run = Generation(model.scenario, "kv", model=model, cache=cache, seed=seed)
        self.shared, self.shared_with = shared, shared_with

    @property
    def decoder(self):
        return self.run.decoder

    @property
    def pending(self) -> bool:
        return len(self.run.steps) < self.request.steps

    def result(self) -> SequenceRun:
        model, steps = self.run.model, self.run.steps
        return SequenceRun(
            self.request.name, tuple(self.decoder.tokens), len(self.request.tokens), self.shared,
            self.shared_with,
            torch.stack([s.context for s in steps]) if steps else torch.zeros(0, model.num_heads),
            torch.stack([s.logits for s in steps]) if steps else torch.zeros(0, len(model.scenario.vocab)),
            tuple(s.token for s in steps), tuple(self.decoder.cache.table))


def _common_prefix(a: Request, b_tokens: list[str], b_values: list[float]) -> int:
    """Leading tokens two prompts share, token and value alike (the toy's key depends on both)."""
    n = 0
    for ta, va, tb, vb in zip(a.tokens, a.values, b_tokens, b_values):
        if (ta, va) != (tb, vb):
            break
        n += 1
    return n


def _snapshot(label: str, pool: BlockPool, seqs: list[_Sequence]) -> PoolSnapshot:
    size = pool.block_size
    slots = [[""] * size for _ in range(pool.num_blocks)]
    owners: list[list[int]] = [[] for _ in range(pool.num_blocks)]
    for seq in seqs:
        cache = seq.decoder.cache
        for block in cache.table:
            owners[block].append(seq.index)
        # token j of a sequence lives in slot j % B of its logical block j // B
        for j in range(len(cache)):
            slots[cache.table[j // size]][j % size] = seq.decoder.tokens[j]
    return PoolSnapshot(label, tuple(tuple(s.decoder.cache.table) for s in seqs),
                        tuple(len(s.decoder.cache) for s in seqs), tuple(pool.refcount),
                        tuple(tuple(o) for o in owners), tuple(tuple(s) for s in slots), pool.copies)


def _waste(pool: BlockPool, seqs: list[_Sequence], max_new_tokens: int) -> WasteReport:
    size = pool.block_size
    filled = [0] * pool.num_blocks  # slots of each block that some sequence has written
    for seq in seqs:
        cache = seq.decoder.cache
        for logical, block in enumerate(cache.table):  # a sharer may see fewer slots of a block than its owner
            filled[block] = max(filled[block], min(size, len(cache) - logical * size))
    lengths = [len(seq.decoder.cache) for seq in seqs]
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
    most = max(r.steps for r in requests)
    max_new_tokens = most if max_new_tokens is None else max_new_tokens
    if not 0 <= most <= max_new_tokens <= MAX_DECODE_STEPS:
        raise ValueError(f"steps must be between 0 and the reserved new tokens ({max_new_tokens}), "
                         f"at most {MAX_DECODE_STEPS}")
    note = sharing_refusal(scenario) if share_prefix else ""
    sharing = share_prefix and not note
    model = ToyModel(scenario, device=device, dtype=dtype)  # one model: token ids agree across sequences
    num_blocks = sum(math.ceil((len(r.tokens) + max_new_tokens) / block_size) for r in requests)
    pool = BlockPool(num_blocks, block_size, model.num_heads, model.d_k, device=model.device, dtype=model.dtype)
    seqs: list[_Sequence] = []
    snapshots: list[PoolSnapshot] = []
    for index, request in enumerate(requests):  # admission: prefill, sharing a prompt prefix
        parent, shared = None, 0
        for seq in seqs if sharing else []:
            common = _common_prefix(request, seq.decoder.tokens, seq.decoder.values)
            if common > shared:
                parent, shared = seq, common
        cache = parent.decoder.cache.fork(shared) if parent else PagedKVCache(pool)
        # prefill appends the whole prompt; the paged cache checks and skips the shared part
        seq = _Sequence(index, request, model, cache, shared, parent.request.name if parent else None,
                        scenario.sampling.seed)
        seq.run.prefill(list(request.tokens), list(request.values), predict=seq.pending)
        seqs.append(seq)
        snapshots.append(_snapshot(f"prefill {request.name}", pool, seqs))
    iteration = 0
    # continuous batching in miniature: each iteration decodes one token of every unfinished sequence
    while any(seq.pending for seq in seqs):  # one token per unfinished sequence per iteration
        iteration += 1
        for seq in seqs:
            if seq.pending:
                seq.run.step()
        snapshots.append(_snapshot(f"decode {iteration}", pool, seqs))
    return PagedRun(block_size, num_blocks, max_new_tokens, [seq.result() for seq in seqs], snapshots,
                    _waste(pool, seqs, max_new_tokens), sharing, note)
