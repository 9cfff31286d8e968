"""Tier 1 and 2: issue 31's missing lessons 1, 2, 4 and 5: the papers' numbers beside the toy's,
the speculative-decoding formulas against hand calculations, and the folds on Memory and Serving."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from apptest_helpers import on_page, rerun

from viz.core.lessons.papers import eviction_lesson, paged_lesson
from viz.core.serving.papers import DRAFT_COST, best_k, chunking_lesson, expected_tokens, speculation_lesson, speedup
from viz.core.scale.gpus import gpu_named


def test_expected_tokens_per_target_pass_by_hand():
    """(1 − α^(k+1)) / (1 − α): α = 0.5, k = 4 → 0.96875 / 0.5 = 1.9375; α = 0.8, k = 3 → 0.5904 / 0.2 =
    2.952; every guess kept → k + 1; none kept → 1."""
    assert expected_tokens(0.5, 4) == pytest.approx(1.9375)
    assert expected_tokens(0.8, 3) == pytest.approx(2.952)
    assert expected_tokens(1.0, 5) == 6.0
    assert expected_tokens(0.0, 7) == 1.0


def test_speedup_and_the_best_k_by_hand():
    """α = 0.8, k = 4, c = 0.05: 0.67232 / (0.2 · 1.2) = 2.8013; with free drafts more guesses always
    pay; with α = 0.25 and c = 0.05, k = 2 beats k = 1 (1.3125/1.1 = 1.193 vs 1.25/1.05 = 1.190) and k = 3."""
    assert speedup(0.8, 4, 0.05) == pytest.approx(0.67232 / 0.24)
    assert best_k(0.9, 0.0, 8) == 8
    assert speedup(0.25, 2, 0.05) == pytest.approx(1.3125 / 1.1)
    assert speedup(0.25, 1, 0.05) == pytest.approx(1.25 / 1.05)
    assert best_k(0.25, 0.05, 8) == 2


def test_the_speculation_lesson_uses_the_measured_alpha_and_the_ridge():
    """The lesson quotes the formula's value for the measured α, the run's words per pass, and the batch
    from which k + 1 tokens per sequence pass the H100's ridge: 295 FLOPs per byte / 5 → from 60."""
    h100 = gpu_named("H100 SXM")
    run = SimpleNamespace(acceptance=0.5, words=("w",) * 22, rounds=(None,) * 10)  # 21 words after the prefill
    lesson = speculation_lesson(run, 4, 8, gpu=h100.name, ridge=h100.ridge("bf16"))
    assert lesson.expected == pytest.approx(1.9375) and lesson.measured == pytest.approx(2.1)
    assert lesson.compute_bound_batch == 60
    text = " ".join(lesson.paragraphs)
    assert "1.94 tokens per target pass" in text and "α = 0.50" in text and "from about 60 sequences" in text
    assert "295 FLOPs per byte" in text and "Leviathan" in text and f"c = {DRAFT_COST}" in text


def test_the_paged_lesson_puts_the_papers_figures_beside_the_toys():
    """60–80% wasted before, under 4% with vLLM, 2–4×, the three kinds of waste, and the toy's slots:
    120 reserved for 30 tokens → 90 never filled (75%); 36 in blocks → 6 empty (17%)."""
    text = " ".join(paged_lesson(30, 120, 36, 4).paragraphs)
    for said in ("60–80%", "under 4%", "2–4×", "reservation", "internal fragmentation", "external fragmentation",
                 "SOSP 2023", "90 (75%)", "6 of them empty (17%)"):
        assert said in text


def test_the_chunking_and_eviction_lessons_cite_their_sources():
    """Chunking names vLLM V1's budget and Sarathi-Serve; eviction names sinks, StreamingLLM's four,
    re-indexed positions, H2O and SnapKV, and what the toy's eviction changed."""
    chunking = " ".join(chunking_lesson(8).paragraphs)
    assert "max_num_batched_tokens" in chunking and "Sarathi-Serve" in chunking and "8 prompt tokens" in chunking
    eviction = " ".join(eviction_lesson(1, 2).paragraphs)
    for said in ("StreamingLLM", "keeps 4 sink tokens", "positions by place in the cache", "cannot be undone",
                 "H2O", "SnapKV", "prediction 2 is the first word that changed"):
        assert said in eviction
    assert "no predicted word changed" in " ".join(eviction_lesson(0, None).paragraphs)


def _folds(at) -> list[str]:
    return [e.label for e in at.expander]


def test_memory_shows_the_paged_and_eviction_folds(app):
    """The paged tab folds PagedAttention's lesson; the eviction tab folds the sinks lesson."""
    at = on_page(app, "pages/memory.py")
    assert "Why it matters: what the PagedAttention paper measured" in _folds(at)
    at.session_state["memory_tab"] = "Eviction and quantisation"
    rerun(at)
    assert "Why it matters: sinks, StreamingLLM and eviction by score" in _folds(at)


@pytest.mark.parametrize("section, title", [("Chunked prefill", "Why it matters: chunked prefill in real servers"),
                                            ("Speculative decoding", "Why it matters: how much speculation can save")])
def test_serving_shows_its_folds(app, section, title):
    """The chunked-prefill and speculative sections each fold their lesson."""
    at = on_page(app, "pages/serving.py")
    at.segmented_control(key="serving_section").set_value(section)
    rerun(at)
    assert title in _folds(at)
