"""Memory: the toy's cache in paged blocks shared between sequences, then evicted and quantised."""

from dataclasses import replace

import streamlit as st

from viz.core.serving.compress import (GROUP_SIZES, MAX_PREDICTIONS, QMAX, SCALE_MODES, CacheSpec, EvictionPolicy,
                                       compare_with_full, window_limit)
from viz.figures import memory as figures
from viz.figures.base import Stat
from viz.core.scale.memory import format_bytes
from viz.core.serving.paged import MAX_BLOCK_SIZE, decode_together, same_outputs, sharing_refusal, variants
from viz.core.serving.sequence import Request
from viz.core.engine.budget import grant_compare, grant_paged
from viz.core.engine.scenario import MAX_DECODE_STEPS, ScenarioError
from viz.core.engine.presets import varied_opening
from viz.core.lessons.papers import Lesson, eviction_lesson, paged_lesson
from viz.core.lessons.pool import pool_narration, sequences_key
from viz.ui import state
from viz.ui.common import beside_in_presenter_mode, lazy_tabs, md_escape, page_lead, plot, stepper, terms_caption
from viz.ui.board import board
from viz.ui.widgets import stats, table

state.require_frame()
BLOCK_SIZE = "memory_block_size"
STEPS = "memory_steps"
RESERVE = "memory_reserve"
SHARE = "memory_share"
CACHE_SAFE = "memory_cache_safe"
SNAPSHOT = "memory_snapshot"
SNAPSHOT_COUNT = "memory_snapshot_count"  # iterations in the last run: a new run starts at its end
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
KEEP = "page"  # the tabs build only the open one: its widgets keep their values while the other is shown
TAB = "memory_tab"
TABS = ("Paged blocks", "Eviction and quantisation")

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
            if st.toggle("Use the cache-safe form of those heads on this page", value=True, key=CACHE_SAFE,
                         persist_state=KEEP):
                paged_scenario = scenario.cache_safe()
    cols = [controls] * 3 if state.presenter() else controls.columns(3)
    block_size = cols[0].select_slider("Block size (tokens)", [b for b in (1, 2, 4, 8, 16, 32) if b <= MAX_BLOCK_SIZE],
                                       value=4, key=BLOCK_SIZE, persist_state=KEEP)
    steps = cols[1].slider("Predictions per sequence", 1, MAX_STEPS, 4, key=STEPS, persist_state=KEEP)
    share = cols[2].toggle("Share common prefixes", value=True, key=SHARE, persist_state=KEEP)
    reserve = settings.slider("Contiguous: new tokens reserved", MAX_STEPS, MAX_DECODE_STEPS, 32, key=RESERVE,
                              persist_state=KEEP,
                              help="A contiguous cache must reserve room for the longest answer it allows.")

    defaults = variants(paged_scenario, steps)
    requests = [defaults[0]]
    settings.markdown(f"**A** (the scenario): {md_escape(' '.join(paged_scenario.tokens))}")
    for default in defaults[1:]:
        text = settings.text_input(f"Prompt {default.name}", value=" ".join(default.tokens),
                                   key=state.widget_key(PROMPT.format(default.name)), persist_state=KEEP,
                                   help="Words it shares with an earlier prompt from the start can share blocks.")
        try:
            variant = paged_scenario.with_prompt(text)
            requests.append(Request.of(default.name, variant, steps))
        except ScenarioError as err:
            controls.error(f"Prompt {default.name}: {md_escape(err.message)} — using the default prompt.",
                           icon=":material/error:")
            requests.append(default)
    with lesson:
        pooled(paged_scenario, requests, steps, block_size, reserve, share, wide,
               notes=controls if state.presenter() else None)


def pooled(paged_scenario, requests, steps: int, block_size: int, reserve: int, share: bool,
           wide: float = 1.0, notes=None) -> None:
    """The paged pool stepped through its scheduler iterations, then what it saved (``wide``: the
    share of the main column it is drawn in; ``notes``: where the narration goes when not above the
    pool, as beside it in presenter mode)."""
    grant = grant_paged(paged_scenario, [len(r.tokens) for r in requests], steps, block_size, reserve)
    if grant.note:
        st.warning(grant.note, icon=":material/hourglass_top:")
    requests, reserve = [replace(r, max_new_tokens=grant.granted) for r in requests], grant.reserve
    run = decode_together(paged_scenario, requests, block_size, share_prefix=share, max_new_tokens=reserve)
    names = [s.name for s in run.sequences]

    if st.session_state.get(SNAPSHOT_COUNT) != len(run.snapshots):
        st.session_state[SNAPSHOT_COUNT] = len(run.snapshots)
        st.session_state[SNAPSHOT] = len(run.snapshots) - 1
    snapshot_index = stepper(SNAPSHOT, len(run.snapshots) - 1, "Scheduler iteration", first=0,
                             format_label=lambda i: run.snapshots[i].label)
    snapshot = run.snapshots[snapshot_index]
    (notes or st).info(md_escape(pool_narration(run, snapshot_index)), icon=":material/record_voice_over:")
    pool = figures.pool_board(run, snapshot, names)
    drawn = pool or figures.pool_figure(run, snapshot, names)  # blocks wider than cell text: Plotly, which zooms
    if pool is None:
        plot(drawn, key="memory_pool", share=wide)
    else:
        board(pool, key="memory_pool")
    st.caption(md_escape(sequences_key(run)))  # who the legend's sequences are
    terms_caption(drawn)
    st.caption(md_escape(run.system.sentence))
    st.markdown("A contiguous cache reserves room for the longest answer a request might give. "
                "PagedAttention (vLLM) instead hands out fixed-size **blocks** as tokens arrive; each "
                "sequence's **block table** maps its logical blocks to physical ones anywhere in the pool, "
                "and prompts with a common prefix **share** its blocks, counted by reference.")
    st.markdown("**Block tables** (logical block → physical block)")
    table(figures.block_table_frame(snapshot, names), "Block tables: each sequence's logical blocks and the "
          "physical blocks they map to", key="memory_block_tables")
    table(figures.sequences_frame(run), "The sequences: prompts, what they share, what they generate",
          key="memory_sequences")

    waste = run.waste
    stats([Stat("Contiguous reservation", format_bytes(waste.nbytes(waste.contiguous_slots)),
                help=f"{waste.contiguous_slots} slots: each prompt + {reserve} new tokens."),
           Stat("Never filled", format_bytes(waste.nbytes(waste.contiguous_waste)),
                help=f"{waste.contiguous_waste} reserved slots the answers did not need."),
           Stat("Paged blocks in use", format_bytes(waste.nbytes(waste.paged_slots)),
                help=f"{waste.paged_slots} slots in {waste.paged_blocks} blocks; "
                     f"{waste.fragmentation} of them empty at the ends of blocks."),
           Stat("Shared, stored once", f"{waste.shared} tokens",
                help=f"{format_bytes(waste.nbytes(waste.shared))} that prefix sharing did not store twice.")],
          "Memory for these sequences", key="memory_waste_stats")
    board(figures.waste_board(waste, reserve), key="memory_waste")
    why(paged_lesson(waste.tokens, waste.contiguous_slots, waste.paged_slots, waste.block_size))
    if run.sharing and grant.compare:
        unshared = decode_together(paged_scenario, requests, block_size, share_prefix=False, max_new_tokens=reserve)
        verdict = "identical" if same_outputs(run, unshared) else "DIFFERENT"
        st.success(f"Every word, context and logit with shared blocks is {verdict} to decoding each "
                   f"sequence alone ({unshared.waste.paged_slots} slots without sharing, "
                   f"{waste.paged_slots} with).", icon=":material/check_circle:")


def compress() -> None:
    st.markdown("Two more ways to shrink a cache: **evict** keys (keep a recent window, plus the first "
                "tokens as attention sinks, or drop chosen positions), or **quantise** them into fewer "
                "bits. The same tokens go through the full cache and the smaller one; compare what "
                "the query attends to, its context and the next word.")
    method = st.segmented_control("Method", METHODS, default=METHODS[0], key=METHOD, persist_state=KEEP, required=True)
    n = len(scenario.tokens)
    cols = st.columns(3)
    evict_steps = cols[0].slider("Predictions", 1, MAX_STEPS, 6, key=EVICT_STEPS, persist_state=KEEP)
    try:
        spec = cache_spec(method, cols, n)
        grant = grant_compare(scenario, evict_steps)
        comparison = compare_with_full(scenario, grant.granted, spec)
    except ValueError as err:
        st.error(md_escape(str(err)), icon=":material/error:")
        st.stop()

    if grant.note:
        st.warning(grant.note, icon=":material/hourglass_top:")
    against_full(comparison, spec, n)
    inspect_prediction(comparison, method)
    if method != "Quantise":
        why(eviction_lesson(spec.policy.sinks if spec.policy else 0, comparison.first_change))
    if method == "Quantise":
        st.caption(QUANTISE_NOTE)


def cache_spec(method: str, cols, n: int) -> CacheSpec:
    """The smaller cache the visitor sets up: its method's own controls, beside the predictions."""
    if method == "Quantise":
        bits = cols[1].segmented_control("Bits", list(QMAX), default="int8", key=BITS, persist_state=KEEP,
                                         required=True)
        scales = cols[2].segmented_control("Scales", SCALE_MODES, default="per-token", key=SCALES,
                                           persist_state=KEEP,
                                           required=True,
                                           help="per-token: one scale per key row and per value. KIVI: keys "
                                                "per channel in groups of tokens, values per token, the newest "
                                                "tokens in full precision.")
        group, residual = 4, 4
        if scales == "KIVI":
            cols = st.columns(3)
            group = cols[1].select_slider("Tokens per key scale (G)", GROUP_SIZES, value=4, key=GROUP,
                                          persist_state=KEEP)
            residual = cols[2].slider("Newest tokens in full precision (R)", 0, 16, 4, key=RESIDUAL,
                                      persist_state=KEEP)
        return CacheSpec(bits=bits, scales=scales, group=group, residual=residual)
    if method == "Drop by hand":
        drop = cols[1].multiselect("Evict prompt positions", list(range(1, n + 1)), default=[min(2, n)],
                                   key=state.widget_key(DROP), persist_state=KEEP,
                                   format_func=lambda p: f"{p} · {scenario.tokens[p - 1]}")
        return CacheSpec(EvictionPolicy(drop=frozenset(drop)))
    window = cols[1].slider("Window (recent tokens kept)", 1, window_limit(n), min(3, n),
                            key=state.widget_key(WINDOW), persist_state=KEEP)
    sinks = cols[2].slider("Sink tokens (first ones kept)", 0, n, min(1, n), key=state.widget_key(SINKS),
                           persist_state=KEEP) \
        if method == "Sinks + window" else 0
    return CacheSpec(EvictionPolicy(window=window, sinks=sinks))


def against_full(comparison, spec: CacheSpec, n: int) -> None:
    """The smaller cache against the full one: bytes, errors, the first changed word, both outputs."""
    last = comparison.steps[-1]
    saved = comparison.bytes_saved
    first = comparison.first_change
    stats([Stat("Bytes held", format_bytes(last.nbytes_compressed),
                delta=(f"-{format_bytes(saved)} vs full" if saved > 0 else
                       f"+{format_bytes(-saved)} vs full" if saved < 0 else None), good="down",
                help=f"Full cache: {format_bytes(last.nbytes_full)} after the last prediction."),
           Stat("Largest context error", f"{comparison.max_context_error:.3g}"),
           Stat("Largest logit error", f"{comparison.max_logit_error:.3g}"),
           Stat("First changed word", "none" if first is None else f"prediction {first}")],
          "The smaller cache against the full cache", key="memory_compress_stats")
    st.markdown(f"**Full cache** generates: {md_escape(' '.join(comparison.tokens[n:]))}  \n"
                f"**{md_escape(spec.label)}** generates: {md_escape(' '.join(comparison.free_tokens[n:]))}")


def inspect_prediction(comparison, method: str) -> None:
    """One prediction, stepped to: attention, contexts and logits both ways, then every prediction's table."""
    st.session_state.setdefault(PREDICTION, 1)  # the first prediction eviction can change
    chosen = stepper(PREDICTION, len(comparison.steps) - 1, "Prediction to inspect", first=0,
                     format_label=lambda k: f"{k} · after {comparison.tokens[len(comparison.steps[k].positions) - 1]}")
    step = comparison.steps[chosen]
    if chosen == 0 and method != "Quantise":
        st.caption("Prediction 0 comes from the prefill pass, which reads the whole prompt; eviction "
                   "acts on the cache, so it shows from prediction 1 on.")
    plot(figures.attention_compare_figure(step, comparison.tokens, scenario.head_names), key="memory_attention")
    left, right = st.columns(2)
    with left:
        plot(figures.context_compare_figure(step, scenario.head_names), key="memory_context")
    with right:
        plot(figures.logits_compare_figure(step, scenario.vocab_tokens), key="memory_logits")
    st.dataframe(figures.comparison_table(comparison), hide_index=True, width="stretch")
    plot(figures.bytes_figure(comparison), key="memory_bytes")


QUANTISE_NOTE = (
    "Every byte stored is counted: codes, float32 scales and the full-precision window. The toy's "
    "keys are ±1 (or 0), so both schemes store them exactly, and a per-token scale stores each "
    "token's single value exactly: here quantisation changes the bytes, not the answer. KIVI "
    "quantises keys per channel because real keys have a few large outlier channels that would "
    "swamp a per-token scale; it pays for that with one scale per channel every G tokens, so a "
    "larger G amortises them. Its values are quantised per token, and since the toy's value is one "
    "number, a value's scale costs more than its code saves. Simplified from KIVI: symmetric "
    "scales without a zero point, float32 instead of fp16 scales, and older tokens quantised in "
    "whole groups while at least the newest R stay in full precision.")


lazy_tabs(TABS, TAB, (paged, compress))  # only the open tab is computed and sent
if opening.note:  # why the page opens on another scenario: under the lesson, not above it
    st.caption(md_escape(opening.note))
