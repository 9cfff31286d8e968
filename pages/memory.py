"""Memory: the toy's cache in paged blocks shared between sequences, then evicted and quantised."""

import streamlit as st

from viz.core.serving.compress import (GROUP_SIZES, MAX_PREDICTIONS, QMAX, SCALE_MODES, CacheSpec, EvictionPolicy,
                                       window_limit)
from viz.figures import memory as figures
from viz.figures.base import Stat
from viz.core.scale.memory import format_bytes
from viz.core.serving.paged import MAX_BLOCK_SIZE, sharing_refusal, variants
from viz.core.serving.sequence import Request
from viz.core.engine.scenario import MAX_DECODE_STEPS, ScenarioError
from viz.core.engine.presets import varied_opening
from viz.core.lessons import words_memory as words
from viz.core.lessons.memory import CompressView, PagedView, compress_view, paged_view
from viz.core.lessons.papers import Lesson
from viz.ui import state
from viz.ui.common import (beside_in_presenter_mode, defined_caption, held_switch, md_escape, page_lead, plot,
                           sections, stepper, terms_caption)
from viz.ui.board import board
from viz.ui.widgets import stats, table

state.require_frame()
BLOCK_SIZE = "memory_block_size"
STEPS = "memory_steps"
RESERVE = "memory_reserve"
SHARE = "memory_share"
CACHE_SAFE = "memory_cache_safe"
SNAPSHOT = "memory_snapshot"
METHOD = "memory_method"
EVICT_STEPS = "memory_evict_steps"
WINDOW = "memory_window"  # these three depend on the prompt's length: keyed per scenario version
SINKS = "memory_sinks"
DROP = "memory_drop"
BITS = "memory_bits"
SCALES = "memory_scales"
GROUP = "memory_group"
RESIDUAL = "memory_residual"
PREDICTION = "memory_prediction"
PROMPT = "memory_prompt_{}"  # a variant's prompt, per sequence name
MAX_STEPS = MAX_PREDICTIONS
METHODS = ("Sliding window", "Sinks + window", "Drop by hand", "Quantise")
KEEP = "page"  # only the shown section is built: its widgets keep their values while the other is shown
SECTION = "memory_tab"
SECTIONS = ("Paged blocks", "Eviction and quantisation")

page_lead("memory")
opening = varied_opening(state.scenario(), "Memory")
scenario = opening.scenario


def why(lesson: Lesson) -> None:
    """A lesson from the papers, folded: the page's "Why it matters"."""
    with st.expander(lesson.title):
        st.markdown("\n\n".join(md_escape(p) for p in lesson.paragraphs))


def paged() -> None:
    # shown in this order, filled in the order they are needed: the controls that drive the pool
    # and the pool itself first, the prompts and the reservation folded below
    controls, lesson, wide = beside_in_presenter_mode()  # presenter mode: the controls beside the pool
    below = st.container()
    settings = below.expander("Prompts and the contiguous reservation", icon=":material/tune:")
    paged_scenario = scenario
    refusal = sharing_refusal(scenario)
    if refusal:  # a footnote with its fix: the lesson needs cache-safe heads to share blocks
        with below:
            st.info(md_escape(refusal), icon=":material/info:")
            if held_switch(words.CACHE_SAFE, CACHE_SAFE, True):
                paged_scenario = scenario.cache_safe()
    cols = [controls] * 3 if state.presenter() else controls.columns(3)
    block_size = cols[0].select_slider("Block size (tokens)", [b for b in (1, 2, 4, 8, 16, 32) if b <= MAX_BLOCK_SIZE],
                                       value=4, key=BLOCK_SIZE, persist_state=KEEP)
    steps = cols[1].slider("Predictions per sequence", 1, MAX_STEPS, 4, key=STEPS, persist_state=KEEP)
    share = held_switch("Share common prefixes", SHARE, True, place=cols[2])
    reserve = settings.slider("Contiguous: new tokens reserved", MAX_STEPS, MAX_DECODE_STEPS, 32, key=RESERVE,
                              persist_state=KEEP, help=words.RESERVE_HELP)

    defaults = variants(paged_scenario, steps)
    requests = [defaults[0]]
    settings.markdown(words.scenario_prompt(paged_scenario.tokens, md_escape))
    for default in defaults[1:]:
        text = settings.text_input(f"Prompt {default.name}", value=" ".join(default.tokens),
                                   key=state.widget_key(PROMPT.format(default.name)), persist_state=KEEP,
                                   help=words.PROMPT_HELP)
        try:
            variant = paged_scenario.with_prompt(text)
            requests.append(Request.of(default.name, variant, steps))
        except ScenarioError as err:
            controls.error(words.prompt_refused(default.name, err.message, md_escape), icon=":material/error:")
            requests.append(default)
    with lesson:
        pooled(paged_view(paged_scenario, requests, steps, block_size, reserve, share, format_bytes), wide,
               notes=controls if state.presenter() else None,
               settings=(paged_scenario, tuple(requests), block_size, reserve, share))


def pooled(view: PagedView, wide: float = 1.0, notes=None, settings: object = None) -> None:
    """The paged pool stepped through its scheduler iterations, then what it saved (``wide``: the
    share of the main column it is drawn in; ``notes``: where the narration goes when not above the
    pool, as beside it in presenter mode; ``settings``: what it was made from, new ones open the pool
    again at the view's opening iteration)."""
    if view.grant_note:
        st.warning(view.grant_note, icon=":material/hourglass_top:")
    run, names = view.run, list(view.names)
    snapshot_index = stepper(SNAPSHOT, len(run.snapshots) - 1, words.ITERATION_STEP, first=0,
                             opening=view.opening, run=settings,
                             format_label=view.labels.__getitem__, help=words.ITERATION_STEP_HELP)
    snapshot = run.snapshots[snapshot_index]
    (notes or st).info(md_escape(view.narrations[snapshot_index]), icon=":material/record_voice_over:")
    pool = figures.pool_board(run, snapshot, names)
    drawn = pool or figures.pool_figure(run, snapshot, names)  # blocks wider than cell text: Plotly, which zooms
    if pool is None:
        plot(drawn, key="memory_pool", share=wide)
    else:
        board(pool, key="memory_pool")
    st.caption(md_escape(view.key))  # who the legend's sequences are
    terms_caption(drawn)
    defined_caption(md_escape(view.system))
    st.markdown(words.PAGED_INTRO)
    st.markdown(words.BLOCK_TABLES)
    table(figures.block_table_frame(snapshot, names), words.BLOCK_TABLES_CAPTION, key="memory_block_tables")
    table(figures.sequences_frame(run), words.SEQUENCES_CAPTION, key="memory_sequences")

    contiguous, never, paged_help, shared = view.helps
    stats([Stat("Contiguous reservation", view.contiguous, help=contiguous),
           Stat("Never filled", view.never_filled, help=never),
           Stat("Paged blocks in use", view.paged, help=paged_help),
           Stat("Shared, stored once", view.shared, help=shared)],
          words.WASTE_TITLE, key="memory_waste_stats")
    board(figures.waste_board(run.waste, view.reserve), key="memory_waste")
    why(view.lesson)
    if view.check:
        st.success(view.check, icon=":material/check_circle:")


def compress() -> None:
    # shown in this order, filled in the order they are needed: the section's one sentence, the controls
    # and the stepped attention (the lesson figure) first; the numbers, outputs and other figures below
    st.markdown(words.COMPRESS_LEAD)
    controls, lesson, wide = beside_in_presenter_mode()  # presenter mode: the controls beside the figure
    below = st.container()
    method = controls.segmented_control("Method", METHODS, default=METHODS[0], key=METHOD, persist_state=KEEP,
                                        required=True, wrap=True)  # wraps in presenter mode's narrow column
    n = len(scenario.tokens)
    kivi = method == "Quantise" and st.session_state.get(SCALES) == "KIVI"  # two more controls, in the same row
    count = 5 if kivi else 3
    cols = [controls] * count if state.presenter() else controls.columns(count)
    evict_steps = cols[0].slider("Predictions", 1, MAX_STEPS, 6, key=EVICT_STEPS, persist_state=KEEP)
    try:
        spec = cache_spec(method, cols, n)
        view = compress_view(scenario, evict_steps, spec, method == "Quantise", format_bytes, md_escape)
    except ValueError as err:
        controls.error(md_escape(str(err)), icon=":material/error:")
        st.stop()

    if view.grant_note:
        controls.warning(view.grant_note, icon=":material/hourglass_top:")
    with below:
        st.markdown(words.COMPRESS_INTRO)
        against_full(view)
    with lesson:
        inspect_prediction(view, wide, below, settings=(scenario, evict_steps, spec))
    with below:
        if view.lesson is not None:
            why(view.lesson)
        if view.note:
            st.caption(view.note)


def cache_spec(method: str, cols, n: int) -> CacheSpec:
    """The smaller cache the visitor sets up: its method's own controls, beside the predictions (KIVI's
    two more in ``cols[3:]``, one row of five, so the figure below still fits the first screen)."""
    if method == "Quantise":
        bits = cols[1].segmented_control("Bits", list(QMAX), default="int8", key=BITS, persist_state=KEEP,
                                         required=True)
        scales = cols[2].segmented_control("Scales", SCALE_MODES, default="per-token", key=SCALES,
                                           persist_state=KEEP,
                                           required=True, help=words.SCALES_HELP)
        group, residual = 4, 4
        if scales == "KIVI":
            cols = cols[3:] if len(cols) == 5 else cols[2].columns(2)  # the row the page made for them
            group = cols[0].select_slider("Tokens per key scale (G)", GROUP_SIZES, value=4, key=GROUP,
                                          persist_state=KEEP)
            residual = cols[1].slider("Newest tokens in full precision (R)", 0, 16, 4, key=RESIDUAL,
                                      persist_state=KEEP)
        return CacheSpec(bits=bits, scales=scales, group=group, residual=residual)
    if method == "Drop by hand":
        drop = cols[1].multiselect("Evict prompt positions", list(range(1, n + 1)), default=[min(2, n)],
                                   key=state.widget_key(DROP), persist_state=KEEP,
                                   format_func=lambda p: words.drop_label(p, scenario.tokens[p - 1]))
        return CacheSpec(EvictionPolicy(drop=frozenset(drop)))
    window = cols[1].slider("Window (recent tokens kept)", 1, window_limit(n), min(3, n),
                            key=state.widget_key(WINDOW), persist_state=KEEP)
    sinks = cols[2].slider("Sink tokens (first ones kept)", 0, n, min(1, n), key=state.widget_key(SINKS),
                           persist_state=KEEP) \
        if method == "Sinks + window" else 0
    return CacheSpec(EvictionPolicy(window=window, sinks=sinks))


def against_full(view: CompressView) -> None:
    """The smaller cache against the full one: bytes, errors, the first changed word, both outputs."""
    stats([Stat("Bytes held", view.held, delta=view.held_delta, good="down", help=view.held_help),
           Stat("Largest context error", view.context_error),
           Stat("Largest logit error", view.logit_error),
           Stat("First changed word", view.first_change)],
          words.COMPRESS_TITLE, key="memory_compress_stats")
    st.markdown(view.outputs)


def inspect_prediction(view: CompressView, wide: float, below, settings: object = None) -> None:
    """One prediction, stepped to: attention both ways (the lesson figure, ``wide``: its share of the
    main column); contexts and logits both ways, then every prediction's table, in ``below``
    (``settings``: what it was made from, new ones open it again at the view's opening prediction)."""
    comparison = view.comparison
    chosen = stepper(PREDICTION, len(comparison.steps) - 1, words.PREDICTION_STEP, first=0, opening=view.opening,
                     run=settings,
                     format_label=view.labels.__getitem__, help=words.PREDICTION_STEP_HELP)
    step = comparison.steps[chosen]
    grid = figures.attention_compare_board(step, comparison.tokens, scenario.head_names)  # fits a phone's width
    if grid is None:  # more keys than cell text fits: Plotly, which zooms
        plot(figures.attention_compare_figure(step, comparison.tokens, scenario.head_names), key="memory_attention",
             share=wide)
    else:
        board(grid, key="memory_attention")
    # what this prediction shows, under the attention (the step control and the figure keep one screen)
    st.info(md_escape(view.narrations[chosen]), icon=":material/record_voice_over:")
    with below:
        left, right = st.columns(2)
        with left:
            plot(figures.context_compare_figure(step, scenario.head_names), key="memory_context")
        with right:
            plot(figures.logits_compare_figure(step, scenario.vocab_tokens), key="memory_logits")
        table(figures.comparison_table(comparison), words.COMPARISON_CAPTION, key="memory_comparison_table")
        plot(figures.bytes_figure(comparison), key="memory_bytes")


sections(SECTIONS, SECTION, (paged, compress))  # only the shown section is computed and sent
if opening.note:  # why the page opens on another scenario: under the lesson, not above it
    st.caption(md_escape(opening.note))
