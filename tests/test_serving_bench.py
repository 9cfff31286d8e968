"""Tier 1: the benchmark's serving section runs in its quick form and reports the engine's counts."""

from __future__ import annotations

import torch

from viz.tools.bench import QUICK
from viz.tools.bench_serving import FlashPoint, ServingPoint, SpecPoint, bench_serving
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)


def test_quick_serving_section_measures_every_part():
    """Quick mode: scheduling rows per policy, speculation that matches the target, FlashAttention bytes."""
    result = bench_serving(QUICK, torch.device("cpu"))
    scheduling = [r for r in result.rows if isinstance(r, ServingPoint)]
    speculation = [r for r in result.rows if isinstance(r, SpecPoint)]
    flash = [r for r in result.rows if isinstance(r, FlashPoint)]
    assert {p.policy for p in scheduling} >= {"continuous", "static", "chunked 8", "prefix caching"}
    assert all(p.multiply_adds > 0 and p.run.median_s > 0 for p in scheduling)
    assert any(p.preemptions for p in scheduling if p.policy.startswith("tight"))
    assert all(p.same_output for p in speculation) and any(p.model != "toy" for p in speculation)
    assert all(p.target_passes <= p.plain_passes for p in speculation)
    assert all(p.flash_bytes < p.naive_bytes for p in flash)
    assert all(p.tiled is None or p.max_abs_diff < 1e-4 for p in flash)
    assert {f.key for f in result.findings} >= {"static_over_continuous_ticks_burst", "real_lookup_speedup"}
    assert "workload" in result.text and "tiled/naive" in result.text
