"""Tier 1 and 2: the pages about many requests, drafts and eviction open on words that vary, so every
control changes something; the seed stays the default of Prefill and Decode, and Decode says why a
greedy toy repeats itself."""

from __future__ import annotations

from dataclasses import replace

import pytest
from apptest_helpers import on_page, rerun

from viz import generate, load_preset
from viz.core.engine.presets import DEFAULT_PRESET, VARIED_PRESET, varied_opening
from viz.core.lessons.stale import repeat_note
from viz.core.serving.compress import CacheSpec, EvictionPolicy, compare_with_full
from viz.core.serving.scheduler import serve
from viz.core.serving.speculative import DraftSpec, opening_temperature, speculate, with_temperature
from viz.core.serving.workload import ServingConfig, serving_refusal, workload_preset
from viz.ui.common import md_escape

VARIED = load_preset(VARIED_PRESET)


def test_the_seed_opens_serving_and_memory_on_the_varied_preset():
    """The unedited seed is swapped, with a line saying why; any other scenario is the visitor's own."""
    seed = load_preset(DEFAULT_PRESET)
    opening = varied_opening(seed, "Serving")
    assert opening.scenario == VARIED and "'nice' every time" in opening.note
    for own in (load_preset("content"), replace(seed, title="mine")):
        assert varied_opening(own, "Memory").scenario == own and varied_opening(own, "Memory").note == ""


def test_the_varied_preset_is_cache_safe():
    """No rule reads n, so the server takes it as it is (no cache-safe toggle)."""
    assert serving_refusal(VARIED) == "" and all(generate(VARIED, 3).cacheable)


def test_the_default_serving_workload_says_different_words():
    """The default workload ('a burst') on the opening scenario: at least two requests differ."""
    run = serve(VARIED, workload_preset(VARIED, "a burst"), ServingConfig(num_blocks=32))
    outputs = {o.words for o in run.outcomes}
    assert len(outputs) >= 2
    assert any(len(set(o.words)) > 1 for o in run.outcomes)  # and a request changes its word


def default_speculation():
    """The Speculative decoding section's opening run: k = 4, 24 words, a draft with the first head
    only, sampling at the temperature the toy opens at (greedy, every round guessed 'hot' four times)."""
    sampled = replace(VARIED, sampling=with_temperature(VARIED.sampling, opening_temperature(VARIED.sampling)))
    return speculate(sampled, 24, 4, DraftSpec("fewer heads", heads=1))


def test_the_default_speculative_view_rejects_some_guesses():
    """The opening run: the acceptance rate is strictly between 0 and 1."""
    assert 0 < default_speculation().acceptance < 1


def test_the_default_draft_guesses_varied_words_kept_and_rejected():
    """The opening run's draft guesses at least two different words, rounds guess differently, and
    some guess is kept and some rejected (issue 32: a draft guessing one word every round showed nothing)."""
    rounds = default_speculation().rounds
    assert len({word for r in rounds for word in r.guesses}) >= 2
    assert len({r.guesses for r in rounds}) >= 2
    assert any(r.accepted > 0 for r in rounds) and any(r.accepted < len(r.guesses) for r in rounds)


def test_a_greedy_draft_on_the_varied_preset_would_guess_one_word():
    """Why the toy opens sampling: greedy, the one-head draft guesses one word in every round."""
    greedy = speculate(VARIED, 24, 4, DraftSpec("fewer heads", heads=1))
    assert greedy.greedy and len({word for r in greedy.rounds for word in r.guesses}) == 1
    assert not default_speculation().greedy


def test_the_default_eviction_changes_a_word():
    """A sliding window of 3 over 6 predictions changes at least one predicted word against the full cache."""
    comparison = compare_with_full(VARIED, 6, CacheSpec(EvictionPolicy(window=3)))
    n = len(VARIED.tokens)
    assert comparison.first_change is not None
    assert comparison.tokens[n:] != comparison.free_tokens[n:]


def test_a_greedy_repeat_is_explained_and_a_change_is_not():
    """The seed repeats 'nice' from step 1 on: the note names the word and greedy decoding; the
    varied preset's changes of word, step 0 and sampling get no note."""
    seed = generate(load_preset("seed"), 3)
    assert repeat_note(seed, 0) == ""
    note = repeat_note(seed, 2)
    assert "Greedy" in note and "'nice'" in note and "value 7" in note
    varied = generate(VARIED, 4)
    changed = [s for s in range(1, 4) if varied.steps[s].token != varied.steps[s - 1].token]
    assert changed and all(repeat_note(varied, s) == "" for s in changed)
    sampled = generate(load_preset("content"), 4)
    assert all(repeat_note(sampled, s) == "" for s in range(4))


@pytest.mark.parametrize("page", ["pages/serving.py", "pages/memory.py"])
def test_the_pages_open_on_the_varied_preset(app, page):
    """At first visit (the seed) the page says it opens on the varied preset and offers no cache-safe toggle."""
    at = on_page(app, page)
    opening = varied_opening(load_preset("seed"), "Serving" if "serving" in page else "Memory")
    assert md_escape(opening.note) in [c.value for c in at.caption]
    # and beside the scenario picker, which still names the seed: the sidebar says what the page shows
    assert md_escape(opening.aside) in [c.value for c in at.sidebar.caption]
    assert f"shows the '{VARIED_PRESET}' scenario" in opening.aside
    assert not any("instead" in c.value for c in on_page(at, "pages/decode.py").sidebar.caption)
    assert not [t for t in at.toggle if t.key and t.key.endswith("cache_safe")]


def test_the_aside_names_the_scenario_and_the_prompt_memory_shows(app):
    """The sidebar and the footer name the scenario as its picker does and quote the prompt as the page
    shows it (A's prompt in the sequences table), never a title the page does not show."""
    at = on_page(app, "pages/memory.py")
    shown = next(t.value for t in at.table if "prompt" in t.value.columns)["prompt"].iloc[0]
    opening = varied_opening(load_preset("seed"), "Memory")
    for said in (opening.aside, opening.note):
        assert f"'{VARIED_PRESET}'" in said and f"'{shown}'" in said and VARIED.title not in said
    assert [c.value for c in at.sidebar.caption if "instead" in c.value] == [md_escape(opening.aside)]


def test_serving_requests_say_different_words_on_the_page(app):
    """The requests table of the default view shows at least two different outputs."""
    at = on_page(app, "pages/serving.py")
    frames = [d.value for d in at.main.table if "words" in d.value.columns]
    assert frames and frames[0]["words"].nunique() >= 2


def test_serving_speculation_opens_on_the_varied_run(app):
    """The Speculative decoding section's output at first visit is the opening run's, word for word."""
    at = on_page(app, "pages/serving.py")
    at.segmented_control(key="serving_section").set_value("Speculative decoding")
    rerun(at)
    assert not at.exception
    assert any(" ".join(default_speculation().words) in m.value for m in at.markdown)


def test_decode_says_why_the_seed_repeats(app):
    """Two steps into the seed, Decode's lesson screen says in one line why 'nice' comes again."""
    at = on_page(app, "pages/decode.py")
    for _ in range(2):
        next(b for b in at.button if b.key == "decode_step").click()
        rerun(at)
    expected = md_escape(repeat_note(generate(load_preset("seed"), 3), 2))
    assert expected in [c.value for c in at.caption]
    rerun(at)
    assert not at.exception
