"""Serving: how a server decodes many requests at once, on the toy's real tensors."""

from contextlib import nullcontext
from dataclasses import replace

import pandas as pd
import streamlit as st

from viz.core.serving.flash import BLOCK_SIZES as TILE_SIZES
from viz.core.serving.flash import MAX_FLASH_TOKENS, flash_attention, traffic_sweep
from viz.core.engine.presets import sequence, varied_opening
from viz.core.scale.memory import format_bytes
from viz.core.scale.gpus import DEFAULT_GPU, gpu_named
from viz.core.real.model import SHIPPED_MODELS, RealModelError, encode, load_model
from viz.core.real.speculative import REAL_DRAFTS, speculate_real
from viz.core.serving.scheduler import same_as_alone, serve
from viz.core.engine.scenario import Sampling
from viz.core.lessons.glossary import defined
from viz.core.serving import words as say
from viz.core.serving.papers import Lesson
from viz.core.serving.view import (Stepped, batching_view, chunking_view, flash_view, prefix_view,
                                   speculation_view)
from viz.core.serving.speculative import (DRAFTS, MAX_K, MAX_SPEC_TOKENS, MAX_TEMPERATURE, DraftSpec,
                                          opening_temperature, speculate, with_temperature)
from viz.core.serving.workload import (BLOCK_SIZES, CHUNK_SIZES, LIMITS, MAX_BATCH, MAX_BLOCKS, MAX_OVERHEAD,
                               MAX_REQUESTS, PREEMPTIONS, WORKLOADS, ServingConfig, ServingError,
                               ServingRun, Workload, check_workload, make_request, serving_refusal, workload_preset)
from viz.figures import flash as flash_figs, serving as figs
from viz.figures.base import Stat, font_sizes
from viz.ui import state
from viz.ui.common import (LESSON_SHARE, SIDE_SHARE, beside_in_presenter_mode, column_px, defined_caption,
                           held_switch, md_escape, narration_beside, page_lead, plot, section_picker, stepper,
                           terms_caption)
from viz.ui.widgets import stats, table

state.require_frame()
SECTION = "serving_section"
CACHE_SAFE = "serving_cache_safe"
PRESET = "serving_preset_{}"
EDITOR = "serving_editor_{}_{}"
GOOD_WORKLOAD = "serving_good_workload_{}"  # the last workload that parsed, per section
BLOCKS = "serving_blocks"
BLOCK_SIZE = "serving_block_size"
BATCH = "serving_batch"
PREEMPTION = "serving_preemption"
OVERHEAD = "serving_overhead"
STEP = "serving_step_{}"
STEP_COUNT = "serving_step_count_{}"  # iterations of the run last stepped through: a new run starts at 1
POLICY = "serving_policy"
CHUNK = "serving_chunk"
RESULTS = "serving_results"  # this visitor's last results, each kept with the inputs that made it
MODEL = "serving_spec_model"
DRAFT = "serving_draft"
DRAFT_HEADS = "serving_draft_heads"
NGRAM = "serving_ngram"
K = "serving_k"
WORDS = "serving_words"
REAL_PROMPT = "serving_real_prompt"
REAL_DRAFT = "serving_real_draft"
REAL_TEMPERATURE = "serving_real_temperature"
TOY_TEMPERATURE = "serving_toy_temperature"
FLASH_TOKENS = "serving_flash_tokens"
TILE_Q = "serving_tile_q"
TILE_K = "serving_tile_k"
FLASH_HEAD = "serving_flash_head"
SECTIONS = ("Continuous batching", "Chunked prefill", "Prefix caching", "Speculative decoding", "FlashAttention")
SUGGESTED = {"Continuous batching": "a burst", "Chunked prefill": "one long prompt, four short",
             "Prefix caching": "a shared system prompt"}
STEPS_SIDE = 0.32  # presenter mode: the share of the controls' column when the step control is in it


@st.cache_resource(show_spinner="Loading the model…", max_entries=2)
def shipped_model(which: str):
    """A shipped model ("gpt2" or "llama"): the weights are read-only, one copy shared by every session."""
    return load_model(SHIPPED_MODELS[which][0])


def remember(name: str, inputs, compute):
    """A pure result kept in this visitor's session with the inputs that made it, so clicks that only
    step through it do not compute it again."""
    kept = st.session_state.setdefault(RESULTS, {})
    if name not in kept or kept[name][0] != inputs:
        kept[name] = (inputs, compute())
    return kept[name][1]


def why(lesson: Lesson) -> None:
    """A lesson from the papers, folded: the section's "Why it matters"."""
    with st.expander(lesson.title):
        st.markdown("\n\n".join(md_escape(p) for p in lesson.paragraphs))


def fail(err: Exception) -> None:
    st.error(md_escape(str(err)), icon=":material/error:")
    st.stop()


def workload_editor(section: str, edits) -> Workload:
    """A preset, editable as a table (folded in ``edits``, its columns sized to fit a desk's main
    column); a refused edit keeps the last workload that parsed."""
    names = list(WORKLOADS)
    preset = st.selectbox("Workload", names, index=names.index(SUGGESTED[section]), key=PRESET.format(section),
                          help=say.WORKLOAD_HELP)
    base = workload_preset(scenario, preset)
    frame = pd.DataFrame({"request": [r.name for r in base.requests], "arrives": [r.arrival for r in base.requests],
                          "prompt": [" ".join(r.tokens) for r in base.requests],
                          "new tokens": [r.max_new_tokens for r in base.requests]})
    with edits.expander(say.edit_requests(MAX_REQUESTS), expanded=False):
        edited = st.data_editor(frame, num_rows="dynamic", width="stretch", key=EDITOR.format(section, preset),
                                column_config={"request": st.column_config.TextColumn(width="small"),
                                               "arrives": st.column_config.NumberColumn("arrives (tick)", step=1,
                                                                                         width="small"),
                                               "prompt": st.column_config.TextColumn(width="large"),
                                               "new tokens": st.column_config.NumberColumn(step=1, width="small")})
    try:
        rows = edited.to_dict("records")
        requests = [make_request(scenario, str(r["request"] or "").strip(), _whole(r["arrives"]),
                                 str(r["prompt"] or ""), _whole(r["new tokens"])) for r in rows]
        workload = Workload(preset, check_workload(requests))
        st.session_state[GOOD_WORKLOAD.format(section)] = (scenario, workload)
        return workload
    except ServingError as err:
        st.error(say.refused_edit(str(err), md_escape), icon=":material/error:")
        good = st.session_state.get(GOOD_WORKLOAD.format(section))
        return good[1] if good and good[0] == scenario else base


def _whole(value) -> int:
    """A table cell as a whole number, or -1 (refused by make_request) when it is not one."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return -1
    return int(number) if number.is_integer() else -1


def server_settings() -> ServingConfig:
    with st.container(horizontal=True):  # wraps instead of squeezing (presenter type, narrow screens)
        blocks = st.slider("Blocks in the pool", 4, MAX_BLOCKS, 32, key=BLOCKS, width=220)
        size = st.select_slider("Block size (tokens)", BLOCK_SIZES, 4, key=BLOCK_SIZE, width=180)
        batch = st.slider("Sequences at once", 1, MAX_BATCH, 4, key=BATCH, width=180)
        preemption = st.segmented_control("When blocks run out", PREEMPTIONS, default=PREEMPTIONS[0],
                                          key=PREEMPTION, required=True, help=say.PREEMPTION_HELP)
        overhead = st.slider(say.OVERHEAD_LABEL, 0, MAX_OVERHEAD, 8, key=OVERHEAD, width=200,
                             help=defined(say.OVERHEAD_LABEL, say.OVERHEAD_HELP))
    return ServingConfig(num_blocks=blocks, block_size=size, max_batch=batch, preemption=preemption,
                         overhead=overhead)


def say_unused(place, runs) -> None:
    """A control that changes nothing says so: no run ran out of blocks, so the preemption choice is idle."""
    if not any(run.preemptions for run in runs):
        place.caption(say.PREEMPTION_UNUSED)


def lesson_controls(count: int, steps_beside: bool = False) -> tuple:
    """Where a section's few controls go, and its stepped lesson: in presenter mode ``count`` slots
    stacked in a narrow column beside the lesson, at its left (``steps_beside``: under a place at the
    column's top, for the step control, or the rounds' narration); at a desk the same column at the
    lesson's right, which a phone stacks under the lesson (columns stack in their order), so the
    page's sentence, the step control and the top of the figure open a phone's first screen as they
    open a desk's. Returns (the slots, their column for anything more, the place atop the column beside
    the lesson or None, the lesson's place, its share of the main column)."""
    if state.presenter() and steps_beside:  # a column wide enough for the step control's one row
        side, stage = st.columns([STEPS_SIDE, 1 - STEPS_SIDE])
        steps = side.container()  # at the top of the column, the other controls under it
        return [side.container() for _ in range(count)], side, steps, stage, 1 - STEPS_SIDE
    if state.presenter():
        side, stage, wide = beside_in_presenter_mode()
    else:
        stage, side = st.columns([LESSON_SHARE, SIDE_SHARE])
        wide = LESSON_SHARE
    return [side.container() for _ in range(count)], side, None, stage, wide


def step_through(view: Stepped, wide: float = 1.0, steps=None, below=None) -> None:
    """Stepper (in ``steps`` where given, else above), narration, timeline, memory and the table of
    one iteration of a run (``wide``: the share of the main column it is drawn in; ``below``: where
    the table goes, under the controls' column, so a phone reaches the controls before the table)."""
    run, name = view.run, view.name
    key, count = STEP.format(name), len(run.iterations)
    if st.session_state.get(STEP_COUNT.format(name)) != (count, run.config):
        st.session_state[STEP_COUNT.format(name)] = (count, run.config)
        st.session_state[key] = 1
    with steps if steps is not None else nullcontext():
        index = stepper(key, count, say.ITERATION_STEP, format_label=lambda i: view.labels[i - 1],
                        help=say.ITERATION_STEP_HELP) - 1
    # presenter mode: the narration under the step control, beside the figures, so the timeline and the
    # pool both fit a projector's first screen (1280 × 720) in the lesson's column
    (steps if steps is not None else st).info(md_escape(view.narration(index)), icon=":material/record_voice_over:")
    compact = state.presenter()
    timeline = figs.timeline_figure(run, index, view.title, legend_beside=compact, span=view.span)
    plot(timeline, key=f"serving_timeline_{name}", share=wide)
    if view.reserved:
        plot(figs.reservation_figure(run, index, compact=compact), key=f"serving_memory_{name}", share=wide)
    else:
        plot(figs.pool_figure(run, index, compact=compact), key=f"serving_memory_{name}", share=wide)
    terms_caption(timeline, set())  # under both figures: the lesson whole first
    with below if below is not None else nullcontext():
        table(figs.iteration_table(run, index), say.ITERATION_TABLE, key=f"serving_iteration_table_{name}")


def check_identical(runs: list[ServingRun]) -> None:
    """Every request of every run against decoding it alone."""
    same = [remember(f"same_{i}", (r.scenario, r.workload, r.config), lambda r=r: same_as_alone(r))
            for i, r in enumerate(runs)]
    if all(all(s) for s in same):
        st.success(say.identical(r.config.policy for r in runs[:2]), icon=":material/check_circle:")
    else:
        st.error(say.DIFFERS, icon=":material/error:")


def cache_safe_footnote(refusal: str) -> None:
    """Why the page serves the cache-safe form of some heads, and the switch back: a footnote under
    the lesson (the switch's value is read at the top of the next run)."""
    st.info(md_escape(refusal), icon=":material/info:")
    held_switch(say.CACHE_SAFE, CACHE_SAFE, True)


page_lead("serving")
opening = varied_opening(state.scenario(), "Serving")
scenario = opening.scenario
refusal = serving_refusal(scenario)
if refusal and st.session_state.get(CACHE_SAFE, True):
    scenario = scenario.cache_safe()
section = section_picker(SECTIONS, SECTION)  # the code below draws the chosen section by its name
if serving_refusal(scenario) and section != "FlashAttention":
    st.warning(say.NEEDS_CACHE_SAFE, icon=":material/warning:")
    cache_safe_footnote(refusal)
    st.stop()

if section in SUGGESTED:
    slots, side, steps, stage, wide = lesson_controls(2 if section == "Prefix caching" else 3, steps_beside=True)
    # the iteration's table and the requests' editor (folded) under the stepped lesson and its controls,
    # the main column's width, not the controls' narrow one
    below, edits = st.container(), st.container()
    with slots[-1].expander(say.SETTINGS, icon=":material/tune:"):
        config = server_settings()
        defined_caption(say.limits(LIMITS))
        unused = st.container()  # a setting the runs below never used says so here, once they are known
    with slots[0]:
        workload = workload_editor(section, edits)

if section == "Continuous batching":
    lesson = stage.container()  # the stepped lesson first; the comparison and the reading below it
    st.markdown(say.BATCHING)
    try:
        continuous = remember("continuous", (scenario, workload, config), lambda: serve(scenario, workload, config))
        static = remember("static", (scenario, workload, config),
                          lambda: serve(scenario, workload, replace(config, policy="static")))
    except ServingError as err:
        fail(err)
    say_unused(unused, (continuous, static))
    view = batching_view(continuous, static, format_bytes)
    comparison, finished, throughput, ttft, padding, preempted = view.comparison, *view.helps
    stats([Stat("Finished after", view.makespan, delta=view.makespan_delta, good="down", help=finished),
           Stat("Throughput", view.throughput, delta=view.throughput_delta, help=throughput),
           Stat("Mean TTFT", view.ttft, delta=view.ttft_delta, good="down", help=ttft),
           Stat("Padding rows", continuous.padding, delta=comparison.padding_delta, good="down", help=padding),
           Stat("Preemptions", continuous.preemptions, help=preempted)],
          say.BATCHING_STATS, key="serving_batching_stats")
    defined_caption(md_escape(view.text))
    st.caption(md_escape(view.preemption_note))
    with lesson:
        policy = slots[1].segmented_control("Step through", ["continuous", "static"], default="continuous",
                                            key=POLICY, required=True)
        step_through(view.shown(policy), wide, steps, below)
    other = view.other(policy)  # on the stepped run's time axis
    plot(figs.timeline_figure(other.run, span=other.span), key="serving_other_timeline")
    plot(figs.metrics_figure([("continuous", continuous), ("static", static)]), key="serving_metrics")
    plot(figs.utilisation_figure([("continuous", continuous), ("static", static)]), key="serving_use")
    table(figs.requests_table(continuous), say.REQUESTS_TABLE, key="serving_requests_table")
    defined_caption(say.REQUESTS_TABLE_NOTE)
    check_identical([continuous, static])

elif section == "Chunked prefill":
    chunk = slots[1].select_slider(say.CHUNK_LABEL, CHUNK_SIZES, 8, key=CHUNK,
                                   help=defined(say.CHUNK_LABEL, say.CHUNK_HELP))
    try:
        whole = remember("whole", (scenario, workload, config), lambda: serve(scenario, workload, config))
        chunked_config = replace(config, chunk_size=chunk)
        chunked = remember("chunked", (scenario, workload, chunked_config),
                           lambda: serve(scenario, workload, chunked_config))
    except ServingError as err:
        fail(err)
    say_unused(unused, (whole, chunked))
    view = chunking_view(whole, chunked)
    with stage:  # the chunked run stepped through first; what chunking changed and why below it
        step_through(view.chunked, wide, steps, below)
    st.markdown(say.CHUNKING)
    st.info(md_escape(view.narration), icon=":material/record_voice_over:")
    plot(figs.token_times_figure(list(zip(view.series, (whole, chunked))), view.longest), key="serving_token_times")
    check_identical([chunked])
    why(view.why)

elif section == "Prefix caching":
    try:
        off = remember("prefix_off", (scenario, workload, config), lambda: serve(scenario, workload, config))
        on_config = replace(config, prefix_caching=True)
        on = remember("prefix_on", (scenario, workload, on_config), lambda: serve(scenario, workload, on_config))
    except ServingError as err:
        fail(err)
    say_unused(unused, (off, on))
    view = prefix_view(off, on, len(scenario.heads))
    with stage:  # the run with the cache stepped through first; what it saved below it
        step_through(view.on, wide, steps, below)
    st.markdown(say.PREFIX)
    st.info(md_escape(view.text), icon=":material/record_voice_over:")
    defined_caption(md_escape(view.system))
    stats([Stat("Prompt tokens reused", view.saving.hits),
           Stat("Keys not recomputed", view.saving.keys_saved),
           Stat("Mean TTFT", view.ttft, delta=view.ttft_delta, good="down")],
          say.PREFIX_STATS, key="serving_prefix_stats")
    plot(figs.prefix_figure(off, on), key="serving_prefix")
    check_identical([on])

elif section == "Speculative decoding":
    slots, side, beside, stage, wide = lesson_controls(5, steps_beside=True)
    model = slots[0].segmented_control("Model", ["toy", "real model"], default="toy", key=MODEL, required=True)
    toy = model == "toy"
    kind = slots[1].segmented_control("Draft", DRAFTS if toy else REAL_DRAFTS, key=DRAFT if toy else REAL_DRAFT,
                                      default=(DRAFTS if toy else REAL_DRAFTS)[0], required=True,
                                      format_func=lambda d: "the Llama" if d == "another model" else d,
                                      help=None if toy else say.REAL_DRAFT_HELP)
    k = slots[2].slider("Guesses per round (k)", 1, MAX_K, 4, key=K)
    with slots[4].expander(say.SPEC_SETTINGS, icon=":material/tune:"):
        words = st.slider("Words to make", 2, MAX_SPEC_TOKENS, 24, key=WORDS)
        temperature = st.slider(say.TEMPERATURE_LABEL, 0.0, MAX_TEMPERATURE,
                                opening_temperature(scenario.sampling) if toy else 0.0, 0.1,
                                key=TOY_TEMPERATURE if toy else REAL_TEMPERATURE, help=say.TEMPERATURE_HELP)
    card = gpu_named(DEFAULT_GPU)  # the GPU the "Why it matters" fold speaks of
    if toy:
        if kind == "fewer heads":
            heads = slots[3].slider("Draft keeps the first … heads", 1, len(scenario.heads),
                                    max(1, len(scenario.heads) // 2), key=state.widget_key(DRAFT_HEADS))
            draft = DraftSpec(kind, heads=heads)
        else:
            draft = DraftSpec(kind, ngram=slots[3].slider("Match the last … tokens", 1, 4, 1, key=NGRAM))
        sampled = replace(scenario, sampling=with_temperature(scenario.sampling, temperature))
        try:
            run = remember("spec", (sampled, words, k, draft), lambda: speculate(sampled, words, k, draft))
        except ServingError as err:
            fail(err)
        view = speculation_view(run, md_escape, k=k, most=MAX_K, gpu=card.name, ridge=card.ridge("bf16"))
    else:
        real = shipped_model("gpt2")
        text = side.text_input("Prompt", say.DEFAULT_REAL_PROMPT, key=REAL_PROMPT, max_chars=400)
        settings = with_temperature(Sampling(), temperature)
        try:
            ids = encode(real, text).ids
            helper = shipped_model("llama") if kind == "another model" else None
            run = remember("spec_real", (text, words, k, kind, temperature),
                           lambda: speculate_real(real, ids, words, k, kind, settings=settings, draft_model=helper))
        except RealModelError as err:
            fail(err)
        view = speculation_view(run, md_escape, model=real.name, k=k, most=MAX_K, gpu=card.name,
                                ridge=card.ridge("bf16"))
    if run.rounds:
        with stage:  # the rounds stepped through first; the output, the numbers and the reading below
            index = stepper("serving_round", len(run.rounds), say.ROUND_STEP, help=say.ROUND_STEP_HELP) - 1
            plot(figs.rounds_figure(run, index, shown=figs.ROUNDS_SHOWN), key="serving_rounds", share=wide)
        # under the grid at a desk and on a phone (the grid keeps its width for the words in its cells); in
        # presenter mode atop the controls' column, beside the grid in the first screen
        (beside or stage).info(md_escape(view.narration(index)), icon=":material/record_voice_over:")
    st.markdown(say.SPECULATION)
    st.markdown(view.output)
    if toy and view.same_word:
        st.caption(say.SAME_WORD)
    stats([Stat("Guesses kept", view.acceptance, help=view.acceptance_help),
           Stat("Target passes", run.target_passes, delta=run.extra_passes, good="down", help=view.plain_passes),
           Stat("Measured time", view.time, delta=view.time_delta, good="down", help=view.time_help),
           Stat("Largest logit difference", view.logit_diff, help=say.LOGIT_HELP)],
          say.SPEC_STATS, key="serving_spec_stats")
    if run.rounds:
        plot(figs.cache_length_figure(run), key="serving_cache_length")
    table(figs.spec_table(run), say.SPEC_TABLE, key="serving_spec_table")
    defined_caption(say.SPEC_TABLE_NOTE)
    why(view.why)
    st.caption(say.SPEC_TIME)

else:
    slots, side, steps, stage, wide = lesson_controls(4, steps_beside=True)
    n = slots[0].slider("Tokens (the prompt repeated)", 1, MAX_FLASH_TOKENS, 32, key=FLASH_TOKENS,
                        help=say.FLASH_TOKENS_HELP)
    bq = slots[1].select_slider("Query tile (rows)", TILE_SIZES, 8, key=TILE_Q)
    bk = slots[2].select_slider("Key tile (columns)", TILE_SIZES, 8, key=TILE_K)
    names = scenario.head_names
    head = names.index(slots[3].selectbox("Head", names, key=state.widget_key(FLASH_HEAD)))
    tokens, values = sequence(scenario, n)
    try:
        run = remember("flash", (scenario, n, bq, bk),
                       lambda: flash_attention(scenario, bq, bk, tokens=tokens, values=values))
    except ValueError as err:
        fail(err)
    view = flash_view(run, format_bytes)
    with stage:  # the tiles stepped through first; the running sums, the bytes and the sweep below
        with steps if steps is not None else nullcontext():  # presenter mode: atop the controls' column
            index = stepper("serving_tile", len(run.visits), say.TILE_STEP, help=say.TILE_STEP_HELP) - 1
        # presenter mode: the narration under the step control, the grid the lesson column's whole width
        grid, note, share = (stage, steps, wide) if steps is not None else narration_beside(wide)
        note.info(md_escape(view.narration(index, head)), icon=":material/record_voice_over:")
        with grid:
            presenter = state.presenter()
            plot(flash_figs.flash_tiles_figure(run, index, head, names[head], plot_px=flash_figs.TILES_PX[presenter],
                                               width_px=column_px(share), text_px=font_sizes(presenter).text),
                 key="serving_tiles", share=share)
    st.markdown(say.FLASH)
    table(flash_figs.running_table(run, index, head), say.RUNNING_TABLE, key="serving_running_table")
    stats([Stat("Bytes moved, tiled", view.moved, delta=view.moved_delta, good="down", help=view.moved_help),
           Stat("Fast memory needed", view.fast, help=view.fast_help),
           Stat("Largest |tiled − naive|", view.diff, help=view.diff_help)],
          say.FLASH_STATS, key="serving_flash_stats")
    table(flash_figs.traffic_table(run), say.TRAFFIC_TABLE, key="serving_traffic_table")
    defined_caption(say.TRAFFIC_TABLE_NOTE)
    shape = (len(scenario.heads), scenario.d_k)
    points = remember("sweep", (shape, bq, bk), lambda: traffic_sweep(scenario, bq, bk))
    large = remember("sweep_large", shape, lambda: traffic_sweep(scenario, TILE_SIZES[-1], TILE_SIZES[-1]))
    plot(flash_figs.traffic_figure(points, bq, bk, large, TILE_SIZES[-1]), key="serving_traffic")
    st.caption(view.traffic_note)

if opening.note:  # why the page opens on another scenario: under the lesson, not above it
    st.caption(md_escape(opening.note))
if refusal:
    cache_safe_footnote(refusal)
