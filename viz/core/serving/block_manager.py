"""The block manager: one pool of KV blocks for every sequence, and each sequence's block table.

1. **Blocks**: :class:`BlockManager` preallocates ``num_blocks`` physical blocks of ``block_size``
   token slots (keys for every head, the value, and each key's record), hands them out from a free
   list (lowest first) and counts who holds each one (reference counts).
2. **Copy on write**: a block held by several sequences is copied before one of them writes into
   it (:meth:`BlockManager.copy_on_write`), so no sequence ever sees another's tokens. This is how
   forks share partly filled blocks (parallel sampling, beam search, the Memory page's prompts).
3. **Prefix caching** (vLLM's automatic prefix caching), when ``prefix_caching`` is on: a *full*
   block is named by its tokens and the name of the block before it (:func:`block_keys`, the one
   key builder), so a name stands for the whole prefix up to that block's end. A named block whose
   last holder lets go is kept, evictable, in least-recently-freed order; a prompt that starts with
   the same full blocks takes them back (:meth:`BlockManager.cached_prefix`, then
   :meth:`PagedKVCache.adopt`). A new block comes from the free list first, then by evicting the
   oldest cached one. A partly filled block is never named: it is still being written.
4. **Block tables**: :class:`PagedKVCache` is one sequence's view: a table mapping its logical
   blocks (tokens 1…B, B+1…2B, …) to physical blocks anywhere in the pool. It keeps the engine's
   :class:`~viz.core.engine.cache.Cache` interface, so ``generate(..., make_cache=...)`` and every
   decoder use it unchanged; ``keys()`` gathers the blocks in table order.

Shaped like nano-vllm's ``engine/block_manager.py``. What this module does not do: decide who gets
blocks when (:mod:`viz.core.serving.scheduler` and :mod:`viz.core.serving.policies`) or attend (the
engine attends over the gathered keys; there is no paged attention kernel).
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from typing import Iterator, Sequence

import torch

from ..engine.cache import TokenInfo, _check_truncate, slot_nbytes

BlockKey = tuple  # (previous block's key, ((token, value), …)): a full block's name
_RECORDS = ("pos", "token", "value", "n")
_TENSORS = ("k", "v", *_RECORDS)


class OutOfBlocks(ValueError):
    """The pool has no free block left."""


def block_keys(tokens: Sequence[str], values: Sequence[float], block_size: int, count: int) -> Iterator[BlockKey]:
    """The names of the first ``count`` full blocks of a sequence: each names its tokens (with their
    values, which the toy's keys depend on) and, through the previous name, everything before."""
    key: BlockKey = ()
    for start in range(0, count * block_size, block_size):
        key = (key, tuple(zip(tokens[start:start + block_size], values[start:start + block_size])))
        yield key


class BlockManager:
    """Fixed-size physical blocks for every sequence: free list, reference counts, copy on write and,
    with ``prefix_caching``, names for full blocks that outlive their holders."""

    def __init__(self, num_blocks: int, block_size: int, num_heads: int, d_k: int, *,
                 prefix_caching: bool = False, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32):
        if num_blocks < 1 or block_size < 1:
            raise ValueError("a pool needs at least one block of at least one slot")
        self.num_blocks, self.block_size, self.num_heads, self.d_k = num_blocks, block_size, num_heads, d_k
        self.prefix_caching = prefix_caching
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
        self.copied_from: dict[int, int] = {}  # a block made by copy-on-write, while held -> the block it copied
        self.by_key: dict[BlockKey, int] = {}  # prefix caching: a full block's name -> the block
        self.key_of: dict[int, BlockKey] = {}
        self.evictable: OrderedDict[int, None] = OrderedDict()  # named, unheld, least recently freed first
        self.handed: list[int] = []  # blocks allocated since the last drain_events()
        self.returned: list[int] = []  # blocks that went back to the free list or the cache since then

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    @property
    def available(self) -> int:
        """Blocks a new holder can get: free ones and cached ones nobody holds."""
        return self.free_blocks + len(self.evictable)

    @property
    def slot_nbytes(self) -> int:
        """Bytes one token takes in a block: a key per head plus the value (as every cache counts)."""
        return slot_nbytes(self.num_heads, self.d_k, self.k.element_size())

    def allocate(self) -> int:
        """A fresh block for one holder: the lowest free one, else the least recently freed cached one."""
        if not self._free and self.evictable:
            block, _ = self.evictable.popitem(last=False)
            del self.by_key[self.key_of.pop(block)]
            heapq.heappush(self._free, block)
        if not self._free:
            raise OutOfBlocks(f"all {self.num_blocks} blocks of the pool are in use")
        block = heapq.heappop(self._free)
        self.refcount[block] = 1
        self.handed.append(block)
        return block

    def share(self, block: int) -> None:
        """One more holder for a block in use, or for a cached one nobody holds (a prefix hit)."""
        if self.refcount[block] == 0:
            assert block in self.evictable, "only a block in use or in the prefix cache can be shared"
            del self.evictable[block]
        self.refcount[block] += 1

    def release(self, block: int) -> None:
        """One holder fewer; a block nobody holds goes back to the free list, or to the cache if named."""
        assert self.refcount[block] > 0, "block released twice"
        self.refcount[block] -= 1
        if self.refcount[block] == 0:
            self.copied_from.pop(block, None)
            self.returned.append(block)
            if block in self.key_of:
                self.evictable[block] = None
            else:
                heapq.heappush(self._free, block)

    def copy_on_write(self, block: int) -> int:
        """A private copy of a shared block for the holder about to write into it."""
        new = self.allocate()
        # copy every slot: the writer keeps the shared tokens before its own, the rest is overwritten
        for name in _TENSORS:
            tensor = getattr(self, name)
            tensor[new] = tensor[block]
        self.release(block)
        self.copies += 1
        self.copied_from[new] = block
        return new

    def write(self, block: int, start: int, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Fill slots start…start+m of one block: keys (heads, m, d_k), values (m,)."""
        end = start + values.shape[0]
        self.k[block, :, start:end] = keys
        self.v[block, start:end] = values
        for name in _RECORDS:
            getattr(self, name)[block, start:end] = getattr(info, name)

    def name_full_blocks(self, table: Sequence[int], length: int, tokens: Sequence[str], values: Sequence[float],
                         named: int) -> int:
        """Name the blocks of a table holding ``length`` tokens that filled up since its first ``named``
        were named; returns how many are full now. The first block with a name keeps it."""
        full = length // self.block_size
        if self.prefix_caching and full > named:
            for index, key in enumerate(block_keys(tokens, values, self.block_size, full)):
                block = table[index]
                if index >= named and key not in self.by_key and block not in self.key_of:
                    self.by_key[key] = block
                    self.key_of[block] = key
        return max(full, named)

    def cached_prefix(self, tokens: Sequence[str], values: Sequence[float]) -> list[int]:
        """The cached full blocks a sequence's tokens start with, never the block of the last token
        (its query must be computed to predict). Looks up only: :meth:`PagedKVCache.adopt` takes them."""
        if not self.prefix_caching:
            return []
        blocks = []
        for key in block_keys(tokens, values, self.block_size, (len(tokens) - 1) // self.block_size):
            block = self.by_key.get(key)
            if block is None:
                break
            blocks.append(block)
        return blocks

    def read(self, blocks: Sequence[int]) -> dict[str, torch.Tensor]:
        """Copies of what ``blocks`` hold (a sequence swapped out to other memory)."""
        index = torch.tensor(list(blocks), dtype=torch.int64, device=self.k.device)
        return {name: getattr(self, name)[index].clone() for name in _TENSORS}

    def restore(self, blocks: Sequence[int], saved: dict[str, torch.Tensor]) -> None:
        """Write what :meth:`read` copied into ``blocks`` (swapped back in)."""
        index = torch.tensor(list(blocks), dtype=torch.int64, device=self.k.device)
        for name in _TENSORS:
            getattr(self, name)[index] = saved[name]

    def drain_events(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Blocks handed out and returned since the last call."""
        events = tuple(self.handed), tuple(self.returned)
        self.handed, self.returned = [], []
        return events


class PagedKVCache:
    """One sequence's KV cache as a block table into a shared :class:`BlockManager`.

    Same interface as :class:`~viz.core.engine.cache.KVCache` (``append``, ``keys``, ``values``,
    ``info``, ``len``, ``nbytes``). Appending positions the cache already holds (a prompt whose
    prefix was shared by :meth:`fork`) checks that they match what the shared blocks hold and writes
    only the rest.
    """

    def __init__(self, pool: BlockManager):
        self.pool = pool
        self.table: list[int] = []  # logical block i -> physical block
        self.length = 0
        self.num_heads, self.d_k = pool.num_heads, pool.d_k

    def adopt(self, blocks: Sequence[int], length: int) -> "PagedKVCache":
        """Take shared blocks as this empty cache's first ``length`` tokens (each block's reference
        count + 1): a fork's prefix, or full blocks found in the prefix cache."""
        assert not self.table and not self.length, "only an empty cache adopts blocks"
        assert len(blocks) == math.ceil(length / self.pool.block_size)
        for block in blocks:
            self.pool.share(block)
        self.table, self.length = list(blocks), length
        return self

    def fork(self, tokens: int | None = None) -> "PagedKVCache":
        """A new sequence that shares the blocks holding this one's first ``tokens`` tokens."""
        tokens = self.length if tokens is None else tokens
        assert 0 <= tokens <= self.length
        # the last shared block may hold more of this sequence's tokens; the fork's length hides them,
        # and its first write there copies the block (copy-on-write) before overwriting them
        return PagedKVCache(self.pool).adopt(self.table[: math.ceil(tokens / self.pool.block_size)], tokens)

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

    def swap_out(self) -> dict[str, torch.Tensor]:
        """Copy every block out and give the blocks back; the tokens stay counted (``len``) but cannot be
        read until :meth:`swap_in`. Returns the copies."""
        saved = self.pool.read(self.table)
        for block in self.table:
            self.pool.release(block)
        self.table = []
        return saved

    def swap_in(self, saved: dict[str, torch.Tensor]) -> None:
        """Fresh blocks for what :meth:`swap_out` copied out, written back."""
        assert not self.table, "only a swapped-out cache swaps in"
        self.table = [self.pool.allocate() for _ in range(saved["v"].shape[0])]
        self.pool.restore(self.table, saved)

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
