"""Tier 1: the Real model page's view (viz.core.real.view.real_view) holds every number and sentence
its tabs show, checked against values worked out by hand on the shipped models."""

from __future__ import annotations

import pytest

from viz.core.real import words
from viz.core.real.model import LLAMA_DIR, DecodeSession, encode, load_model
from viz.core.real.view import real_view
from viz.core.text import PICKER_CHARS

PROMPT = "The cat sat on the mat"  # 9 tokens for the shipped tokenizer


@pytest.fixture(scope="module")
def gpt2():
    return load_model(None, "cpu")


def test_the_view_counts_the_cache_before_and_after_a_step(gpt2):
    """GPT-2 shipped: 4 layers × 4 K/V heads × 32 dims × 4 bytes × 2 (K and V) = 4,096 bytes a token;
    9 prompt tokens = 36,864 bytes, one step later 10 tokens = 40,960. Context 256: 256 − 9 = 247 tokens
    of room, so the comparison may generate min(128, 247) = 128 and starts at 48."""
    session = DecodeSession(gpt2, encode(gpt2, PROMPT), 0)
    view = real_view(session)
    assert len(view.prompt) == 9 and view.generated == 0 and view.can_step
    assert view.history == ((9, 36864, 36864),) and view.snapshot.total_bytes == 36864
    assert view.per_token == view.mha_per_token == "4,096 B" and view.smaller_by == "1×"
    # no grouping: the row says so in one figure instead of repeating 4,096 B and adding 1×
    assert [(f.label, f.value) for f in view.gqa_stats] == [("Cache per token (measured)", "4,096 B"),
                                                            ("Query heads per K/V head", "1")]
    assert (view.room, view.compare_max, view.compare_default) == (247, 128, 48)
    assert view.formula_delta == "equal" and view.cache_note.endswith("— the same. ")
    assert view.prompt_note.startswith("The prompt is **9 tokens**")
    assert "the prompt's 9 tokens filled the cache of each of the 4 layers (36,864 bytes in all)" in view.narration
    assert len(view.next_tokens) == 10 and len(view.prefill_top(3)) == 3
    session.step()
    after = real_view(session)
    assert after.generated == 1 and after.history[-1] == (10, 40960, 40960)
    assert "(+4,096 since the step before)" in after.narration and len(after.pieces) == 10


def test_the_view_scores_heads_and_says_why_a_rule_is_refused(gpt2):
    """16 heads (4 layers × 4) against the 5 toy rules (self, previous token, first token, even positions,
    everything), plus the visitor's when it compiles; a refused rule leaves the 5 and says why; the picker
    names each head by its best rule."""
    session = DecodeSession(gpt2, encode(gpt2, PROMPT), 0)
    view = real_view(session, "q.pos - k.pos < 3")
    assert len(view.matches.heads) == 16 and len(view.matches.rules) == 6 and view.rule_error == ""
    refused = real_view(session, "q.pos <")
    assert len(refused.matches.rules) == 5 and "after `<` write a value" in refused.rule_error
    line = view.chance_line
    assert line == (words.above_chance(view.beats_chance, 16) if view.beats_chance else words.none_above(16))
    match, rule = view.head_match("L0H0")
    assert view.head_options()["L0H0"] == f"L0H0 ≈ {rule.name} ({match.score:.2f})"
    # whole in the picker's narrow column ('L0H1 · looks like 'everything' (0.' was cut), the visitor's rule too
    assert all(len(option) <= PICKER_CHARS for option in view.head_options().values()), view.head_options()
    short = real_view(DecodeSession(gpt2, encode(gpt2, "The"), 0), "q.pos < 3")
    assert short.matches is None and short.head_options() == {} and short.rule_error == ""


def test_grouped_heads_make_the_llama_cache_a_quarter():
    """Llama shipped: 8 query heads share 2 K/V heads (group 4); 4 layers × 2 × 16 dims × 4 bytes × 2 =
    1,024 bytes a token, against 4 layers × 8 × 16 × 4 × 2 = 4,096 with a K/V head per query head."""
    llama = load_model(LLAMA_DIR, "cpu")
    view = real_view(DecodeSession(llama, encode(llama, PROMPT), 0))
    assert (view.per_token, view.mha_per_token, view.smaller_by) == ("1,024 B", "4,096 B", "4×")
    assert [f.value for f in view.gqa_stats] == ["1,024 B", "4,096 B", "4×"]
    assert "Each of the 8 query heads" in view.gqa_intro and "only the 2 K/V heads" in view.gqa_intro
    assert view.gqa_lead == ("Grouped-query attention (GQA): 8 query heads read 2 **K/V heads**, so the cache is "
                             "4× smaller.")  # the tab's one sentence, above its figure


def test_the_words_keep_visitor_text_for_the_escape_the_page_passes(gpt2):
    """A model's name and training command go through the page's escape; no report, no sentence."""
    shout = str.upper
    line = words.facts(gpt2.shape, "my*model", "GPT2LMHeadModel", "cpu", shout)
    assert line.startswith("**MY*MODEL** · GPT2LMHEADMODEL · 1,088,256 parameters · 4 layers × 4 heads")
    assert words.training(None, shout) == ""
    report = {"command": "train", "data": {"source": "docs", "train_tokens": 12345}, "final_train_loss": 2.345,
              "final_val_loss": 3.0, "cpu_seconds": 90}
    assert words.training(report, shout) == ("Trained by TRAIN on DOCS (12,345 tokens); final loss 2.35 (training) / "
                                             "3.00 (held-out documents), with 2 CPU-minutes.")
