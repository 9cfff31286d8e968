"""A block pool that remembers full blocks by name: automatic prefix caching, as vLLM does it.

A full block is named by its tokens (with their values, which the toy's keys depend on) and the
name of the block before it, so a name stands for the whole prefix up to that block's end. Named
blocks whose last holder lets go are kept, evictable, in least-recently-freed order; a prompt that
starts with the same full blocks takes them back (:meth:`CachingPool.take`) instead of computing
their keys and values. A new block comes from the free list first, then by evicting the oldest
cached one. Only full blocks are ever named: a partly filled block is still being written.

What this module does not do: decide which prompts look up which blocks (viz.core.serving.scheduler).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict

from .paged import BlockPool

BlockKey = tuple  # (previous block's key, ((token, value), …)): a full block's name


class CachingPool(BlockPool):
    """A block pool that remembers full blocks by name (prefix caching).

    A named block whose last holder lets go is not returned to the free list but kept, evictable,
    in least-recently-freed order; a prompt that names it takes it back. A new block comes from the
    free list first, then by evicting the oldest cached one.
    """

    def __init__(self, *args, caching: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.caching = caching
        self.by_key: dict[BlockKey, int] = {}
        self.key_of: dict[int, BlockKey] = {}
        self.evictable: OrderedDict[int, None] = OrderedDict()
        self.handed: list[int] = []  # blocks allocated since the last iteration was recorded
        self.returned: list[int] = []  # blocks that went back to the free list or the cache

    @property
    def available(self) -> int:
        return self.free_blocks + len(self.evictable)

    def allocate(self) -> int:
        if not self.free_blocks and self.evictable:
            block, _ = self.evictable.popitem(last=False)  # the least recently freed cached block
            del self.by_key[self.key_of.pop(block)]
            heapq.heappush(self._free, block)
        block = super().allocate()
        self.handed.append(block)
        return block

    def release(self, block: int) -> None:
        assert self.refcount[block] > 0, "block released twice"
        self.refcount[block] -= 1
        if self.refcount[block] == 0:
            self.returned.append(block)
            if block in self.key_of:
                self.evictable[block] = None
            else:
                heapq.heappush(self._free, block)

    def take(self, block: int) -> None:
        """Hand a cached block to one more holder (a prefix hit)."""
        if self.refcount[block] == 0:
            del self.evictable[block]
        self.refcount[block] += 1

    def name(self, block: int, key: BlockKey) -> None:
        """Remember a block that just became full; the first block with a name keeps it."""
        if self.caching and key not in self.by_key and block not in self.key_of:
            self.by_key[key] = block
            self.key_of[block] = key
