"""Decode: one token at a time, with and without the KV cache.

One lesson screen on top (the step controls, the stale-cache warning when there is one, the
narration, the attention heatmap on its newest rows, the KV cache and the next word); the rest in
tabs below. Everything a Step changes runs in one fragment, so a click reruns the decode view, not
the sidebar and the frame.
"""

import streamlit as st

from viz.core.engine.division import divisions_by_zero
from viz.core.engine.model import MODE_LABELS, MODES
from viz.core.engine.explain import check_cache, narrate_step
from viz.core.lessons.lesson import decode_frame, replay as replay_of, transcript
from viz.core.lessons.stale import cache_note, repeat_note, stale_lesson
from viz.core.engine.scenario import MAX_DECODE_STEPS
from viz.figures import lesson as lesson_figures
from viz.figures.stale import stale_figure
from viz.figures import toy
from viz.figures.base import Stat
from viz.ui import guard, state
from viz.ui.board import BACK_KEYS_HELP, STEP_KEYS_HELP, lesson_keys
from viz.ui.common import (division_notices, folded, head_picker, lazy_tabs, lesson_header, lesson_screen, lesson_tables,
                           md_escape, plot, whole_switch)
from viz.ui.widgets import stats, table
from viz.ui.runs import decode_traces, decode_traces_ahead

state.require_frame()
HORIZON = "decode_horizon"  # the furthest step reached, so the timeline can scrub back and forth
TIMELINE = "decode_timeline"
RUN_N = "decode_run_n"  # the run-size choice's key
RUN_SIZE = "decode_run_size"  # the tokens Run generates (kept while other pages show)
RUN_SIZES = (2, 4, 8, 16, 32)  # the Run button's choices of tokens
HEAD = "decode_head"
MODE_PICKER = "decode_mode_picker"
WHOLE = "decode_whole"  # whether Whole is on (its switch: WHOLE + "_switch")
CUMULATIVE = "decode_cumulative"
TAB = "decode_tab"
COMPARE_FOLD = "decode_compare_open"  # whether the head-by-head comparison table's fold is open
STEP, BACK = "decode_step", "decode_back"  # the buttons' keys: the board draws the next step at their click
TABS = ("Cache vs recompute", "Work", "Text and table", "Replay in the browser", "Figures as tables")
SHORT = {"kv": "KV cache", "recompute": "recompute", "reencode": "re-encode"}
FIX = "Fix: n → q.pos"


def go_to(step: int) -> None:
    state.set_step(step)
    st.session_state[HORIZON] = max(st.session_state.get(HORIZON, 0), state.step())


def reset() -> None:
    state.set_step(0)
    st.session_state[HORIZON] = 0


def set_run_size(size: int) -> None:
    st.session_state[RUN_SIZE] = size


def controls(step: int) -> None:
    """Reset, Back, Step (and the lesson's keys), Run n and the timeline, in one row that wraps on a
    narrow screen."""
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button("Reset", icon=":material/restart_alt:", on_click=reset,
                  disabled=step == 0 and st.session_state[HORIZON] == 0)
        st.button("Back", icon=":material/arrow_back:", on_click=go_to, args=(step - 1,),
                  disabled=step == 0, help=f"One step back ({BACK_KEYS_HELP})", key=BACK)
        st.button("Step", icon=":material/arrow_forward:", on_click=go_to, args=(step + 1,), type="primary",
                  disabled=step >= MAX_DECODE_STEPS, help=f"Generate one more token ({STEP_KEYS_HELP})", key=STEP)
        run_n = st.session_state.setdefault(RUN_SIZE, 8)
        st.segmented_control("Tokens to run", RUN_SIZES, required=True, label_visibility="collapsed",
                             help="Tokens the Run button generates", **state.bound(RUN_N, run_n, set_run_size))
        st.button(f"Run {run_n}", icon=":material/fast_forward:", on_click=go_to, args=(state.step_after(run_n),),
                  disabled=step >= MAX_DECODE_STEPS, help=f"Generate {run_n} more tokens")
        horizon = st.session_state[HORIZON]
        if horizon > 0:
            st.slider("Timeline (tokens generated)", 0, horizon, format=f"%d of {horizon}",
                      label_visibility="collapsed", width=240,
                      help="Scrub back and forth over the tokens generated so far",
                      **state.bound(TIMELINE, step, state.set_step))
        lesson_keys(STEP, BACK)  # → PageDown Space press Step, ← PageUp Back, whatever has focus (draws nothing)


@guard.fragment
def decode_lesson() -> None:
    """The decode view: controls, lesson screen and tabs, rerun alone on every click inside it."""
    scenario = state.scenario()
    step = state.step()
    st.session_state[HORIZON] = max(st.session_state.get(HORIZON, 0), step)
    tab = st.session_state.get(TAB) or TABS[0]
    # compute only what is shown: the picked mode, the two the cache check compares, and the
    # third mode only for the work chart
    wanted = {state.mode(), "kv", "recompute"} | ({"reencode"} if tab == "Work" else set())
    traces, grants, following = decode_traces_ahead(scenario, step, tuple(m for m in MODES if m in wanted))
    kv, full = traces["kv"], traces["recompute"]
    shown = traces[state.mode()]
    shown_step = len(shown.steps) - 1  # the step asked for, or as far as the work budget let this mode go
    compared = min(len(kv.steps), len(full.steps)) - 1  # the latest step both runs reached
    check = check_cache(kv, full, compared)
    stale = stale_lesson(kv, full, check)

    # the controls, the narration and the choices close together, so the lesson screen below fits
    # 1280 × 720 in presenter mode
    with st.container(gap="xsmall"):
        controls(step)
        for note in dict.fromkeys(g.note for g in grants.values() if g.note):
            st.warning(note, icon=":material/hourglass_top:")
        narration = md_escape(narrate_step(shown, shown_step))
        shown_why = stale is not None and stale.head == state.head()  # the head concerned is shown: say why
        if check.differing:  # the key moment of the page: beside the narration, right under Step
            said, warned = st.columns(2, gap="xsmall")
            said.info(narration, icon=":material/record_voice_over:")
            warned.warning(" ".join(md_escape(stale.why if shown_why and h.head == stale.name else h.summary)
                                    for h in check.differing), icon=":material/warning:")
        else:
            st.info(narration, icon=":material/record_voice_over:")
        division_notices(divisions_by_zero(shown, shown_step))

        heads = scenario.head_names
        head, whole = choices(scenario, check, stale, shown_why)
    frame = decode_frame(shown, kv, full if shown.mode == "kv" else None, shown_step, head, whole=whole)
    after, before = turns(traces, shown, shown_step, following, step, compared, head, whole)
    lesson_screen(frame, heads, head, newest_key=shown.mode == "kv",
                  turns=((after, STEP), (before, BACK)))
    if stale is not None and stale.head == head:  # the stale-cache lesson: both runs side by side, right
        plot(stale_figure(stale), key="decode_stale")  # under the screen (whole in 1920 × 1080 presenter)
    repeating = repeat_note(shown, shown_step)  # a side note, under the lesson: never pushing it down
    if repeating:
        st.caption(md_escape(repeating))

    lazy_tabs(TABS, TAB, (lambda: compare(traces, check, step, compared), lambda: work(traces, step, compared),
                          lambda: text_and_table(shown, shown_step), lambda: replay(scenario, shown.mode, head),
                          lambda: lesson_tables(frame, heads)))


def choices(scenario, check, stale, shown_why: bool) -> tuple[int, bool]:
    """The choices of what is shown (head, Whole, run), and the stale-cache warning's buttons at the
    row's end (not a row of their own: the lesson screen below fits 1280 × 720)."""
    with st.container(horizontal=True, vertical_alignment="center", gap="xsmall"):
        head = head_picker(HEAD)
        whole = whole_switch(WHOLE, "Show every row and key, not only the newest ones")
        st.segmented_control("Show the run", MODES, format_func=SHORT.get, required=True,
                             label_visibility="collapsed",
                             help="\n".join(f"{SHORT[m]}: {MODE_LABELS[m]}" for m in MODES),
                             **state.bound(MODE_PICKER, state.mode(), state.set_mode))
        if check.differing:
            if st.button(FIX, icon=":material/build:",
                         help="Make every head cache-safe: each rule's n becomes q.pos"):
                state.set_scenario(scenario.cache_safe())
                st.rerun(scope="app")  # the sidebar's editors show the rules, so the whole app reruns
            if not shown_why:
                st.button(md_escape(stale.button), icon=":material/visibility:", on_click=state.set_head,
                          args=(stale.head,),
                          help="Show that head's attention and cache below, with the recomputed run beside it")
    return head, whole


def turns(traces, shown, shown_step: int, following, step: int, compared: int, head: int, whole: bool):
    """The frames a Step or a Back click shows next, sent now so the board draws them at the click
    (the rerun the click starts then brings the same numbers with the narration); None where there
    is none to send."""
    kv, full = traces["kv"], traces["recompute"]
    after = None
    if following is not None and shown_step == step < MAX_DECODE_STEPS:
        ahead = following[shown.mode]
        after = decode_frame(ahead, following["kv"], following["recompute"] if shown.mode == "kv" else None,
                             step + 1, head, whole=whole)
    # the step before only when the recomputed run reached this step: then both the early frame and
    # the one the server shows after Back compare the cache at that step
    before = (decode_frame(shown, kv, full if shown.mode == "kv" else None, shown_step - 1, head, whole=whole)
              if 0 < shown_step == step and (shown.mode != "kv" or compared >= step) else None)
    return after, before


def compare(traces, check, step: int, compared: int) -> None:
    kv = traces["kv"]
    cache = kv.cache
    stats([Stat("Entries", len(cache), delta=1 if len(kv.steps) > 1 else None),
           Stat("Bytes held (K + V)", cache.nbytes), Stat("Bytes reserved", cache.allocated_nbytes),
           Stat("Times it grew", cache.growth_events, help="The buffers double when full, so growing is rare.")],
          "The KV cache", key="decode_cache_stats")
    st.caption(f"Per entry: {len(kv.scenario.heads)} heads × d_k = {kv.scenario.d_k} key numbers plus 1 value, "
               f"{cache.element_size} bytes each.")
    if compared < step:
        st.caption(f"Compared at step {compared}, the latest step the recomputed run reached.")
    stats([Stat("Largest |difference| in the context", f"{check.max_gap:.3g}"),
           Stat("Same next word?", check.same_token)], "KV cache against recomputation", key="decode_check_stats")
    # folded, built when opened: st.table brings about 1 MB of Arrow script to the view that shows one
    # first, and this tab is open on a new visitor's first view
    folded(toy.COMPARISON_LABEL, COMPARE_FOLD, icon=":material/table:",
           body=lambda: table(toy.comparison_table(check), toy.COMPARISON_LABEL, key="decode_compare"))
    if check.differing:
        for head in check.differing:
            st.markdown(md_escape(head.text))
    elif not all(kv.cacheable):
        st.info(md_escape(cache_note(check, kv.cacheable)), icon=":material/info:")
    else:
        st.success("Every head is cacheable, so the KV cache gives exactly what recomputation gives, "
                   "with far less work.", icon=":material/check_circle:")


def work(traces, step: int, compared: int) -> None:
    kv = traces["kv"]
    # kept while another tab is open (the tabs build only the open one)
    cumulative = st.toggle("Sum over the steps so far", key=CUMULATIVE, persist_state="page")
    if step == 0:
        st.caption("Step forward to see decode work; prefill did "
                   f"{kv.prefill.attention.counts.scores:,} scores for all {len(kv.scenario.tokens)} prompt tokens.")
        return
    plot(toy.work_figure(traces, cumulative), key="work", table=True)
    last = {m: t.steps[min(compared, len(t.steps) - 1)].counts for m, t in traces.items()}
    st.caption(f"At length {kv.steps[compared].seq_len}: keys encoded {last['recompute'].keys_encoded:,} without a "
               f"cache vs {last['kv'].keys_encoded:,} with it (n per token, so n² in total, against 1 per "
               f"token, n in total); query-key scores {last['recompute'].scores:,} for a full recompute vs "
               f"{last['kv'].scores:,}; multiply-adds {last['recompute'].multiply_adds:,} vs "
               f"{last['kv'].multiply_adds:,}.")


def replay(scenario, mode: str, head: int) -> None:
    """Every step reached so far, sent once: the slider replays them without asking the server."""
    horizon = st.session_state[HORIZON]
    if horizon == 0:
        st.caption("Step forward first: the replay holds every step computed so far.")
        return
    run = decode_traces(scenario, horizon, (mode,))[0][mode]  # already computed: nothing new is run
    replayed = replay_of(run, head)
    st.caption(f"Steps {replayed.first}–{replayed.last} of the {toy.MODE_NAMES[mode]} run, head "
               f"'{md_escape(scenario.head_names[head])}': drag the slider; the browser redraws each step "
               "from numbers it already has.")
    plot(lesson_figures.replay_figure(list(replayed.frames), scenario.head_names[head]), key="replay")


def text_and_table(shown, shown_step: int) -> None:
    text = transcript(shown, shown_step)  # the last word is only chosen
    st.markdown(f"{md_escape(' '.join(text.prompt))} "
                + " ".join(f"**:blue-background[{md_escape(t)}]**" for t in text.generated)
                + f" → next: **:orange-background[{md_escape(text.next_token)}]**")
    st.dataframe(toy.generated_table(shown), hide_index=True, width="stretch", height=300,
                 column_config={"p": st.column_config.ProgressColumn("p", min_value=0.0, max_value=1.0,
                                                                     format="%.3f", width="medium")})


lesson_header("Decode", "One new token at a time: its query attends to every key so far. With a KV cache "
                        "only the new token's key and value are computed; without one, everything is redone.")
decode_lesson()
