"""FlashAttention on the toy: attention computed tile by tile with the online softmax, bytes counted.

The toy's prefill pass (:meth:`~viz.core.engine.model.ToyModel.prefill`) is the *naive* attention a
textbook writes: the whole n × n score matrix S is formed, the masked softmax turns it into P, and
P · V gives the contexts. On a GPU, S and P do not fit in the small fast on-chip memory (SRAM), so
the naive kernel writes each to the large slow memory (HBM) and reads it back.

FlashAttention (Dao et al. 2022; the loop order of FlashAttention-2) never forms S:

1. Split the queries into tiles of ``block_q`` rows and the keys and values into tiles of
   ``block_k`` columns.
2. For each query tile, load it into fast memory once; then for each key tile at or left of the
   diagonal (tiles wholly above it are masked by causality and skipped), load the K and V tile,
   score it, and update three running quantities per query row: the maximum score seen so far
   ``m``, the sum of exp(score − m) ``l``, and the output ``o`` = Σ exp(score − m) · v. When a new
   tile raises the maximum, the old ``l`` and ``o`` are multiplied by exp(m_old − m_new) first
   (the online softmax), so every term is always relative to the current maximum.
3. After the last tile, context = o / l, and the query tile's contexts are written once.

Both passes are counted in bytes moved between slow and fast memory (:class:`Traffic`), from the
shapes of the tiles this code loads and stores. The tiled contexts equal the naive ones up to float
rounding: the same sums taken in another order, with a rescale per tile. :func:`tolerance` states
the bound the tests use.

What this module does not do: run a fused kernel (each tile is ordinary torch code, so this is no
faster on a CPU; it shows what the kernel does and what it saves in memory traffic), decode (one
query row over the cache is a single tile row), or compute gradients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import torch

from ..engine.cache import TokenInfo
from ..engine.model import ToyModel
from ..engine.scenario import Scenario

MAX_FLASH_TOKENS = 128  # prompt length stepped through tile by tile (every visit is kept)
MAX_VISITS = 2_048  # tile steps kept for stepping through (each is one small attention call)
MAX_SWEEP_TOKENS = 4096  # longest sequence in the bytes sweep (its tiles are counted, not computed)
BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Traffic:
    """Bytes moved between slow memory (HBM) and fast memory (SRAM), item by item."""

    items: tuple[tuple[str, int, int], ...]  # (what, bytes read, bytes written)

    @property
    def read(self) -> int:
        return sum(r for _, r, _ in self.items)

    @property
    def written(self) -> int:
        return sum(w for _, _, w in self.items)

    @property
    def total(self) -> int:
        return self.read + self.written


@dataclass(frozen=True)
class TileVisit:
    """One (query tile, key tile) step of the tiled pass: what it loaded and the running state after."""

    index: int
    q_tile: int
    k_tile: int
    rows: tuple[int, int]  # query positions [start, end), 0-based
    cols: tuple[int, int]  # key positions [start, end), 0-based
    scores: torch.Tensor  # (heads, rows, cols) scaled scores, -inf where the causal mask hides a key
    max_before: torch.Tensor  # (heads, rows) running maximum before this tile (-inf at the first)
    max_after: torch.Tensor  # (heads, rows)
    rescale: torch.Tensor  # (heads, rows) exp(max_before − max_after): how much the old terms shrink
    sum_after: torch.Tensor  # (heads, rows) running Σ exp(score − max)
    out_after: torch.Tensor  # (heads, rows) running Σ exp(score − max) · v (not yet divided)
    bytes_read: int  # K and V tile (and the Q tile at a row's first visit) loaded from slow memory
    last_for_rows: bool  # the final tile of this query tile: contexts are written after it

    @property
    def contexts(self) -> torch.Tensor:
        """(heads, rows) what the rows would give if the pass stopped here: out / sum."""
        return self.out_after / self.sum_after


@dataclass(frozen=True)
class FlashRun:
    """The tiled pass beside the naive one for one prompt."""

    tokens: tuple[str, ...]
    num_heads: int
    d_k: int
    block_q: int
    block_k: int
    element_size: int  # bytes per number
    visits: tuple[TileVisit, ...]  # in the order the kernel runs them
    skipped: int  # tiles wholly above the diagonal, never loaded
    contexts: torch.Tensor  # (heads, n) from the tiles
    naive_contexts: torch.Tensor  # (heads, n) from the engine's prefill
    naive: Traffic
    flash: Traffic
    naive_fast_bytes: int  # the largest piece the naive pass must hold at once: one n × n score matrix per head
    flash_fast_bytes: int  # the working set of one tile visit: Q, K, V and score tiles plus m, l, o
    tolerance: float  # the bound |tiled − naive| must stay within (see :func:`tolerance`)

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def bytes_saved(self) -> int:
        """Bytes the tiled pass moves fewer than the naive one (negative: more)."""
        return self.naive.total - self.flash.total

    @property
    def max_abs_diff(self) -> float:
        return float((self.contexts - self.naive_contexts).abs().max()) if self.n else 0.0

    @property
    def agrees(self) -> bool:
        return self.max_abs_diff <= self.tolerance

    @property
    def tiles(self) -> tuple[int, int]:
        """(query tiles, key tiles)."""
        return math.ceil(self.n / self.block_q), math.ceil(self.n / self.block_k)


@dataclass(frozen=True)
class TrafficPoint:
    """Bytes moved by both passes at one sequence length (for the sweep)."""

    n: int
    naive: int
    flash: int
    score_matrix: int  # bytes of S alone: what the naive pass writes and reads back twice over


def tolerance(tiles: int, dtype: torch.dtype, largest_value: float) -> float:
    """The bound on |tiled − naive| for one context.

    Both passes take weighted averages of the same values, so each context lies within the range of
    the values and any rounding error is relative to the largest |value|. Per key tile the tiled pass
    adds two roundings to each row's sum and output (the rescale and the accumulation) and the
    naive pass's softmax and sum contribute a few more; 4 roundings per tile, plus 4 for the final
    division and for the naive side, each at most machine epsilon, bound the relative error.
    """
    eps = torch.finfo(dtype).eps
    return 4 * (tiles + 1) * eps * max(largest_value, 1.0)


def _tile_scores(model: ToyModel, info: TokenInfo, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 rows: tuple[int, int], cols: tuple[int, int]) -> torch.Tensor:
    """Scaled, causally masked scores of one tile: (heads, rows, cols), as the engine scores them."""
    (r0, r1), (c0, c1) = rows, cols
    tile = model.attend(info.slice(r0, r1), q[:, r0:r1], info.slice(c0, c1), k[:, c0:c1], v[c0:c1])
    return tile.masked_scores


def naive_traffic(n: int, heads: int, d_k: int, size: int) -> Traffic:
    """Standard attention: S = QKᵀ written out, read back for the masked softmax, P written, read for P·V."""
    qk, s, v, o = heads * n * d_k * size, heads * n * n * size, n * size, heads * n * size
    return Traffic((("Q and K, to score", 2 * qk, 0), ("S = QKᵀ / √d_k (heads × n × n)", 0, s),
                    ("S again, for the masked softmax", s, 0), ("P = softmax(S)", 0, s),
                    ("P again, and V, for P · V", s + v, 0), ("contexts", 0, o)))


class Tile(NamedTuple):
    """One visit of the tiled loop: query tile qi against key tile kj."""

    qi: int
    kj: int
    rows: tuple[int, int]  # query positions [start, end), 0-based
    cols: tuple[int, int]  # key positions [start, end)
    last: bool  # the query tile's final key tile (the diagonal one)


def tile_schedule(n: int, block_q: int, block_k: int) -> Iterator[Tile]:
    """The visits in the kernel's order: query tiles outside, key tiles up to the diagonal inside.

    A key tile wholly right of a query tile's last row is masked by causality and never visited.
    """
    for qi, r0 in enumerate(range(0, n, block_q)):
        r1 = min(r0 + block_q, n)
        last = (r1 - 1) // block_k
        for kj in range(last + 1):
            yield Tile(qi, kj, (r0, r1), (kj * block_k, min((kj + 1) * block_k, n)), kj == last)


def _tile_reads(tile: Tile, heads: int, d_k: int, size: int) -> tuple[int, int]:
    """(Q bytes, K and V bytes) a visit loads: the Q tile at its first key tile, K rows per head and one V each."""
    rows, cols = tile.rows[1] - tile.rows[0], tile.cols[1] - tile.cols[0]
    return (heads * rows * d_k * size if tile.kj == 0 else 0), (heads * cols * d_k + cols) * size


def flash_traffic(n: int, heads: int, d_k: int, size: int, block_q: int, block_k: int) -> Traffic:
    """Bytes the tiled pass moves, summed over :func:`tile_schedule`: Q once, K and V once per
    query tile at or below them, contexts written once."""
    q_read = kv_read = written = 0
    for tile in tile_schedule(n, block_q, block_k):
        q_bytes, kv_bytes = _tile_reads(tile, heads, d_k, size)
        q_read, kv_read = q_read + q_bytes, kv_read + kv_bytes
        written += heads * (tile.rows[1] - tile.rows[0]) * size if tile.last else 0
    return Traffic((("Q, each tile once", q_read, 0),
                    ("K and V tiles, once per query tile at or below them", kv_read, 0),
                    ("contexts, each tile once", 0, written)))


def _check(n: int, limit: int, block_q: int, block_k: int) -> None:
    if not 1 <= n <= limit:
        raise ValueError(f"the tiled pass takes 1 to {limit} tokens, got {n}")
    if limit == MAX_FLASH_TOKENS and sum(1 for _ in tile_schedule(n, block_q, block_k)) > MAX_VISITS:
        raise ValueError(f"tiles of {block_q} × {block_k} over {n} tokens make more than {MAX_VISITS:,} steps; "
                         "choose larger tiles")
    for name, size in (("query", block_q), ("key", block_k)):
        if size not in BLOCK_SIZES:
            raise ValueError(f"the {name} tile size must be one of {', '.join(map(str, BLOCK_SIZES))}")


def flash_attention(scenario: Scenario, block_q: int, block_k: int, *, tokens: list[str] | None = None,
                    values: list[float] | None = None, dtype: torch.dtype = torch.float32) -> FlashRun:
    """Run the prompt (the scenario's, or ``tokens``/``values``) tiled and naive; count both ways' bytes."""
    tokens = list(scenario.tokens if tokens is None else tokens)
    values = list(scenario.values if values is None else values)
    n = len(tokens)
    _check(n, MAX_FLASH_TOKENS, block_q, block_k)
    model = ToyModel(scenario, device="cpu", dtype=dtype)
    naive = model.prefill(tokens, values)  # the engine's one-pass prefill: the reference
    info, q, k, v = naive.info, naive.q, naive.k, naive.v  # (heads, n, d_k), (heads, n, d_k), (n,)
    heads, d_k, size = model.num_heads, model.d_k, q.element_size()
    contexts = torch.empty(heads, n, dtype=dtype)
    visits: list[TileVisit] = []
    for tile in tile_schedule(n, block_q, block_k):
        (r0, r1), (c0, c1) = tile.rows, tile.cols
        if tile.kj == 0:  # a new query tile: fresh running statistics
            m = torch.full((heads, r1 - r0), -torch.inf, dtype=dtype)  # running max
            l = torch.zeros(heads, r1 - r0, dtype=dtype)  # running Σ exp(s − m)
            o = torch.zeros(heads, r1 - r0, dtype=dtype)  # running Σ exp(s − m) · v
        s = _tile_scores(model, info, q, k, v, tile.rows, tile.cols)  # (heads, rows, cols)
        # key 1 sits in the first tile and every query sees it, so m is finite from then on
        m_new = torch.maximum(m, s.amax(dim=-1))  # (heads, rows)
        rescale = torch.exp(m - m_new)  # 0 at the first tile (m = -inf)
        p = torch.exp(s - m_new[..., None])  # (heads, rows, cols), 0 where masked
        l = rescale * l + p.sum(dim=-1)
        o = rescale * o + (p * v[c0:c1]).sum(dim=-1)
        visits.append(TileVisit(len(visits), tile.qi, tile.kj, tile.rows, tile.cols, s, m, m_new, rescale,
                                l, o, sum(_tile_reads(tile, heads, d_k, size)), tile.last))
        m = m_new
        if tile.last:
            contexts[:, r0:r1] = o / l  # (heads, rows), written once
    fast = (heads * block_q * d_k + heads * block_k * d_k + block_k + heads * block_q * block_k
            + 3 * heads * block_q) * size
    q_tiles, k_tiles = math.ceil(n / block_q), math.ceil(n / block_k)
    largest = max((abs(x) for x in values), default=0.0)
    return FlashRun(tuple(tokens), heads, d_k, block_q, block_k, size, tuple(visits),
                    q_tiles * k_tiles - len(visits), contexts, naive.contexts.to(dtype),
                    naive_traffic(n, heads, d_k, size), flash_traffic(n, heads, d_k, size, block_q, block_k),
                    heads * n * n * size, fast, tolerance(k_tiles, dtype, largest))


def traffic_sweep(scenario: Scenario, block_q: int, block_k: int,
                  lengths: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024)) -> list[TrafficPoint]:
    """Bytes both passes move at several lengths, for the scenario's heads and d_k in float32."""
    heads, d_k, size = len(scenario.heads), scenario.d_k, torch.finfo(torch.float32).bits // 8
    out = []
    for n in lengths:
        _check(n, MAX_SWEEP_TOKENS, block_q, block_k)
        out.append(TrafficPoint(n, naive_traffic(n, heads, d_k, size).total,
                                flash_traffic(n, heads, d_k, size, block_q, block_k).total,
                                heads * n * n * size))
    return out
