"""Tier 1: FlashAttention on the toy equals the naive pass, and its bytes are counted from its tiles."""

from __future__ import annotations

import math

import pytest
import torch

from viz import load_preset
from viz.core.engine.model import ToyModel
from viz.core.serving.flash import (BLOCK_SIZES, MAX_FLASH_TOKENS, flash_attention, flash_traffic, naive_traffic,
                            tile_schedule, tolerance, traffic_sweep)
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)

WORDS = ["Today", "weather", "is", "so", "nice", "warm", "the", "cat"]


def prompt(n: int, seed: int = 0) -> tuple[list[str], list[float]]:
    """n tokens drawn from a small word list, with values from -20 to 20 in steps of 0.5."""
    g = torch.Generator().manual_seed(seed)
    words = torch.randint(len(WORDS), (n,), generator=g).tolist()
    values = (torch.randint(-40, 41, (n,), generator=g) / 2).tolist()
    return [WORDS[i] for i in words], values


@pytest.mark.parametrize("preset", ["cache-safe", "previous-token", "content", "never-matches", "seed"])
def test_tiled_contexts_equal_naive_within_the_stated_bound(preset):
    """For every head kind (key-only, query-reading, n-reading) and tile shape, tiled == naive within tolerance()."""
    scenario = load_preset(preset)
    for seed, (n, block_q, block_k) in enumerate(((1, 1, 1), (5, 1, 2), (23, 4, 2), (23, 2, 8), (40, 8, 8),
                                                   (40, 16, 4))):
        tokens, values = prompt(n, seed)
        for dtype in (torch.float32, torch.float64):
            run = flash_attention(scenario, block_q, block_k, tokens=tokens, values=values, dtype=dtype)
            assert run.contexts.shape == run.naive_contexts.shape == (len(scenario.heads), n)
            assert run.max_abs_diff <= run.tolerance, (n, dtype, run.max_abs_diff, run.tolerance)
            assert run.agrees


def test_the_seed_prefill_contexts_come_out_of_the_tiles():
    """The seed's printed prefill contexts come out of 2 × 2 tiles (to float rounding)."""
    run = flash_attention(load_preset("seed"), 2, 2)
    expected = torch.tensor([[10, 20, 20, 12.5], [10, 15, 10.3333, 5], [10, 10, 10, 10], [10, 15, 10.3333, 9]])
    assert torch.allclose(run.contexts, expected, atol=1e-3)


def test_tolerance_is_tight_enough_to_catch_a_missing_rescale():
    """Dropping the exp(m_old - m_new) rescale (a classic online-softmax bug) breaks the bound by far."""
    scenario = load_preset("cache-safe")
    tokens, values = prompt(24, 3)
    run = flash_attention(scenario, 4, 4, tokens=tokens, values=values)
    by_row: dict[tuple[int, int], list] = {}
    for visit in run.visits:
        by_row.setdefault(visit.rows, []).append(visit)
    wrong = torch.empty_like(run.contexts)
    v = torch.tensor(values)
    for (r0, r1), visits in by_row.items():
        l = sum(torch.exp(x.scores - x.max_after[..., None]).sum(-1) for x in visits)  # no rescale
        o = sum((torch.exp(x.scores - x.max_after[..., None]) * v[x.cols[0]:x.cols[1]]).sum(-1) for x in visits)
        wrong[:, r0:r1] = o / l
    assert (wrong - run.naive_contexts).abs().max() > 100 * run.tolerance


def test_running_statistics_after_the_last_tile_are_the_row_max_and_sum():
    """After a query tile's last key tile, m is the row maximum and l = Σ exp(s − m) over the whole row."""
    scenario = load_preset("previous-token")
    run = flash_attention(scenario, 4, 2)
    pre = ToyModel(scenario, device="cpu").prefill(list(scenario.tokens), list(scenario.values))
    naive = pre.attention.masked_scores  # (heads, n, n), the engine's own, where the tiles run (the CPU)
    for visit in run.visits:
        if visit.last_for_rows:
            r0, r1 = visit.rows
            rows = naive[:, r0:r1]
            assert torch.equal(visit.max_after, rows.amax(-1))
            assert torch.allclose(visit.sum_after, torch.exp(rows - rows.amax(-1, keepdim=True)).sum(-1))


def test_tiles_above_the_diagonal_are_skipped_and_every_other_tile_is_visited_once():
    """The schedule visits exactly the (query tile, key tile) pairs holding a visible key, in kernel order."""
    for n in (1, 7, 16, 33):
        for bq in (1, 4, 8):
            for bk in (1, 2, 8):
                tiles = list(tile_schedule(n, bq, bk))
                expected = {(i, j) for i in range(math.ceil(n / bq)) for j in range(math.ceil(n / bk))
                            if j * bk <= min((i + 1) * bq, n) - 1}
                assert {(t.qi, t.kj) for t in tiles} == expected
                assert [t.qi for t in tiles] == sorted(t.qi for t in tiles)


def test_bytes_are_counted_from_the_tiles():
    """Flash reads Q once, K and V once per query tile at or below them, writes contexts once and never S."""
    heads, d_k, size = 4, 64, 4
    for n, bq, bk in ((16, 4, 4), (33, 8, 2), (64, 16, 16)):
        flash = flash_traffic(n, heads, d_k, size, bq, bk)
        assert flash.items[0][1] == heads * n * d_k * size  # Q once
        visits = list(tile_schedule(n, bq, bk))
        assert flash.items[1][1] == sum((heads * (t.cols[1] - t.cols[0]) * d_k + t.cols[1] - t.cols[0]) * size
                                        for t in visits)
        assert flash.written == heads * n * size  # contexts once, no score matrix
        naive = naive_traffic(n, heads, d_k, size)
        assert naive.written == 2 * heads * n * n * size + heads * n * size  # S and P out, contexts out


def test_flash_moves_fewer_bytes_only_with_big_enough_tiles():
    """With 16 × 16 tiles flash moves fewer bytes than naive at every swept length; with 1 × 1 tiles it moves more."""
    scenario = load_preset("cache-safe")
    for point in traffic_sweep(scenario, 16, 16):
        assert point.flash < point.naive
    small = traffic_sweep(scenario, 1, 1, lengths=(64,))[0]
    assert small.flash > small.naive


def test_limits_and_tolerance_formula():
    """Too long a prompt and a tile size off the list are refused; the bound grows with the tiles and the values."""
    scenario = load_preset("cache-safe")
    with pytest.raises(ValueError, match="1 to"):
        flash_attention(scenario, 4, 4, tokens=["a"] * (MAX_FLASH_TOKENS + 1), values=[1.0] * (MAX_FLASH_TOKENS + 1))
    with pytest.raises(ValueError, match="tile size"):
        flash_attention(scenario, 3, 4)
    assert 3 not in BLOCK_SIZES
    assert tolerance(4, torch.float32, 10) < tolerance(8, torch.float32, 10) < tolerance(8, torch.float32, 100)
    assert tolerance(4, torch.float64, 10) < 1e-12


def test_too_many_tile_steps_are_refused():
    """1 × 1 tiles over 128 tokens would make 8,256 steps to keep; the walk refuses and names the cure."""
    tokens, values = prompt(MAX_FLASH_TOKENS)
    with pytest.raises(ValueError, match="choose larger tiles"):
        flash_attention(load_preset("cache-safe"), 1, 1, tokens=tokens, values=values)


def test_the_traffic_ratio_levels_off_while_the_bytes_saved_grow_as_n_squared():
    """Issue 31 (misleading 9): with fixed tiles the naive/tiled traffic ratio approaches a constant
    (Dao et al. 2022, Theorem 2: about M/d²) while the bytes saved grow about 16× per 4× tokens; the
    page's note says so and no longer says the saving grows with the sequence."""
    from viz.core.serving.explain import FLASH_TRAFFIC_NOTE
    from viz.core.serving.flash import flash_traffic, naive_traffic

    lengths = (1024, 4096, 16384, 65536)
    naive = [naive_traffic(n, 1, 64, 2).total for n in lengths]
    tiled = [flash_traffic(n, 1, 64, 2, 128, 128).total for n in lengths]
    ratios = [a / b for a, b in zip(naive, tiled)]
    growth = [later / earlier for earlier, later in zip(ratios, ratios[1:])]
    assert growth[0] > growth[1] > growth[2] and growth[-1] < 1.05  # levelling off
    saved = [a - b for a, b in zip(naive, tiled)]
    assert all(15 < later / earlier < 17 for earlier, later in zip(saved, saved[1:]))  # ≈ 4² per 4× n
    assert "M/d²" in FLASH_TRAFFIC_NOTE and "HBM" in FLASH_TRAFFIC_NOTE
    assert "grows with the sequence" not in FLASH_TRAFFIC_NOTE
