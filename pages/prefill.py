"""Prefill: the whole prompt in one parallel pass, stage by stage.

One lesson screen on top (the position stepper, what each head does there, the attention heatmap
around that query, the keys and values prefill writes into the cache, and the next word); every
stage, head and table in tabs below. The stepper and everything it drives run in one fragment.
"""

import streamlit as st

from viz.core.engine.division import divisions_by_zero
from viz.core.engine.explain import explain_position, fmt, no_match_rows
from viz.core.lessons.lesson import make_window, prefill_frame
from viz.core.engine.presets import matching_preset
from viz.figures import toy
from viz.figures.base import figure_table
from viz.figures.board import attention_board, contexts_board, fits
from viz.ui import guard, state
from viz.ui.common import (division_notices, folded, head_picker, lazy_tabs, lesson_header, lesson_screen,
                           lesson_tables, md_escape, plot, stepper, whole_switch)
from viz.ui.board import board
from viz.ui.widgets import grid, table
from viz.ui.runs import decode_traces

state.require_frame()
HEAD = "prefill_head"
POSITION = state.PREFILL_POSITION  # class mode sets it too
WHOLE = "prefill_whole"  # whether Whole is on (its switch: WHOLE + "_switch")
TAB = "prefill_tab"
EVERY_HEAD_COLUMNS = 2  # heads side by side in "Every head" (cells wide enough for their numbers)
TABS = ("Every head", "Stages of one head", "Tokens and mask", "From context to word", "Figures as tables")


@guard.fragment
def prefill_lesson() -> None:
    """The prefill view: stepper, lesson screen and tabs, rerun alone on every click inside it."""
    scenario = state.scenario()
    traces, _ = decode_traces(scenario, 0, ("kv",))  # the session's kv run: prefill and its prediction
    trace = traces["kv"]
    pre = trace.prefill
    n = len(pre.tokens)
    heads = scenario.head_names
    st.session_state.setdefault(POSITION, state.position())  # a share link's position, on the first run
    position = stepper(POSITION, n, "Query position", format_label=lambda i: f"{i} · {pre.tokens[i - 1]}")
    state.set_position(position)
    rows = explain_position(trace, position - 1)
    head = state.head()
    st.info(f"**{md_escape(pre.tokens[position - 1])}** (position {position}) sees "
            f"{md_escape(', '.join(pre.tokens[:position]))}. " + md_escape(rows[head].text),
            icon=":material/record_voice_over:")
    division_notices(divisions_by_zero(trace))
    with st.container(horizontal=True, vertical_alignment="center"):
        head = head_picker(HEAD)
        whole = whole_switch(WHOLE, "Show every row and key, not only those around the position")
    frame = prefill_frame(trace, position, head, whole=whole)
    # the positions either side, computed by the same prefill: the board draws them at the click
    turns = tuple((prefill_frame(trace, p, head, whole=whole) if 1 <= p <= n else None, f"{POSITION}_{way}")
                  for p, way in ((position + 1, "forward"), (position - 1, "back")))
    lesson_screen(frame, heads, head, turns=turns)

    lazy_tabs(TABS, TAB, (lambda: every_head(trace, position, whole, rows, frame, head),
                          lambda: stages(trace, head, position),
                          lambda: tokens_and_mask(trace), lambda: to_word(trace), lambda: lesson_tables(frame, heads)))


def every_head(trace, position: int, whole: bool, rows, frame, head: int) -> None:
    """What each head does at the position (``rows``: explain_position there), and every head's
    weights; ``frame`` is the lesson screen's, for head ``head`` (every head's window is the same)."""
    pre = trace.prefill
    # one element for the sentence and its list: each element is more work for the browser
    st.markdown(f"**{md_escape(pre.tokens[position - 1])}** (position {position}) sees "
                f"{md_escape(', '.join(pre.tokens[: position]))}:\n\n"
                + "\n".join(f"- {md_escape(row.text)}" for row in rows))
    n = len(pre.tokens)
    heads = trace.scenario.head_names
    window = make_window(n, n, position - 1, centre=True, whole=whole)
    multiples = lambda: toy.small_multiples(trace, position - 1, window)  # noqa: E731
    contexts = contexts_board(trace, position - 1, whole)
    if contexts is None or not fits(frame):  # Whole too large for cell text: Plotly, which zooms and pans
        plot(multiples(), key="multiples", table=True)
        plot(toy.contexts_figure(trace, position - 1), key="contexts", table=True)
        return
    frames = [frame if h == head else prefill_frame(trace, position, h, whole=whole) for h in range(len(heads))]
    for column, h in grid(len(heads), EVERY_HEAD_COLUMNS):
        with column:
            board(attention_board(frames[h], heads[h]), key=f"every_head_{h}")
    board(contexts, key="every_head_contexts")

    def as_tables() -> None:
        for fig in (multiples(), toy.contexts_figure(trace, position - 1)):
            st.dataframe(figure_table(fig), hide_index=True, width="stretch", height=240)

    folded("As tables", "every_head_tables", as_tables)


def stages(trace, head: int, position: int) -> None:
    pre = trace.prefill
    rule = trace.scenario.heads[head].rule
    st.markdown(f"Head **{md_escape(trace.scenario.head_names[head])}**, rule {md_escape(rule)} · "
                + ("keys can be cached" if trace.cacheable[head] else "**reads n: its keys change as the sequence "
                                                                       "grows, so they cannot be cached**"))
    if pre.q[head].abs().sum() > 0:
        plot(toy.qk_figure(trace, head), key="qk", table=True)
    else:
        st.info("This rule compares the query with the key (it reads q), so there is no single K row per "
                "key: each score is +√d_k where the rule holds for that (query, key) pair and −√d_k "
                "where it does not.", icon=":material/compare_arrows:")
    stages_ = list(toy.STAGES)
    for pair in (stages_[:2], stages_[2:]):  # row by row, so a phone stacks them in pipeline order
        for col, stage in zip(st.columns(2), pair):
            with col:
                plot(toy.stage_figure(trace, head, stage, position - 1), key=f"stage_{stage}", table=True)


def tokens_and_mask(trace) -> None:
    left, right = st.columns([2, 3])
    with left:
        table(toy.positions_table(trace, "value V"), toy.POSITIONS_LABEL, key="prefill_tokens")
    with right:
        plot(toy.causal_mask_figure(trace), key="mask", table=True)


def to_word(trace) -> None:
    pre = trace.prefill
    scenario = trace.scenario
    step = trace.steps[0]
    s = scenario.sampling
    st.markdown(f"The context of the last position, {md_escape(pre.tokens[-1])}, is "
                f"[{', '.join(fmt(float(c)) for c in step.context)}]; multiplied by W_vocab it gives one "
                "logit per word.")
    table(toy.vocab_table(trace), toy.VOCAB_LABEL, key="prefill_vocab")
    plot(toy.prediction_figure(trace), key="prediction", table=True)
    settings_text = (f"{s.strategy}, temperature {fmt(s.temperature)}, "
                     f"top-k {s.top_k or 'off'}, top-p {fmt(s.top_p) if s.top_p < 1 else 'off'}"
                     + (f", seed {s.seed}" if s.strategy == "sample" else ""))
    st.markdown(f"Sampling: {settings_text} → **{md_escape(step.token)}** "
                f"(p = {float(step.probs[step.sample.index]):.3f}). The Decode page appends it and goes on.")
    no_match(trace)


def no_match(trace) -> None:
    """Rows where nothing matches: softmax still attends, evenly; said with this scenario's numbers."""
    cases = no_match_rows(trace)
    if not cases:
        return
    with st.container(border=True):
        st.markdown("#### When nothing matches, softmax still attends to something")
        for row in cases[:8]:
            share = ("its only visible key gets all the weight" if row.visible == 1
                     else f"the {row.visible} visible keys get {fmt(row.weight_each)} each")
            st.markdown(f"- head **{md_escape(row.head)}** at **{md_escape(row.query)}**: no visible key "
                        f"matches, every score is −√d_k, so {share} → context {fmt(row.context)}")
        if len(cases) > 8:
            st.caption(f"… and {len(cases) - 8} more rows like these.")
        first = cases[0]
        st.markdown(
            "Softmax turns scores into weights that always add up to 1, so a row cannot give weight to "
            f"*nothing*. Prose may say 'none' for such a row (head {md_escape(first.head)} at "
            f"'{md_escape(first.query)}'), but the computation spreads the weight evenly and gives "
            f"{fmt(first.context)}. Real models learn to park unwanted attention on a harmless token "
            "instead (an *attention sink*).")


lesson_header("Prefill", "The whole prompt goes through attention in one batched pass: every query row at "
                         "once, with the causal mask hiding the future.")
if not state.presenter():
    opened = state.scenario()
    if matching_preset(opened):
        st.markdown(f"**{md_escape(opened.title)}** · {md_escape(opened.description)}")
    else:
        st.caption("A custom scenario: edited in the sidebar, opened from a file or a link.")
    st.caption(f"{len(opened.tokens)} tokens · d_k = {opened.d_k} · scores are ±√d_k = ±{fmt(opened.d_k ** 0.5)}")
prefill_lesson()
