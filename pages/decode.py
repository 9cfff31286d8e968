"""Decode: one token at a time, with and without the KV cache.

One lesson screen on top (the step controls, the stale-cache warning when there is one, the
narration, the attention heatmap on its newest rows, the KV cache and the next word, or while the
stale head is shown, in the next word's place, that head's cache against recomputation); the rest in
sections below, one shown at a time. Everything a Step changes runs in one fragment, so a click
reruns the decode view, not the sidebar and the frame. Every number and sentence the view shows
comes from one core call (viz.core.lessons.decode.decode_view), its fixed prose from
viz.core.lessons.words_decode.
"""

import streamlit as st

from viz.core.engine.model import MODES
from viz.core.engine.scenario import MAX_DECODE_STEPS
from viz.core.lessons import words_decode as words
from viz.core.lessons.decode import DecodeView, decode_modes, decode_view
from viz.core.lessons.lesson import replay as replay_of
from viz.figures import lesson as lesson_figures
from viz.figures.stale import stale_figure
from viz.figures import toy
from viz.figures.base import Stat
from viz.figures.board import stale_board
from viz.ui import classroom, guard, state
from viz.ui.board import BACK_KEYS_HELP, STEP_KEYS_HELP, lesson_keys, step_bar
from viz.ui.common import (defined_caption, division_notices, folded, head_picker, held_switch, labelled,
                           lesson_header, lesson_screen, lesson_tables, md_escape, plot, sections, whole_switch)
from viz.ui.widgets import stats, table
from viz.ui.runs import decode_traces, kept_view

state.require_frame()
HORIZON = "decode_horizon"  # the furthest step reached, so the timeline can scrub back and forth
TIMELINE = "decode_timeline"
RUN_N = "decode_run_n"  # the run-size choice's key
RUN_SIZE = "decode_run_size"  # the tokens Run generates (kept while other pages show)
RUN_SIZES = (2, 4, 8, 16, 32)  # the Run button's choices of tokens
# The timeline shows once this many tokens have been generated: over 0–1 or 0–2 it is Back and Step
# again, and Streamlit's slider brings ~130 KB of script files (moment, numbro) that cost a link to an
# early step ~100 ms of its first view (docs/performance.md)
TIMELINE_FROM = 3
HEAD = "decode_head"
MODE_PICKER = "decode_mode_picker"
WHOLE = "decode_whole"  # whether Whole is on (its switch: WHOLE + "_switch")
CUMULATIVE = "decode_cumulative"
SECTION = "decode_tab"
COMPARE_FOLD = "decode_compare_open"  # whether the head-by-head comparison table's fold is open
NUMBERS_FOLD = "decode_numbers_open"  # whether the fold of the cache's and the check's figures is open
STEP, BACK = "decode_step", "decode_back"  # the buttons' keys: the board draws the next step at their click
STEP_LABEL, BACK_LABEL = "Step", "Back"  # their names (a phone's step bar over the board says them too)
SECTIONS = ("Cache vs recompute", "Work", "Text and table", "Replay in the browser", "Figures as tables")
FIX = words.FIX_LABEL


def go_to(step: int) -> None:
    state.set_step(step)
    st.session_state[HORIZON] = max(st.session_state.get(HORIZON, 0), state.step())


def reset() -> None:
    state.set_step(0)
    st.session_state[HORIZON] = 0


def set_run_size(size: int) -> None:
    st.session_state[RUN_SIZE] = size


def ends(step: int) -> tuple[bool, bool]:
    """Whether ``step`` is the first (Back is off) and the last (Step and Run are off)."""
    return step == 0, step >= MAX_DECODE_STEPS


def controls(step: int) -> None:
    """Reset, Back, Step (and the lesson's keys), Run n and the timeline, in one row that wraps on a
    narrow screen."""
    first, last = ends(step)
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button("Reset", icon=":material/restart_alt:", on_click=reset,
                  disabled=first and st.session_state[HORIZON] == 0)
        st.button(BACK_LABEL, icon=":material/arrow_back:", on_click=go_to, args=(step - 1,),
                  disabled=first, help=f"One step back ({BACK_KEYS_HELP})", key=BACK)
        st.button(STEP_LABEL, icon=":material/arrow_forward:", on_click=go_to, args=(step + 1,), type="primary",
                  disabled=last, help=f"Generate one more token ({STEP_KEYS_HELP})", key=STEP)
        run_n = st.session_state.setdefault(RUN_SIZE, 8)
        st.segmented_control("Tokens to run", RUN_SIZES, required=True, label_visibility="collapsed",
                             help=words.RUN_SIZE_HELP, **state.bound(RUN_N, run_n, set_run_size))
        st.button(f"Run {run_n}", icon=":material/fast_forward:", on_click=go_to, args=(state.step_after(run_n),),
                  disabled=last, help=words.run_help(run_n))
        horizon = st.session_state[HORIZON]
        if horizon >= TIMELINE_FROM:
            st.slider("Timeline (tokens generated)", 0, horizon, format=f"%d of {horizon}",
                      label_visibility="collapsed", width=240,
                      help=words.TIMELINE_HELP,
                      **state.bound(TIMELINE, step, state.set_step))
        lesson_keys(STEP, BACK)  # → PageDown Space press Step, ← PageUp Back, whatever has focus (draws nothing)


@guard.fragment
def decode_lesson() -> None:
    """The decode view: controls, lesson screen and sections, rerun alone on every click inside it."""
    scenario = state.scenario()
    step = state.step()
    st.session_state[HORIZON] = max(st.session_state.get(HORIZON, 0), step)
    section = st.session_state.get(SECTION) or SECTIONS[0]
    head, whole = state.head(), st.session_state.get(WHOLE, False)  # what the choices below show
    mode = state.mode()  # the view is worked out once for every session at this step and these choices
    view = kept_view(scenario, step, decode_modes(mode, section == "Work"), (mode, head, whole),
                     lambda traces, grants, following: decode_view(traces, grants, following, step, mode, head, whole))

    # the controls, the narration and the choices close together, so the lesson screen below fits
    # 1280 × 720 in presenter mode. A student's screen that follows the teacher's shows the lesson as
    # the projector does: no controls, choices or sections of its own ("Explore on my own" brings them)
    own = not classroom.following()
    with st.container(gap="xsmall"):
        if own:
            controls(step)
        for note in view.budget_notes:
            st.warning(note, icon=":material/hourglass_top:")
        narration = md_escape(view.narration)
        if view.warnings:  # the key moment of the page: beside the narration, right under Step
            said, warned = st.columns(2, gap="xsmall")
            said.info(narration, icon=":material/record_voice_over:")
            warned.warning(" ".join(md_escape(w) for w in view.warnings), icon=":material/warning:")
        else:
            st.info(narration, icon=":material/record_voice_over:")
        division_notices(list(view.divisions))
        if own:
            choices(scenario, view)
    lesson_screen(view.frame, list(view.heads), head, newest_key=view.newest_key,
                  turns=((view.after, STEP), (view.before, BACK)) if own else (),
                  beside={step: stale_board(lesson) for step, lesson in view.beside.items()},
                  steps=step_bar(STEP, BACK, (BACK_LABEL, STEP_LABEL), *ends(step)) if own else ())
    if view.repeat:  # a side note, under the lesson: never pushing it down
        st.caption(md_escape(view.repeat))
    if not own:
        return
    sections(SECTIONS, SECTION, (lambda: compare(view), lambda: work(view),
                                 lambda: text_and_table(view), lambda: replay(view, scenario, head),
                                 lambda: lesson_tables(view.frame, list(view.heads))))


def choices(scenario, view: DecodeView) -> None:
    """The choices of what is shown (head, Whole, run), each picker's label at its left, and the
    stale-cache warning's buttons at the row's end (not a row of their own: the lesson screen below fits
    1280 × 720), without icons: with them the row was wider than 1280 × 720 in presenter mode."""
    with st.container(horizontal=True, vertical_alignment="center", gap="xsmall"):
        head_picker(HEAD)
        whole_switch(WHOLE, words.WHOLE_HELP, view.frame.window)
        with labelled(words.MODE_PICKER, words.MODE_HELP):
            st.segmented_control(words.MODE_PICKER, MODES, format_func=words.MODE_SHORT.get, required=True,
                                 label_visibility="collapsed",
                                 **state.bound(MODE_PICKER, state.mode(), state.set_mode))
        if view.warnings:
            if st.button(FIX, help=words.FIX_HELP):
                state.set_scenario(scenario.cache_safe())
                st.rerun(scope="app")  # the sidebar's editors show the rules, so the whole app reruns
            if not view.stale_shown:
                st.button(md_escape(view.stale.button), on_click=state.set_head,
                          args=(view.stale.head,), help=words.SHOW_HEAD_HELP)


def compare(view: DecodeView) -> None:
    """Why each head agrees or not, in words first; the figures and the head-by-head table in folds,
    built when opened: this section is shown on a new visitor's first view, where st.metric would bring
    script files of its own (Vega's loader among them) and st.table about 1 MB of Arrow's."""
    if view.compared_note:
        st.caption(view.compared_note)
    for text in view.head_texts:
        st.markdown(md_escape(text))
    if view.stale_shown:  # the side by side with every key (the lesson screen shows the latest five)
        plot(stale_figure(view.stale), key="decode_stale")
    if view.cache_info:
        st.info(md_escape(view.cache_info), icon=":material/info:")
    if view.agreed:
        st.success(view.agreed, icon=":material/check_circle:")
    folded(words.NUMBERS, NUMBERS_FOLD, icon=":material/pin:", body=lambda: numbers(view))
    folded(toy.COMPARISON_LABEL, COMPARE_FOLD, icon=":material/table:",
           body=lambda: table(toy.comparison_table(view.check), toy.COMPARISON_LABEL, key="decode_compare"))


def numbers(view: DecodeView) -> None:
    cache = view.cache
    stats([Stat("Entries", cache.entries, delta=cache.entries_delta),
           Stat("Bytes held (K + V)", cache.nbytes), Stat("Bytes reserved", cache.reserved),
           Stat("Times it grew", cache.grew, help=words.GROWTH_HELP)],
          "The KV cache", key="decode_cache_stats")
    defined_caption(cache.per_entry)
    stats([Stat("Largest |difference| in the context", view.gap),
           Stat("Same next word?", view.check.same_token)], "KV cache against recomputation",
          key="decode_check_stats")


def work(view: DecodeView) -> None:
    # kept while another section is shown (only the shown one is built)
    cumulative = held_switch("Sum over the steps so far", CUMULATIVE, False)
    if view.work_plotted:
        plot(toy.work_figure(dict(view.traces), cumulative), key="work", table=True)
    st.caption(view.work_caption)


def replay(view: DecodeView, scenario, head: int) -> None:
    """Every step reached so far, sent once: the slider replays them without asking the server."""
    horizon = st.session_state[HORIZON]
    if horizon == 0:
        st.caption(words.REPLAY_FIRST)
        return
    mode = view.shown.mode
    run = decode_traces(scenario, horizon, (mode,))[0][mode]  # already computed: nothing new is run
    replayed = replay_of(run, head)
    st.caption(words.replay_caption(replayed.first, replayed.last, toy.MODE_NAMES[mode],
                                    md_escape(view.heads[head])))
    plot(lesson_figures.replay_figure(list(replayed.frames), view.heads[head]), key="replay")


def text_and_table(view: DecodeView) -> None:
    text = view.transcript  # the last word is only chosen
    st.markdown(words.transcript_line(md_escape(" ".join(text.prompt)), [md_escape(t) for t in text.generated],
                                      md_escape(text.next_token)))
    st.dataframe(toy.generated_table(view.shown), hide_index=True, width="stretch", height="content",
                 column_config={"p": st.column_config.ProgressColumn("p", min_value=0.0, max_value=1.0,
                                                                     format="%.3f", width="medium")})


lesson_header(words.TITLE, words.LEAD)
decode_lesson()
