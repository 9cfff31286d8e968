"""Prefill: the whole prompt in one parallel pass, stage by stage.

One lesson screen on top (the position stepper, what each head does there, the attention heatmap
around that query, the keys and values prefill writes into the cache, and the next word); every
stage, head and table in sections below, one shown at a time. The stepper and everything it drives
run in one fragment.
"""

import streamlit as st

from viz.core.engine.presets import matching_preset
from viz.core.lessons import words_prefill as words
from viz.core.lessons.prefill import PrefillView, prefill_view
from viz.figures import toy
from viz.figures.base import figure_table
from viz.figures.board import attention_board, contexts_board, fits
from viz.ui import classroom, guard, state
from viz.ui.common import (defined_caption, division_notices, folded, head_picker, held_step, lesson_header,
                           lesson_screen, lesson_tables, md_escape, plot, sections, stepper, whole_switch)
from viz.ui.board import board
from viz.ui.widgets import grid, table
from viz.ui.runs import decode_traces

state.require_frame()
HEAD = "prefill_head"
POSITION = state.PREFILL_POSITION  # class mode sets it too
WHOLE = "prefill_whole"  # whether Whole is on (its switch: WHOLE + "_switch")
SECTION = "prefill_tab"
EVERY_HEAD_COLUMNS = 2  # heads side by side in "Every head" (cells wide enough for their numbers)
ABOUT_FOLD = "prefill_about_open"  # whether the fold about the scenario is open (built when opened)
# a prompt of up to this many tokens offers each position as a chip (its word in view, one click); a
# longer one, the slider
CHIP_POSITIONS = 6
SECTIONS = ("Every head", "Stages of one head", "Tokens and mask", "From context to word", "Figures as tables")


@guard.fragment
def prefill_lesson() -> None:
    """The prefill view: stepper, lesson screen and sections, rerun alone on every click inside it."""
    scenario = state.scenario()
    traces, _ = decode_traces(scenario, 0, ("kv",))  # the session's kv run: prefill and its prediction
    trace = traces["kv"]
    tokens = trace.prefill.tokens
    heads = scenario.head_names
    st.session_state.setdefault(POSITION, state.position())  # a share link's position, on the first run
    # a student's screen that follows the teacher's shows the lesson as the projector does: no stepper,
    # choices or sections of its own ("Explore on my own" brings them)
    own = not classroom.following()
    position = stepper(POSITION, len(tokens), words.STEP_LABEL, format_label=words.position_labels(tokens).__getitem__,
                       help=words.STEP_HELP, chips=CHIP_POSITIONS) if own else held_step(POSITION, len(tokens))
    state.set_position(position)
    # the head and Whole as their controls below hold them (a control's value is in the session before it is drawn)
    view = prefill_view(trace, position, state.head(), st.session_state.get(WHOLE, False), md_escape)
    st.info(view.narration, icon=":material/record_voice_over:")
    division_notices(list(view.divisions))
    if own:
        with st.container(horizontal=True, vertical_alignment="center"):
            head_picker(HEAD)
            whole_switch(WHOLE, words.WHOLE_HELP, view.frame.window)
    # the positions either side: the board draws them at the click
    turns = ((view.ahead, f"{POSITION}_forward"), (view.behind, f"{POSITION}_back")) if own else ()
    lesson_screen(view.frame, heads, view.head, turns=turns)
    if not own:
        return

    sections(SECTIONS, SECTION, (lambda: every_head(view), lambda: stages(view), lambda: tokens_and_mask(trace),
                                 lambda: to_word(view), lambda: lesson_tables(view.frame, heads)))


def every_head(view: PrefillView) -> None:
    """What each head does at the position, and every head's weights (every head's window is the same)."""
    trace = view.trace
    # one element for the sentence and its list: each element is more work for the browser
    st.markdown(view.every_head)
    heads = trace.scenario.head_names
    multiples = lambda: toy.small_multiples(trace, view.index, view.window)  # noqa: E731
    contexts = contexts_board(trace, view.index, view.whole)
    if contexts is None or not fits(view.frame):  # Whole too large for cell text: Plotly, which zooms and pans
        plot(multiples(), key="multiples", table=True)
        plot(toy.contexts_figure(trace, view.index), key="contexts", table=True)
        return
    frames = view.frames()
    for column, h in grid(len(heads), EVERY_HEAD_COLUMNS):
        with column:
            board(attention_board(frames[h], heads[h]), key=f"every_head_{h}")
    board(contexts, key="every_head_contexts")

    def as_tables() -> None:
        for fig in (multiples(), toy.contexts_figure(trace, view.index)):
            st.dataframe(figure_table(fig), hide_index=True, width="stretch", height=240)

    folded("As tables", "every_head_tables", as_tables)


def stages(view: PrefillView) -> None:
    trace, head = view.trace, view.head
    st.markdown(view.head_rule)
    if view.qk_by_rule:
        st.info(words.QK_BY_RULE, icon=":material/compare_arrows:")
    else:
        plot(toy.qk_figure(trace, head), key="qk", table=True)
    stages_ = list(toy.STAGES)
    for pair in (stages_[:2], stages_[2:]):  # row by row, so a phone stacks them in pipeline order
        for col, stage in zip(st.columns(2), pair):
            with col:
                plot(toy.stage_figure(trace, head, stage, view.index), key=f"stage_{stage}", table=True)


def tokens_and_mask(trace) -> None:
    left, right = st.columns([2, 3])
    with left:
        table(toy.positions_table(trace, "value V"), toy.POSITIONS_LABEL, key="prefill_tokens")
    with right:
        plot(toy.causal_mask_figure(trace), key="mask", table=True)


def to_word(view: PrefillView) -> None:
    trace = view.trace
    st.markdown(view.last_context)
    table(toy.vocab_table(trace), toy.VOCAB_LABEL, key="prefill_vocab")
    plot(toy.prediction_figure(trace), key="prediction", table=True)
    st.markdown(view.sampled)
    if view.no_match:  # rows where nothing matches: softmax still attends, evenly
        with st.container(border=True):
            st.markdown(words.NO_MATCH_HEADING)
            for line in view.no_match:
                st.markdown(line)
            if view.no_match_more:
                st.caption(view.no_match_more)
            st.markdown(view.no_match_why)


def about(opened) -> None:
    """The scenario the page opened on: its title and description (or that it is a custom one), its size."""
    if matching_preset(opened):
        st.markdown(words.opened(opened.title, opened.description, md_escape))
    else:
        st.caption(words.CUSTOM)
    defined_caption(words.shape(len(opened.tokens), opened.d_k))


lesson_header(words.TITLE, words.CAPTION)
if not state.presenter():  # folded: on a phone the step control and the lesson open in the first screen
    folded(words.ABOUT, ABOUT_FOLD, lambda: about(state.scenario()), icon=":material/info:")
prefill_lesson()
