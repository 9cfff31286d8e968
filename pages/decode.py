"""Decode: one token at a time, with and without the KV cache."""

import streamlit as st

from viz.core.engine import MODE_LABELS, MODES
from viz.core.explain import check_cache, narrate_step
from viz.figures import toy
from viz.core.scenario import MAX_DECODE_STEPS
from viz.ui import state
from viz.ui.runs import decode_traces
from viz.ui.common import header, md_escape, plot

state.require_frame()
HORIZON = "decode_horizon"  # the furthest step reached, so the timeline can scrub back and forth
TIMELINE = "decode_timeline"
RUN_N = "decode_run_n"
HEAD = "decode_head"
CUMULATIVE = "decode_cumulative"


def go_to(step: int) -> None:
    state.set_step(step)
    st.session_state[HORIZON] = max(st.session_state.get(HORIZON, 0), state.step())


def on_timeline() -> None:
    state.set_step(st.session_state[TIMELINE])


def reset() -> None:
    state.set_step(0)
    st.session_state[HORIZON] = 0


scenario = state.scenario()
step = state.step()
st.session_state[HORIZON] = max(st.session_state.get(HORIZON, 0), step)
traces, grants = decode_traces(scenario, step)
kv, full = traces["kv"], traces["recompute"]
shown = traces[state.mode()]
shown_step = len(shown.steps) - 1  # the step asked for, or as far as the work budget let this mode go

header("Decode", "One new token at a time: its query attends to every key so far. With a KV cache "
                 "only the new token's key and value are computed; without one, everything is redone.")

# One row that wraps instead of cutting labels short (presenter mode's large type, narrow screens).
with st.container(horizontal=True, vertical_alignment="bottom"):
    st.button("Reset", icon=":material/restart_alt:", on_click=reset,
              disabled=step == 0 and st.session_state[HORIZON] == 0)
    st.button("Back", icon=":material/arrow_back:", on_click=go_to, args=(step - 1,), shortcut="left",
              disabled=step == 0, help="One step back (←)")
    st.button("Step", icon=":material/arrow_forward:", on_click=go_to, args=(step + 1,), shortcut="right",
              type="primary", disabled=step >= MAX_DECODE_STEPS, help="Generate one more token (→)")
    run_n = st.number_input("Tokens to run", 1, MAX_DECODE_STEPS, 8, key=RUN_N, width=170)
    st.button("Run", icon=":material/fast_forward:", on_click=go_to, args=(step + run_n,),
              disabled=step >= MAX_DECODE_STEPS, help=f"Generate {run_n} more tokens")
if st.session_state[HORIZON] > 0:
    st.session_state[TIMELINE] = step
    st.slider("Timeline (tokens generated)", 0, st.session_state[HORIZON], key=TIMELINE, on_change=on_timeline)

for note in dict.fromkeys(g.note for g in grants.values() if g.note):
    st.warning(note, icon=":material/hourglass_top:")
st.info(narrate_step(shown, shown_step), icon=":material/record_voice_over:")

st.subheader("The text so far")
prompt_text = " ".join(shown.tokens[: len(scenario.tokens)])
generated = shown.tokens[len(scenario.tokens): len(scenario.tokens) + shown_step]  # the last one is only chosen
st.markdown(f"{md_escape(prompt_text)} " + " ".join(f"**:blue-background[{md_escape(t)}]**" for t in generated)
            + f" → next: **:orange-background[{md_escape(shown.steps[shown_step].token)}]**")
mode = st.segmented_control("Show the run", list(MODES), format_func=lambda m: toy.MODE_NAMES[m],
                            default=state.mode(), required=True, key="decode_mode_picker",
                            help="\n".join(f"- **{toy.MODE_NAMES[m]}**: {MODE_LABELS[m]}" for m in MODES))
if mode != state.mode():
    state.set_mode(mode)
    st.rerun()

left, right = st.columns([3, 2])
with left:
    heads = scenario.head_names
    if st.session_state.get(HEAD) not in heads:
        st.session_state[HEAD] = heads[0]
    head = heads.index(st.segmented_control("Head", heads, key=HEAD, required=True))
    plot(toy.growing_attention_figure(shown, head), key="growing")
    st.caption("Each decode step adds one query row. Gold outline: the newest query. "
               + ("Red cell: the key written to the cache this step; the rest of that row is read from "
                  "the cache." if state.mode() == "kv" else "Without a cache every key in that row was "
                                                            "computed again."))
with right:
    plot(toy.prediction_figure(shown, shown_step), key="prediction")
    st.dataframe(toy.generated_table(shown), hide_index=True, width="stretch", height=240,
                 column_config={"p": st.column_config.ProgressColumn("p", min_value=0.0, max_value=1.0,
                                                                     format="%.3f")})

st.subheader("The KV cache")
cache = kv.cache
metrics = st.columns(4)
metrics[0].metric("Entries", len(cache), delta=1 if len(kv.steps) > 1 else None)
metrics[1].metric("Bytes held (K + V)", f"{cache.nbytes:,}")
metrics[2].metric("Bytes reserved", f"{cache.allocated_nbytes:,}")
metrics[3].metric("Times it grew", cache.growth_events, help="The buffers double when full, so growing is rare.")
plot(toy.cache_figure(kv), key="cache")
st.caption(f"Per entry: {len(heads)} heads × d_k = {scenario.d_k} key numbers plus 1 value, "
           f"{cache.element_size} bytes each. Gold outline: the newest entry.")

st.subheader("KV cache against recomputation")
compared = min(len(kv.steps), len(full.steps)) - 1  # the latest step both runs reached
if compared < step:
    st.caption(f"Compared at step {compared}, the latest step the recomputed run reached.")
check = check_cache(kv, full, compared)
a, b = st.columns(2)
a.metric("Largest |difference| in the context", f"{check.max_gap:.3g}")
b.metric("Same next word?", "yes" if check.same_token else "no")
st.dataframe(toy.comparison_table(check), hide_index=True, width="stretch")
if check.differing:
    for head in check.differing:
        st.warning(head.text, icon=":material/warning:")
    st.button("Fix: make every head cache-safe (n → q.pos)", icon=":material/build:",
              on_click=lambda: state.set_scenario(scenario.cache_safe()))
elif not all(kv.cacheable):
    st.info("A head reads n, but at this step the stale keys do not change its context yet. Step on.",
            icon=":material/info:")
else:
    st.success("Every head is cacheable, so the KV cache gives exactly what recomputation gives, "
               "with far less work.", icon=":material/check_circle:")

st.subheader("Work per step, counted by the engine")
cumulative = st.toggle("Sum over the steps so far", key=CUMULATIVE)
if step == 0:
    st.caption("Step forward to see decode work; prefill did "
               f"{kv.prefill.attention.counts.scores:,} scores for all {len(scenario.tokens)} prompt tokens.")
else:
    plot(toy.work_figure(traces, cumulative), key="work")
    last = {m: t.steps[compared].counts for m, t in traces.items()}
    st.caption(f"At length {kv.steps[compared].seq_len}: keys encoded {last['recompute'].keys_encoded:,} without a "
               f"cache vs {last['kv'].keys_encoded:,} with it (n per token, so n² in total, against 1 per "
               f"token, n in total); query-key scores {last['recompute'].scores:,} for a full recompute vs "
               f"{last['kv'].scores:,}; multiply-adds {last['recompute'].multiply_adds:,} vs "
               f"{last['kv'].multiply_adds:,}.")
