"""Prefill: the whole prompt in one parallel pass, stage by stage."""

import streamlit as st

from viz import generate
from viz.core.presets import matching_preset
from viz.core.explain import explain_position, fmt, no_match_rows
from viz.figures import toy
from viz.ui import state
from viz.ui.common import header, md_escape, plot, stepper

state.require_frame()
HEAD = "prefill_head"
POSITION = "prefill_position"

scenario = state.scenario()
trace = generate(scenario, 1)
pre = trace.prefill
n = len(pre.tokens)
heads = scenario.head_names

header("Prefill", "The whole prompt goes through attention in one batched pass: every query row at "
                  "once, with the causal mask hiding the future.")
if not state.presenter():
    if matching_preset(scenario):
        st.markdown(f"**{md_escape(scenario.title)}** · {md_escape(scenario.description)}")
    else:
        st.caption("A custom scenario: edited in the sidebar, opened from a file or a link.")

left, right = st.columns([2, 3])
with left:
    st.subheader("Tokens and values")
    st.dataframe({"position": list(range(1, n + 1)), "token": pre.tokens,
                  "value V": list(scenario.values)}, hide_index=True, width="stretch")
    st.caption(f"{n} tokens · d_k = {scenario.d_k} · scores are ±√d_k = ±{fmt(scenario.d_k ** 0.5)}")
with right:
    plot(toy.causal_mask_figure(trace), key="mask")

@st.fragment
def walk_and_stages() -> None:
    """The stepper and the head picker rerun only this part of the page (not the sidebar)."""
    st.subheader("Walk the prompt row by row")
    position = stepper(POSITION, n, "Query position", format_label=lambda i: f"{i} · {pre.tokens[i - 1]}") - 1
    st.markdown(f"**{md_escape(pre.tokens[position])}** (position {position + 1}) sees "
                f"{md_escape(', '.join(pre.tokens[: position + 1]))}:")
    for row in explain_position(trace, position):
        st.markdown(f"- {md_escape(row.text)}")
    plot(toy.small_multiples(trace, position), key="multiples")

    st.subheader("One head, stage by stage")
    if st.session_state.get(HEAD) not in heads:
        st.session_state[HEAD] = heads[0]
    head_name = st.segmented_control("Head", heads, key=HEAD, required=True)
    head = heads.index(head_name)
    rule = trace.scenario.heads[head].rule
    cacheable = trace.cacheable[head]
    st.markdown(f"Rule: `{rule.replace('`', '')}` · "
                + ("keys can be cached" if cacheable else "**reads n: its keys change as the sequence grows, "
                                                          "so they cannot be cached**"))
    if pre.q[head].abs().sum() > 0:
        plot(toy.qk_figure(trace, head), key="qk")
    else:
        st.info("This rule compares the query with the key (it reads q), so there is no single K row per "
                "key: each score is +√d_k where the rule holds for that (query, key) pair and −√d_k "
                "where it does not.", icon=":material/compare_arrows:")
    cols = st.columns(2)
    for i, stage in enumerate(toy.STAGES):
        with cols[i % 2]:
            plot(toy.stage_figure(trace, head, stage, position), key=f"stage_{stage}")
    plot(toy.contexts_figure(trace, position), key="contexts")


walk_and_stages()

cases = no_match_rows(trace)
if cases:
    with st.container(border=True):
        st.markdown("#### When nothing matches, softmax still attends to something")
        for row in cases[:8]:
            share = ("its only visible key gets all the weight" if row.visible == 1
                     else f"the {row.visible} visible keys get {fmt(row.weight_each)} each")
            st.markdown(f"- head **{md_escape(row.head)}** at **{md_escape(row.query)}**: no visible key "
                        f"matches, every score is −√d_k, so {share} → context {fmt(row.context)}")
        if len(cases) > 8:
            st.caption(f"… and {len(cases) - 8} more rows like these.")
        st.markdown(
            "Softmax turns scores into weights that always add up to 1, so a row cannot give "
            "weight to *nothing*. The article's prose says 'none' for such rows (even tokens at "
            "'Today'), but its code spreads the weight evenly and prints 10. Real models learn to park "
            "unwanted attention on a harmless token instead (an *attention sink*).")

st.subheader("From the last context to the next word")
step = trace.steps[0]
s = scenario.sampling
st.markdown(f"The context of the last position, {md_escape(pre.tokens[-1])}, is "
            f"[{', '.join(fmt(float(c)) for c in step.context)}]; multiplied by W_vocab it gives one "
            "logit per word.")
st.dataframe(toy.vocab_table(trace), hide_index=True, width="stretch")
plot(toy.prediction_figure(trace), key="prediction")
settings_text = (f"{s.strategy}, temperature {fmt(s.temperature)}, "
                 f"top-k {s.top_k or 'off'}, top-p {fmt(s.top_p) if s.top_p < 1 else 'off'}"
                 + (f", seed {s.seed}" if s.strategy == "sample" else ""))
st.markdown(f"Sampling: {settings_text} → **{md_escape(step.token)}** "
            f"(p = {float(step.probs[step.sample.index]):.3f}). The Decode page appends it and goes on.")
