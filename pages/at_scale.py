"""At scale: the KV cache of real models in bytes, counted by formula and by transformers, what fits
on GPUs, and what limits a decode step; the toy's cache beside it."""

import streamlit as st

from viz.core.scale import words
from viz.core.scale.cache_layout import layout_dtype, library_layout
from viz.core.scale.count import read_model
from viz.core.lessons.glossary import defined
from viz.core.scale.gpus import DEFAULT_GPU, GPU_BY_NAME
from viz.core.scale.memory import (DEFAULT_RESERVE_GIB, DEFAULT_UTILIZATION, DTYPE_BITS, MAX_BATCH, MAX_GPUS,
                                   MAX_TOKENS, WEIGHT_BITS)
from viz.core.scale.model_config import DEFAULT_MODEL, MAX_CONFIG_BYTES, ConfigError, preset, preset_names, preset_text
from viz.core.scale.view import ScaleInputs, scale_view
from viz.figures import memory as figures
from viz.figures import roofline as roof
from viz.figures.base import Stat
from viz.ui import state
from viz.ui.common import beside_in_presenter_mode, defined_caption, defined_markdown, md_escape, page_lead, plot
from viz.ui.runs import decode_traces
from viz.ui.widgets import stats, table

state.require_frame()
MODEL = "scale_model"
DTYPE = "scale_dtype"
TOKENS = "scale_tokens"
BATCH = "scale_batch"
COMPARE = "scale_compare"
GPU = "scale_gpu"
GPU_COUNT = "scale_gpu_count"
WEIGHTS_DTYPE = "scale_weights_dtype"
WEIGHTS_FOR = "scale_weights_for"  # the config whose checkpoint dtype the weights dtype was set from
USABLE = "scale_usable"
RESERVE = "scale_reserve"
CONFIG_TEXT = "scale_config_text"
CONFIG_FILE = "scale_config_file"
LAST_GOOD = "scale_last_good_config"  # the last config.json that worked, as a ModelConfig
LAST_PRESET = "scale_last_preset"  # the preset the config.json editor starts from
PREFILL = "scale_prefill_tokens"
TAB = "scale_tab"  # the open tab: transformers' count is laid out only while its tab is open
OWN = "Your config.json"
INPUT_PX = (200, 140, 180, 160)  # model, cache dtype, context, batch: each pair within a phone's 358 px


def as_stats(items) -> list[Stat]:
    """The core's stats (viz.core.scale.words.StatText) as a stats row's figures."""
    return [Stat(s.label, s.value, delta=s.delta, good=s.good, help=s.help) for s in items]


def _model_changed() -> None:
    name = st.session_state[MODEL]
    if name != OWN:
        st.session_state[TOKENS] = preset(name).max_context
        st.session_state[LAST_PRESET] = name
    else:
        st.session_state.setdefault(CONFIG_TEXT, preset_text(st.session_state.get(LAST_PRESET, DEFAULT_MODEL)))


def _own_config():
    """The visitor's config.json (upload or text); a refused one shows why and the last good one stays."""
    with st.expander("Your config.json", expanded=True):
        st.caption(words.OWN_CONFIG)
        st.session_state.setdefault(CONFIG_TEXT, preset_text(st.session_state.get(LAST_PRESET, DEFAULT_MODEL)))
        upload = st.file_uploader("Upload a config.json", type=["json"], key=CONFIG_FILE)
        text = st.text_area("config.json", key=CONFIG_TEXT, height=220, max_chars=MAX_CONFIG_BYTES,
                            disabled=upload is not None)
        try:
            name = f"{upload.name}" if upload is not None else OWN
            with st.spinner(words.READING_CONFIG):
                config = read_model(upload.getvalue() if upload is not None else text, name)
        except ConfigError as err:
            st.error(md_escape(words.config_refused(str(err))), icon=":material/error:")
            return st.session_state.get(LAST_GOOD) or preset(DEFAULT_MODEL)
    st.session_state[LAST_GOOD] = config
    return config


page_lead("at_scale")

st.session_state.setdefault(MODEL, DEFAULT_MODEL)
st.session_state.setdefault(TOKENS, preset(DEFAULT_MODEL).max_context)
side, body, wide = beside_in_presenter_mode()  # presenter mode: the inputs in a column beside the tabs
# presenter mode: stacked in the column beside the tabs; else one row that wraps, two inputs a row on a
# phone (four stacked columns pushed the cache curve below a phone's first screen)
row = side if state.presenter() else side.container(horizontal=True)
widths = ("stretch",) * 4 if state.presenter() else INPUT_PX
name = row.selectbox("Model", [*preset_names(), OWN], key=MODEL, on_change=_model_changed,
                     help=words.MODEL_HELP, width=widths[0])
dtype = row.selectbox("Cache dtype", list(DTYPE_BITS), index=1, key=DTYPE, help=words.DTYPE_HELP, width=widths[1])
tokens = int(row.number_input("Context length (tokens)", 1, MAX_TOKENS, key=TOKENS, step=1024, width=widths[2]))
batch = int(row.number_input("Batch (sequences)", 1, MAX_BATCH, value=1, key=BATCH, width=widths[3]))

with side:
    config = _own_config() if name == OWN else preset(name)
if st.session_state.get(WEIGHTS_FOR) != config.canonical:  # a new model starts from its checkpoint's dtype
    st.session_state[WEIGHTS_FOR] = config.canonical
    st.session_state[WEIGHTS_DTYPE] = config.weights_dtype
gpu_names = list(GPU_BY_NAME)
gpu_box = side.expander("GPU and weights", icon=":material/memory:")
row = [gpu_box] * 3 if state.presenter() else gpu_box.columns(3)
gpu = GPU_BY_NAME[row[0].selectbox("GPU", gpu_names, index=gpu_names.index(DEFAULT_GPU), key=GPU,
                                   format_func=lambda g: GPU_BY_NAME[g].label)]
gpus = int(row[1].number_input("GPUs (tensor parallel)", 1, MAX_GPUS, value=1, key=GPU_COUNT,
                               help=words.GPUS_HELP))
weights_dtype = row[2].selectbox("Weights dtype", list(WEIGHT_BITS), key=WEIGHTS_DTYPE,
                                 help=words.WEIGHTS_HELP)
# the inputs the tabs hold, as this run starts (a widget's value is in the session before it is drawn):
# every number is worked out here, so each tab is laid out in its own place, in any order
usable = st.session_state.get(USABLE, DEFAULT_UTILIZATION)
reserve = st.session_state.get(RESERVE, DEFAULT_RESERVE_GIB)
others = [n for n in preset_names() if n != config.name]
st.session_state[COMPARE] = [n for n in st.session_state.get(COMPARE, []) if n in others]  # not the model shown
toy_traces, toy_grants = decode_traces(state.scenario(), state.step(), ("kv",))  # as Decode shows it, within the budget
view = scale_view(ScaleInputs(config, tokens, dtype, batch, gpu, gpus, weights_dtype, usable, reserve,
                              tuple(st.session_state[COMPARE])), toy_traces["kv"].cache)
memory, fit = view.memory, view.fit
if view.gpus_refused:
    side.error(md_escape(view.gpus_refused), icon=":material/error:")

cache_tab, library_tab, gpu_tab, roof_tab = body.tabs(
    ["Cache memory", "transformers' own count", "On GPUs", "What limits a decode step"], key=TAB, on_change="rerun")

with gpu_tab:  # the split first (and whether the batch fits); the share it is drawn from, its inputs below
    if view.fit_alert is not None:
        kind, text = view.fit_alert
        if kind == "error":
            st.error(text, icon=":material/memory:")
        else:
            st.warning(text, icon=":material/warning:")
    plot(figures.gpu_split_figure(fit, batch), key="scale_split", share=wide)
    st.markdown(words.GPU_SHARE)
    cols = st.columns(2)
    cols[0].slider("gpu_memory_utilization", 0.5, 1.0, DEFAULT_UTILIZATION, 0.01, key=USABLE,
                   help=words.UTILIZATION_HELP)
    cols[1].number_input(words.RESERVE_LABEL, 0.0, 1024.0, DEFAULT_RESERVE_GIB,
                         0.25, key=RESERVE, help=defined(words.RESERVE_LABEL, words.RESERVE_HELP))
    stats(as_stats(view.fit_stats), words.FIT_STATS, key="scale_fit_stats")
    if view.parallel_text:
        st.info(view.parallel_text, icon=":material/info:")
    st.markdown(view.every_gpu)
    table(figures.gpu_table(list(view.fits)), words.GPU_TABLE, key="scale_gpu_table")
    st.caption(view.gpu_caption(md_escape))

with cache_tab:
    lesson = st.container()  # the curve first; what it is drawn from below it
    stats(as_stats(view.cache_stats), words.CACHE_STATS, key="scale_cache_stats")
    st.markdown(md_escape(view.formula))
    if view.beyond_context:
        st.warning(view.beyond_context_text(md_escape), icon=":material/warning:")
    st.multiselect("Compare with", others, key=COMPARE, max_selections=5)
    with lesson:
        defined_markdown(view.model_line(md_escape))  # its hover defines MHA, GQA, MLA
        plot(figures.memory_curve_figure(list(view.curves), tokens, view.curve_notes, view.capacity_bytes,
                                         config.max_context, view.curves[0][1].state_bytes), key="scale_curve",
             terms=set(), share=wide)
        st.caption(view.source_caption(md_escape))
    st.markdown(words.EVERY_DTYPE)
    table(figures.dtype_table(list(view.dtypes)), words.DTYPE_TABLE, key="scale_dtype_table")
    st.subheader(words.TOY_HEADING)
    toy = view.toy
    if toy_grants["kv"].note:
        st.warning(md_escape(toy_grants["kv"].note), icon=":material/hourglass_top:")
    st.markdown(md_escape(view.toy_sentence))
    table(figures.toy_table(toy, memory), words.TOY_TABLE, key="scale_toy_table")
    defined_caption(view.toy_caption)
    with st.expander(words.CHECKS):
        for line in view.checks:
            st.markdown(line)
        st.caption(words.KIB_NOTE)

with library_tab:
    st.markdown(words.LIBRARY)
    if not library_tab.open:
        pass  # seconds of work for a large model: only when someone looks
    elif tokens < 2:
        st.info(words.LIBRARY_SHORT, icon=":material/info:")
    else:
        try:
            with st.spinner(words.LAYING_OUT):
                layout = library_layout(config, tokens, dtype)
        except ConfigError as err:
            st.error(md_escape(str(err)), icon=":material/error:")
        else:
            stats(as_stats(words.library_stats(layout)), words.LIBRARY_STATS, key="scale_library_stats")
            if layout_dtype(dtype) != dtype:
                st.caption(words.library_dtype(dtype))
            for line in words.layout_sentences(layout):
                st.markdown(line)
            st.dataframe(figures.layout_table(layout), hide_index=True, width="stretch")
            st.caption(words.LIBRARY_BLOCKS)

with roof_tab:
    lesson = st.container()  # the picture first (whole in presenter mode's first screen), then what drives it
    prefill_tokens = int(st.number_input("Prompt length for prefill (tokens)", 1, MAX_TOKENS,
                                         value=min(tokens, config.max_context), key=PREFILL))
    sweep, overtakes, points = view.sweep, view.cache_overtakes, view.points(prefill_tokens)
    with lesson:
        plot(roof.roofline_figure(points), key="scale_roofline", share=wide)
        st.markdown(words.ROOF_INTRO)
    st.caption(view.roof_sources(md_escape))
    stats(as_stats(view.roof_stats), words.ROOF_STATS, key="scale_roof_stats")
    for line in view.roof_reading(prefill_tokens):
        st.markdown(line)
    table(roof.steps_table(points), words.STEPS_TABLE, key="scale_steps_table")
    defined_caption(words.STEPS_TABLE_NOTE)
    left, right = st.columns(2)
    with left:
        plot(roof.bytes_figure(list(sweep), overtakes), key="scale_bytes")
    with right:
        plot(roof.throughput_figure(list(sweep), view.sequences), key="scale_throughput")
    defined_caption(words.ROOF_CAVEATS)
