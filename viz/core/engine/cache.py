"""What a KV cache holds, the one interface every cache keeps, and the two plain caches.

Every key is encoded from a record of its token (:class:`TokenInfo`: position, token id, value and
the sequence length when it was encoded). A cache keeps, per token, one key row per head, one value
and that record. The engine's decoders talk to a cache only through :class:`Cache`; the caches that
satisfy it are:

* :class:`KVCache` here: preallocated buffers written in place, grown by doubling (O(1) amortised).
* :class:`CatCache` here: the naive cache that concatenates a new copy on every append (O(n) bytes
  moved per token), kept as a teaching object and a benchmark baseline.
* :class:`viz.core.serving.block_manager.PagedKVCache`: blocks of a shared pool behind a block table.
* :class:`viz.core.serving.compress.EvictingCache` and :class:`viz.core.serving.compress.QuantizedCache`.

What this module does not do: encode keys or attend (see :mod:`viz.core.engine.model`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple, Protocol, Sequence, runtime_checkable

import torch


class Side(NamedTuple):
    """The query or key side of a rule, shaped to broadcast: (m, 1) for queries, (1, len) for keys."""

    pos: torch.Tensor
    token: torch.Tensor
    value: torch.Tensor


@dataclass(frozen=True)
class TokenInfo:
    """What a rule can read about a run of tokens: the record each key is encoded from."""

    pos: torch.Tensor  # (m,) int64, 1-based position
    token: torch.Tensor  # (m,) int64 token id (see ToyModel.intern)
    value: torch.Tensor  # (m,) float64, the value exactly as the scenario gives it
    n: torch.Tensor  # (m,) int64, sequence length at the moment this key was encoded

    def __len__(self) -> int:
        return self.pos.shape[0]

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    def slice(self, start: int | None, end: int | None = None) -> "TokenInfo":
        """Records start…end (Python slice bounds, negatives allowed)."""
        return TokenInfo(*(t[start:end] for t in self.tensors()))

    def index(self, index: torch.Tensor) -> "TokenInfo":
        """The records at ``index`` (a long tensor), in that order."""
        return TokenInfo(*(t[index] for t in self.tensors()))

    def to(self, device: torch.device | str) -> "TokenInfo":
        return TokenInfo(*(t.to(device) for t in self.tensors()))

    @staticmethod
    def cat(parts: Sequence["TokenInfo"]) -> "TokenInfo":
        return TokenInfo(*(torch.cat(column) for column in zip(*(p.tensors() for p in parts))))

    @staticmethod
    def empty(device: torch.device | str = "cpu") -> "TokenInfo":
        none = torch.zeros(0, dtype=torch.int64, device=device)
        return TokenInfo(none, none, none.to(torch.float64), none)

    def as_queries(self) -> Side:
        return Side(self.pos[:, None], self.token[:, None], self.value[:, None])

    def as_keys(self) -> Side:
        return Side(self.pos[None, :], self.token[None, :], self.value[None, :])


@runtime_checkable
class Cache(Protocol):
    """The interface every KV cache keeps; the engine's decoders use nothing else.

    ``append`` writes m new tokens; ``keys``/``values``/``info`` read back every token held, in
    position order; ``nbytes`` counts the bytes of K and V held (records excluded). ``truncate``
    forgets every token after the first ``length`` (speculative decoding rolls back with it).
    """

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """keys (heads, m, d_k), values (m,), info of m tokens."""

    def keys(self) -> torch.Tensor:
        """(heads, len, d_k)"""

    def values(self) -> torch.Tensor:
        """(len,)"""

    def info(self) -> TokenInfo: ...

    def truncate(self, length: int) -> None: ...

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int: ...


def slot_nbytes(num_heads: int, d_k: int, element_size: int) -> int:
    """Bytes one token takes in a cache: a key row per head plus its value (records not counted).
    The one place this formula is written: every cache, pool and server counts with it."""
    return (num_heads * d_k + 1) * element_size


def _check_truncate(length: int, held: int) -> None:
    if not 0 <= length <= held:
        raise ValueError(f"cannot keep {length} of the {held} tokens held")


class KVCache:
    """The KV cache: per-head keys and shared values for every token encoded so far.

    Buffers are preallocated and written in place; when they are full they grow by doubling, so
    appending a token costs O(1) amortised and the cache is reallocated only O(log n) times
    (``growth_events``). Alongside K and V it keeps each key's record (position, token, value, the
    sequence length when it was encoded), which rules that compare query and key read.
    """

    _BUFFERS = ("_k", "_v", "_pos", "_token", "_value", "_n")

    def __init__(self, num_heads: int, d_k: int, capacity: int = 16, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        self.num_heads, self.d_k, self.dtype = num_heads, d_k, dtype
        self.device = torch.device(device)
        self.length = 0
        self.growth_events = 0
        self._k = torch.zeros(num_heads, capacity, d_k, device=self.device, dtype=dtype)  # (heads, cap, d_k)
        self._v = torch.zeros(capacity, device=self.device, dtype=dtype)  # (cap,)
        self._pos = torch.zeros(capacity, device=self.device, dtype=torch.int64)
        self._token = torch.zeros(capacity, device=self.device, dtype=torch.int64)
        self._value = torch.zeros(capacity, device=self.device, dtype=torch.float64)
        self._n = torch.zeros(capacity, device=self.device, dtype=torch.int64)

    @property
    def capacity(self) -> int:
        return self._v.shape[0]

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        for name in self._BUFFERS:
            old = getattr(self, name)
            if old.dim() == 3:  # keys: (heads, cap, d_k)
                new = old.new_zeros(old.shape[0], capacity, old.shape[2])
                new[:, : self.length] = old[:, : self.length]
            else:
                new = old.new_zeros(capacity)
                new[: self.length] = old[: self.length]
            setattr(self, name, new)
        self.growth_events += 1

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Write m new tokens: keys (heads, m, d_k), values (m,), their records."""
        m = values.shape[0]
        assert keys.shape == (self.num_heads, m, self.d_k), keys.shape
        assert len(info) == m
        if self.length + m > self.capacity:
            self._grow(self.length + m)
        start, end = self.length, self.length + m
        self._k[:, start:end] = keys
        self._v[start:end] = values
        for name, column in zip(self._BUFFERS[2:], info.tensors()):
            getattr(self, name)[start:end] = column
        self.length = end

    def keys(self) -> torch.Tensor:
        return self._k[:, : self.length]  # (heads, len, d_k), a view

    def values(self) -> torch.Tensor:
        return self._v[: self.length]  # (len,), a view

    def info(self) -> TokenInfo:
        end = self.length
        return TokenInfo(self._pos[:end], self._token[:end], self._value[:end], self._n[:end])

    def truncate(self, length: int) -> None:
        """Forget the tokens after the first ``length``; the buffers keep their capacity."""
        _check_truncate(length, self.length)
        self.length = length

    def __len__(self) -> int:
        return self.length

    @property
    def element_size(self) -> int:
        return self._k.element_size()

    @property
    def nbytes(self) -> int:
        """Bytes of the K and V held: len · (heads · d_k + 1) · element size."""
        return self.length * slot_nbytes(self.num_heads, self.d_k, self.element_size)

    @property
    def allocated_nbytes(self) -> int:
        """Bytes of the K and V buffers reserved, including room not filled yet."""
        return self.capacity * slot_nbytes(self.num_heads, self.d_k, self.element_size)


class CatCache:
    """The naive KV cache: every append concatenates a whole new copy of the cache (``torch.cat``).

    It keeps :class:`Cache`'s interface, so the engine's kv decoder runs on it unchanged. Appending
    one token copies all n cached ones: O(n) bytes moved per token where :class:`KVCache` writes
    O(1), which is the difference the benchmark and the Cost page show.
    """

    def __init__(self, num_heads: int, d_k: int, *, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32):
        device = torch.device(device)
        self._k = torch.zeros(num_heads, 0, d_k, device=device, dtype=dtype)  # (heads, len, d_k)
        self._v = torch.zeros(0, device=device, dtype=dtype)  # (len,)
        self._info = TokenInfo.empty(device)

    def append(self, keys: torch.Tensor, values: torch.Tensor, info: TokenInfo) -> None:
        """Copy the whole cache plus the m new tokens into fresh tensors."""
        self._k = torch.cat([self._k, keys], dim=1)  # (heads, len + m, d_k)
        self._v = torch.cat([self._v, values])  # (len + m,)
        self._info = TokenInfo.cat([self._info, info])

    def keys(self) -> torch.Tensor:
        return self._k  # (heads, len, d_k)

    def values(self) -> torch.Tensor:
        return self._v  # (len,)

    def info(self) -> TokenInfo:
        return self._info

    def truncate(self, length: int) -> None:
        _check_truncate(length, len(self))
        self._k, self._v, self._info = self._k[:, :length], self._v[:length], self._info.slice(0, length)

    def __len__(self) -> int:
        return self._v.shape[0]

    @property
    def nbytes(self) -> int:
        return self._k.nbytes + self._v.nbytes
