"""Tier 2: the Serving page renders inside the app, every section shows the engine's own numbers and
narration, and bad input is refused in words while the last good workload stays."""

from __future__ import annotations

from dataclasses import replace

import pytest
from apptest_helpers import flip, on_page, rerun, stat, stat_value, switched

from viz import load_preset
from viz.core.serving.flash import flash_attention
from viz.core.engine.presets import sequence
from viz.core.serving.scheduler import serve
from viz.core.serving.explain import narrate_chunking, narrate_iteration, narrate_prefix, narrate_visit
from viz.core.serving.speculative import TEMPERATURE, DraftSpec, speculate, with_temperature
from viz.core.serving.workload import PREEMPTION_NOTE, ServingConfig, Sharing, workload_preset
from viz.ui import state
from viz.ui.common import md_escape

EDITED_SEED = replace(load_preset("seed"), title="The seed, retitled")
PAGE = "pages/serving.py"
SCENARIO = load_preset("seed").cache_safe()  # the app opens with the seed; the page uses its cache-safe form
DEFAULT = ServingConfig(num_blocks=32)


@pytest.fixture
def at(app):
    """The app, switched to the Serving page."""
    app = on_page(app, PAGE)
    # a visitor's own scenario with the seed's heads: the unedited seed itself opens these pages on
    # the varied preset (tests/test_lessons_vary.py), so the seed's n-reading head is tested edited
    app.session_state[state.SCENARIO] = EDITED_SEED
    app.session_state[state.VERSION] += 1
    return rerun(app)


def section(at, name: str):
    at.segmented_control(key="serving_section").set_value(name)
    return rerun(at)


def narration(at) -> list[str]:
    """The info boxes' markdown source: narration is escaped, so the text shows exactly as the core wrote it."""
    return [i.value for i in at.info]


def test_seed_is_served_in_its_cache_safe_form(at):
    """The seed's 'last' head reads n: the page says so and serves the cache-safe form by default."""
    assert any(md_escape("'last' reads n") in text for text in narration(at))
    assert switched(at, "serving_cache_safe_switch")
    flip(at, "serving_cache_safe_switch", False)
    rerun(at)
    assert any("needs keys that do not depend on n" in w.value for w in at.warning)
    section(at, "FlashAttention")
    assert not at.warning  # tiles work for any head


def test_continuous_batching_shows_the_engine_numbers_and_steps(at):
    """Figures, narration and the identity check come from serve() (finishing sooner than static
    batching is good news, in green); stepping narrates the next iteration."""
    workload = workload_preset(SCENARIO, "a burst")
    continuous = serve(SCENARIO, workload, DEFAULT)
    static = serve(SCENARIO, workload, replace(DEFAULT, policy="static"))
    # in ticks, Serving's unit, and its delta once: the arrow is its sign (a student read '201' and '↓ -61')
    assert stat_value(at, "Finished after") == f"{continuous.makespan:,} ticks"
    sooner = static.makespan - continuous.makespan
    assert sooner > 0 and stat(at, "Finished after")["delta"] == {"text": f"{sooner:,} ticks",
                                                                "direction": "down", "tone": "good"}
    assert stat_value(at, "Padding rows") == f"{continuous.padding:,}"
    assert md_escape(narrate_iteration(continuous, 0)) in narration(at)
    assert any("identical, bit for bit" in s.value for s in at.success)
    at.button(key="serving_step_continuous_forward").click()
    rerun(at)
    assert md_escape(narrate_iteration(continuous, 1)) in narration(at)
    at.segmented_control(key="serving_policy").set_value("static")
    rerun(at)
    assert md_escape(narrate_iteration(static, 0)) in narration(at)


def test_settings_change_the_run_and_preemption_shows(at):
    """A small pool of small blocks makes the burst preempt; swapping is counted in bytes."""
    at.slider(key="serving_blocks").set_value(8)
    at.select_slider(key="serving_block_size").set_value(2)
    at.segmented_control(key="serving_preemption").set_value("swap")
    rerun(at)
    config = ServingConfig(num_blocks=8, block_size=2, preemption="swap")
    run = serve(SCENARIO, workload_preset(SCENARIO, "a burst"), config)
    assert run.preemptions > 0
    assert stat_value(at, "Preemptions") == f"{run.preemptions:,}"


def test_the_preemption_choice_says_when_it_changes_nothing(at):
    """With the default pool no request runs out of blocks, so 'When blocks run out' changes nothing: the
    settings fold says so (issue 32: a control that changes nothing), in every section that serves; once
    a small pool preempts, the note is gone."""
    from viz.core.serving.words import PREEMPTION_UNUSED

    def noted() -> bool:
        return any(c.value == PREEMPTION_UNUSED for c in at.caption)

    assert serve(SCENARIO, workload_preset(SCENARIO, "a burst"), DEFAULT).preemptions == 0 and noted()
    for name in ("Chunked prefill", "Prefix caching"):
        section(at, name)
        assert noted(), name
    section(at, "Continuous batching")
    at.slider(key="serving_blocks").set_value(8)
    at.select_slider(key="serving_block_size").set_value(2)
    rerun(at)
    assert stat_value(at, "Preemptions") != "0" and not noted()


def test_a_pool_too_small_is_refused_in_words(at):
    """A request that cannot fit the pool is refused with the reason; nothing raises."""
    at.slider(key="serving_blocks").set_value(4)
    at.select_slider(key="serving_block_size").set_value(1)
    rerun(at)
    assert any("the pool has 4" in e.value for e in at.error)


def test_a_bad_workload_edit_keeps_the_last_good_workload(at):
    """A request with no new tokens is refused under the table, and the page keeps serving the preset."""
    key = "serving_editor_Continuous batching_a burst"
    at.session_state[key] = {"edited_rows": {"0": {"new tokens": 0}}, "added_rows": [], "deleted_rows": []}
    rerun(at)
    assert any("new tokens must be a whole number" in e.value for e in at.error)
    workload = workload_preset(SCENARIO, "a burst")
    assert stat_value(at, "Finished after") == f"{serve(SCENARIO, workload, DEFAULT).makespan:,} ticks"
    at.session_state[key] = {"edited_rows": {"0": {"new tokens": 2}}, "added_rows": [], "deleted_rows": [1, 2, 3, 4, 5]}
    rerun(at)
    assert not at.error
    requests = next(d.value for d in at.table if "words" in d.value.columns)
    assert requests["request"].tolist() == ["R1"] and requests["words"].iloc[0].count(" ") == 1


def test_chunked_prefill_section_narrates_the_trade(at):
    """The chunked-prefill line is the engine's comparison for the long request."""
    section(at, "Chunked prefill")
    workload = workload_preset(SCENARIO, "one long prompt, four short")
    whole = serve(SCENARIO, workload, DEFAULT)
    chunked = serve(SCENARIO, workload, replace(DEFAULT, chunk_size=8))
    assert md_escape(narrate_chunking(whole, chunked, 3)) in narration(at)
    at.select_slider(key="serving_chunk").set_value(16)
    rerun(at)
    assert md_escape(narrate_chunking(whole, serve(SCENARIO, workload, replace(DEFAULT, chunk_size=16)), 3)) in narration(at)


def test_prefix_caching_section_counts_what_it_saved(at):
    """Tokens reused and keys not recomputed are the engine's counts."""
    section(at, "Prefix caching")
    workload = workload_preset(SCENARIO, "a shared system prompt")
    off = serve(SCENARIO, workload, DEFAULT)
    on = serve(SCENARIO, workload, replace(DEFAULT, prefix_caching=True))
    assert stat_value(at, "Prompt tokens reused") == f"{on.prefix_hits:,}"
    assert stat_value(at, "Keys not recomputed") == f"{off.work.keys_encoded - on.work.keys_encoded:,}"
    assert md_escape(narrate_prefix(off, on, len(SCENARIO.heads))) in narration(at)


def test_views_say_how_vllm_preempts_and_which_sharing_they_show(at):
    """Continuous batching says current vLLM preempts by recomputation (swap was V0's); the prefix caching
    section names the sharing system it shows (the sentences are the core's)."""
    assert md_escape(PREEMPTION_NOTE) in [c.value for c in at.caption]
    section(at, "Prefix caching")
    assert md_escape(Sharing.PREFIX_CACHING.sentence) in [c.value for c in at.caption]


def test_speculative_section_toy_and_real(at):
    """The toy's output and acceptance are speculate()'s; the real model runs and says it matches itself."""
    section(at, "Speculative decoding")
    sampled = replace(SCENARIO, sampling=with_temperature(SCENARIO.sampling, TEMPERATURE))  # the toy opens sampling
    run = speculate(sampled, 24, 4, DraftSpec("fewer heads", heads=2))
    assert any(" ".join(run.words) in m.value for m in at.markdown)
    assert stat_value(at, "Target passes") == f"{run.target_passes:,}"
    at.segmented_control(key="serving_draft").set_value("prompt lookup")
    rerun(at)
    lookup = speculate(sampled, 24, 4, DraftSpec("prompt lookup", ngram=1))
    assert stat_value(at, "Target passes") == f"{lookup.target_passes:,}"
    at.slider(key="serving_toy_temperature").set_value(0.0)  # greedy: the target's own words, word for word
    rerun(at)
    greedy = speculate(SCENARIO, 24, 4, DraftSpec("prompt lookup", ngram=1))
    assert any(f"identical to the target alone): {' '.join(greedy.words)}" in m.value for m in at.markdown)
    at.segmented_control(key="serving_spec_model").set_value("real model")
    rerun(at)
    assert any("identical to the target alone" in m.value for m in at.markdown)
    at.segmented_control(key="serving_real_draft").set_value("another model")
    rerun(at)
    assert any("llama" in m.value and "identical to the target alone" in m.value for m in at.markdown)
    at.text_input(key="serving_real_prompt").set_value("")
    rerun(at)
    assert any("empty" in e.value for e in at.error)


def test_flash_section_steps_through_the_tiles(at):
    """The tile narration and the largest difference are flash_attention()'s; a tile too small for the length is refused."""
    section(at, "FlashAttention")
    tokens, values = sequence(SCENARIO, 32)
    run = flash_attention(SCENARIO, 8, 8, tokens=tokens, values=values)
    assert md_escape(narrate_visit(run, 0, 0)) in narration(at)
    at.button(key="serving_tile_forward").click()
    rerun(at)
    assert md_escape(narrate_visit(run, 1, 0)) in narration(at)
    assert stat_value(at, "Largest |tiled − naive|") == f"{run.max_abs_diff:.2g}"
    at.slider(key="serving_flash_tokens").set_value(128)
    at.select_slider(key="serving_tile_q").set_value(1)
    at.select_slider(key="serving_tile_k").set_value(1)
    rerun(at)
    assert any("choose larger tiles" in e.value for e in at.error)


# the kinds of element a visitor sets (what a section's controls are), as AppTest names them
CONTROLS = ("ButtonGroup", "Selectbox", "Slider", "SelectSlider", "TextInput", "Toggle", "Expander")


def in_page_order(node) -> list:
    """The main area's elements in the order a phone stacks them (columns stack in their order): the
    page's tree depth first."""
    found = [node]
    for key in sorted(getattr(node, "children", None) or {}):
        found += in_page_order(node.children[key])
    return found


@pytest.mark.parametrize("shown", ["Continuous batching", "Chunked prefill", "Prefix caching",
                                   "Speculative decoding", "FlashAttention"])
def test_each_section_opens_with_its_step_control_then_its_figure(at, shown):
    """Outside presenter mode, in page order (a 390 × 844 phone's stacking), the section picker is
    followed by the step control and the lesson figure; the section's controls (workload, settings,
    tiles, draft) come after the figure, beside it at a desk, so they never push the step control
    and the figure below a phone's first screen (issue 32: the step control was at 602 px and the
    timeline at 874 px of 844), and before the iteration's table."""
    if shown != "Continuous batching":
        section(at, shown)
    order = in_page_order(at.main)
    kinds = [type(e).__name__ for e in order]
    picker = next(i for i, e in enumerate(order) if getattr(e, "label", None) == "Show")
    step = next(i for i, e in enumerate(order) if kinds[i] == "SelectSlider" and str(e.label).startswith("Step"))
    figure = next(i for i in range(step, len(order))
                  if kinds[i] == "UnknownElement" and type(order[i].proto).__name__ == "PlotlyChart")
    assert [str(order[i].label) for i in range(picker + 1, figure) if kinds[i] in CONTROLS and i != step] == []
    later = [str(order[i].label) for i in range(figure, len(order)) if kinds[i] in CONTROLS]
    assert len(later) >= 2, f"the section's controls are on the page, after its figure: {later}"
    if "Workload" in later:  # a phone reaches the workload before the iteration's table, not after it
        workload = next(i for i, e in enumerate(order) if getattr(e, "label", None) == "Workload")
        assert workload < kinds.index("Table"), "the iteration's table comes after the controls"
