"""At scale: the KV cache of real models in bytes, counted by formula and by transformers, what fits
on GPUs, and what limits a decode step; the toy's cache beside it."""

import streamlit as st

from viz.core.scale.cache_layout import layout_dtype, library_layout
from viz.core.scale.count import read_model
from viz.core.scale.gpus import DEFAULT_GPU, GPU_BY_NAME
from viz.core.scale.memory import (DEFAULT_RESERVE_GIB, DEFAULT_UTILIZATION, DTYPE_BITS, KIB, MAX_BATCH, MAX_GPUS,
                                   MAX_TOKENS, WEIGHT_BITS, cache_memory, format_bytes, latent_note)
from viz.core.scale.model_config import (ATTENTION_LABELS, DEFAULT_MODEL, MAX_CONFIG_BYTES, ConfigError, preset,
                                         preset_names, preset_text)
from viz.core.scale.view import ScaleInputs, scale_view
from viz.figures import memory as figures
from viz.figures import roofline as roof
from viz.figures.base import Stat
from viz.ui import state
from viz.ui.common import beside_in_presenter_mode, md_escape, page_lead, plot
from viz.ui.runs import decode_traces
from viz.ui.widgets import stats
from viz.ui.tables import header_widths

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
        st.caption("Paste or upload a Hugging Face config.json (at most 64 KiB). transformers reads it with its own "
                   "configuration class and builds the model on the meta device (shapes only, nothing "
                   "downloaded, no code from the file run).")
        st.session_state.setdefault(CONFIG_TEXT, preset_text(st.session_state.get(LAST_PRESET, DEFAULT_MODEL)))
        upload = st.file_uploader("Upload a config.json", type=["json"], key=CONFIG_FILE)
        text = st.text_area("config.json", key=CONFIG_TEXT, height=220, max_chars=MAX_CONFIG_BYTES,
                            disabled=upload is not None)
        try:
            name = f"{upload.name}" if upload is not None else OWN
            with st.spinner("Reading the config with transformers…"):
                config = read_model(upload.getvalue() if upload is not None else text, name)
        except ConfigError as err:
            st.error(f"{md_escape(str(err))} — showing the last configuration that worked.", icon=":material/error:")
            return st.session_state.get(LAST_GOOD) or preset(DEFAULT_MODEL)
    st.session_state[LAST_GOOD] = config
    return config


page_lead("at_scale")

st.session_state.setdefault(MODEL, DEFAULT_MODEL)
st.session_state.setdefault(TOKENS, preset(DEFAULT_MODEL).max_context)
side, body, wide = beside_in_presenter_mode()  # presenter mode: the inputs in a column beside the tabs
top = [side] * 4 if state.presenter() else side.columns([3, 2, 2, 2])
name = top[0].selectbox("Model", [*preset_names(), OWN], key=MODEL, on_change=_model_changed,
                        help="Published config.json files shipped with kvlab, or your own.")
dtype = top[1].selectbox("Cache dtype", list(DTYPE_BITS), index=1, key=DTYPE,
                         help="Bytes per cached number: 4, 2, 1, 1, ½, ¼. Quantised caches also store scales, "
                              "not counted here (the Memory page counts them for the toy).")
tokens = int(top[2].number_input("Context length (tokens)", 1, MAX_TOKENS, key=TOKENS, step=1024))
batch = int(top[3].number_input("Batch (sequences)", 1, MAX_BATCH, value=1, key=BATCH))

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
                               help="One copy of the model split over this many GPUs, as vLLM's "
                                    "--tensor-parallel-size does."))
weights_dtype = row[2].selectbox("Weights dtype", list(WEIGHT_BITS), key=WEIGHTS_DTYPE,
                                 help="Starts at what a server loads: the format the config's quantization_config "
                                      "names (DeepSeek-V3 fp8; gpt-oss MXFP4, 4.25 bits, for its experts only), else "
                                      "16 bits: vLLM's --dtype auto serves a float32 checkpoint in 16 bits too.")
# the inputs the tabs hold, as this run starts (a widget's value is in the session before it is drawn):
# every number is worked out here, so each tab is laid out in its own place, in any order
usable = st.session_state.get(USABLE, DEFAULT_UTILIZATION)
reserve = st.session_state.get(RESERVE, DEFAULT_RESERVE_GIB)
others = [n for n in preset_names() if n != config.name]
st.session_state[COMPARE] = [n for n in st.session_state.get(COMPARE, []) if n in others]  # not the model shown
toy_traces, toy_grants = decode_traces(state.scenario(), state.step(), ("kv",))  # as Decode shows it, within the budget
view = scale_view(ScaleInputs(config, tokens, dtype, batch, gpu, gpus, weights_dtype, usable, reserve,
                              tuple(st.session_state[COMPARE])), toy_traces["kv"].cache)
memory, fit, gpus = view.memory, view.fit, view.gpus
if view.gpus_refused:
    side.error(md_escape(view.gpus_refused), icon=":material/error:")

cache_tab, library_tab, gpu_tab, roof_tab = body.tabs(
    ["Cache memory", "transformers' own count", "On GPUs", "What limits a decode step"], key=TAB, on_change="rerun")

with gpu_tab:
    st.markdown(
        f"A serving engine takes a fixed share of each GPU: vLLM's `gpu_memory_utilization`, "
        f"{DEFAULT_UTILIZATION} by default in current releases (0.9 before). Inside that share it keeps the "
        "weights, the activation peak it measures with one profiling forward pass, and its CUDA graphs; the KV "
        "cache gets the rest: **utilization × memory − weights − activation peak − CUDA graphs**. The share "
        "outside is left to other processes, not to activations. Memory is what the driver reports, less than "
        "the size on the box.")
    cols = st.columns(2)
    cols[0].slider("gpu_memory_utilization", 0.5, 1.0, DEFAULT_UTILIZATION, 0.01, key=USABLE,
                            help=f"vLLM's CacheConfig.gpu_memory_utilization (vllm/config/cache.py): "
                                 f"{DEFAULT_UTILIZATION} by default, 0.9 in earlier releases.")
    cols[1].number_input("Activation peak + CUDA graphs per GPU (GiB)", 0.0, 1024.0, DEFAULT_RESERVE_GIB,
                                   0.25, key=RESERVE,
                                   help="An assumption: vLLM's start-up log prints both figures for your model "
                                        "and settings (max_num_batched_tokens, CUDA graph sizes).")
    each = " per GPU" if gpus > 1 else ""
    stats([Stat("Weights" + each, format_bytes(fit.weights_bytes),
                help=f"{config.params:,} parameters in {weights_dtype}" + (f", split {gpus} ways." if gpus > 1 else ".")),
           Stat("Cache budget" + each, format_bytes(fit.cache_budget_bytes),
                help="utilization × memory − weights − activation peak − CUDA graphs."),
           Stat("Sequences that fit", fit.sequences, help=f"At {tokens:,} tokens each."),
           Stat("Tokens of cache", fit.tokens,
                help=f"Tokens of {tokens:,}-token sequences whose cache fits: budget / one sequence's bytes × "
                     f"{tokens:,} (a sliding layer stops growing at its window, a fixed state never grows).")],
          "What fits on this GPU", key="scale_fit_stats")
    if not fit.weights_fit:
        st.error(f"The weights{each} ({format_bytes(fit.weights_bytes)}) and the reserve do not fit in the "
                 f"{format_bytes(fit.requested_bytes)} the engine may use: add GPUs or store the weights in fewer bits.",
                 icon=":material/memory:")
    elif fit.sequences < batch:
        st.warning(f"A batch of {batch:,} does not fit: at most {fit.sequences:,} sequences of {tokens:,} tokens.",
                   icon=":material/warning:")
    if view.parallel is not None:
        note = view.parallel
        st.info(f"Under tensor parallelism {note.split}. {fit.sequences:,} sequences fit"
                + (f", not the {fit.pooled_sequences:,} that adding up the {gpus} GPUs' budgets as one pool "
                   "would suggest." if fit.pooled_sequences != fit.sequences else ".") + (f" {note.remedy}" if note.remedy else ""),
                icon=":material/info:")
    plot(figures.gpu_split_figure(fit, batch), key="scale_split", share=wide)
    st.markdown(f"**Every GPU** ({gpus} × each, weights in {weights_dtype})")
    gpu_table = figures.gpu_table(list(view.fits))
    st.dataframe(gpu_table, hide_index=True, width="stretch",  # every header in full
                 column_config={c: st.column_config.Column(width=w) for c, w in header_widths(gpu_table).items()})
    st.caption(f"{gpu.name}: {gpu.memory_mib:,} MiB, {gpu.bandwidth / 1e12:g} TB/s, {gpu.fp16 / 1e12:g} TFLOP/s dense "
               f"fp16/bf16. Sources: {md_escape(gpu.source)}. Memory is nvidia-smi's total (rocm-smi for the "
               "MI300X); docs/scale.md lists every card's sources.")

with cache_tab:
    state_help = (f": K/V {format_bytes(memory.bytes_per_sequence)} + fixed state "
                  f"{format_bytes(memory.state_bytes_per_sequence)}" if memory.state_bytes_per_sequence else "")
    lesson = st.container()  # the curve first; what it is drawn from below it
    stats([Stat("Per token", format_bytes(memory.bytes_per_token),
                help="One more token of context, while every layer still grows."),
           Stat("Per sequence", format_bytes(memory.sequence_bytes), help=f"{tokens:,} tokens of context{state_help}."),
           *([Stat("Fixed state", format_bytes(memory.state_bytes_per_sequence),
                   help=f"Per sequence, in the {config.state_layers} linear-attention or state-space layers, as "
                        "transformers allocates it; the same at 10 tokens as at a million (vLLM too keeps one "
                        "per request). The K/V grows with every token; this does not.")]
             if memory.state_bytes_per_sequence else []),
           Stat("Per batch", format_bytes(memory.batch_bytes),
                help=f"{batch:,} sequence{'s' if batch != 1 else ''}."),
           Stat("With plain MHA", format_bytes(memory.mha_bytes_per_sequence),
                help="Per sequence, if every query head kept its own K and V and no layer had a window.")],
          "Cache memory", key="scale_cache_stats")
    st.markdown(md_escape(figures.formula_text(memory)))
    if view.beyond_context:
        st.warning(f"{tokens:,} tokens is longer than the {config.max_context:,} tokens {md_escape(config.name)} "
                   "was released for; the bytes are still what its cache would take.", icon=":material/warning:")
    st.multiselect("Compare with", others, key=COMPARE, max_selections=5)
    with lesson:
        st.markdown(f"**{md_escape(config.name)}** · {figures.config_summary(memory)}")
        plot(figures.memory_curve_figure(list(view.curves), tokens, view.capacity_bytes,
                                         config.max_context, view.curves[0][1].state_bytes), key="scale_curve",
             terms=set(), share=wide)
        st.caption(f"{ATTENTION_LABELS[config.attention]}. Source: {md_escape(config.source or 'your config.json')}"
                   + (f". {latent_note(config)}" if latent_note(config) else ""))
    st.markdown("**Every cache dtype**")
    st.dataframe(figures.dtype_table(list(view.dtypes)), hide_index=True, width="stretch")
    st.subheader("The toy, measured by the engine")
    toy = view.toy
    if toy_grants["kv"].note:
        st.warning(md_escape(toy_grants["kv"].note), icon=":material/hourglass_top:")
    st.markdown(md_escape(figures.toy_sentence(toy, memory, view.toy_ratio)))
    st.dataframe(figures.toy_table(toy, memory), hide_index=True, width="stretch")
    st.caption(f"The toy has one layer, a key of d_k = {toy.d_k} numbers per head and one value per token shared "
               f"by its {toy.heads} heads, in float32; its buffers reserve {format_bytes(toy.allocated_nbytes)} "
               "(they grow by doubling).")
    with st.expander("Check against the published figures"):
        checks = [("Llama-2-7B, fp16, 4,096 tokens", cache_memory(preset("Llama-2-7B"), 4096).bytes_per_sequence,
                   "2 GiB per sequence (the articles' 'several gigabytes')"),
                  ("Llama-3-8B, bf16, 8,192 tokens", cache_memory(preset("Llama-3-8B"), 8192).bytes_per_sequence,
                   "1 GiB per sequence"),
                  ("OPT-13B, fp16, per token", cache_memory(preset("OPT-13B"), 1).bytes_per_token,
                   "800 KB per token (vLLM paper)")]
        for label, value, published in checks:
            st.markdown(f"- {label}: **{format_bytes(value)}** ({value:,} bytes) — published: {published}")
        st.caption(f"1 KiB = {KIB} bytes; the vLLM paper's 800 KB is 800 KiB = 819,200 bytes.")

with library_tab:
    st.markdown("The formula, checked by the library itself: kvlab builds the model from its config.json on "
                "PyTorch's meta device (shapes, no memory), gives it `DynamicCache(config=...)`, which chooses "
                "a full or a sliding-window layer per layer as `generate()` does, and runs the prompt and one "
                "decode step. Then it reads what the cache's tensors hold.")
    if not library_tab.open:
        pass  # seconds of work for a large model: only when someone looks
    elif tokens < 2:
        st.info("Choose a context of at least 2 tokens (a prompt and one decode step).", icon=":material/info:")
    else:
        try:
            with st.spinner("Laying out the cache with transformers…"):
                layout = library_layout(config, tokens, dtype)
        except ConfigError as err:
            st.error(md_escape(str(err)), icon=":material/error:")
        else:
            stats([Stat("The formula", format_bytes(layout.formula_bytes), help=f"{layout.formula_bytes:,} bytes of K/V"),
                   Stat("transformers: storage", format_bytes(layout.storage_bytes),
                        help=f"{layout.storage_bytes:,} bytes: what the K and V tensors' storage holds after the "
                             "decode step" + (", with the fixed states" if layout.state_bytes else "")),
                   Stat("transformers: right after prefill", format_bytes(layout.prefill_bytes),
                        help=f"{layout.prefill_bytes:,} bytes: the storage before the decode step, the peak a "
                             "sliding layer reaches while it still holds the whole prompt"),
                   Stat("transformers: tensor shapes", format_bytes(layout.held_bytes),
                        help=f"{layout.held_bytes:,} bytes: numel × element size")],
                  "The formula against transformers' own count", key="scale_library_stats")
            if layout_dtype(dtype) != dtype:
                st.caption(f"A DynamicCache holds what the model computes; {dtype} caches need optional "
                           "quantisation backends, so this count is in fp16/bf16, the formula's too.")
            for line in figures.layout_sentences(layout, config.name):
                st.markdown(line)
            st.dataframe(figures.layout_table(layout), hide_index=True, width="stretch")
            st.caption("One sequence. Serving engines allocate differently: vLLM hands out blocks of 16 tokens, "
                       "so a sequence's last block is partly empty.")

with roof_tab:
    st.markdown("Each decode step reads **all the weights** once and **every sequence's KV cache** once, and "
                "does about two FLOPs per weight per sequence. Whether the bytes or the arithmetic take longer "
                f"decides what limits it (vendor peak figures, dense, per GPU: {md_escape(gpu.source)}; "
                "docs/scale.md lists them all).")
    prefill_tokens = int(st.number_input("Prompt length for prefill (tokens)", 1, MAX_TOKENS,
                                         value=min(tokens, config.max_context), key=PREFILL))
    step, prefill, sweep, overtakes = view.decode, view.prefill(prefill_tokens), view.sweep, view.cache_overtakes
    stats([Stat("Bytes read per step", format_bytes(step.bytes),
                help=f"weights {format_bytes(step.weight_bytes)} + KV cache {format_bytes(step.cache_bytes)}"),
           Stat("FLOPs per step", roof.format_flops(step.flops)),
           Stat("FLOPs per byte", f"{step.intensity:,.1f}", delta=f"ridge point {step.ridge:,.0f}", good=None),
           Stat("Time per token", roof.format_seconds(step.seconds), delta=f"{step.bound}-bound", good=None)],
          "One decode step", key="scale_roof_stats")
    for line in roof.decode_reading(step, prefill, overtakes, view.context_overtakes, sweep[-1], view.sequences):
        st.markdown(line)
    points = [(f"decode, batch {batch:,}", step)]
    if view.decode_one is not None:
        points.append(("decode, batch 1", view.decode_one))
    points.append((f"prefill, {prefill_tokens:,} tokens", prefill))
    plot(roof.roofline_figure(points), key="scale_roofline", share=wide)
    st.dataframe(roof.steps_table(points), width="stretch")
    left, right = st.columns(2)
    with left:
        plot(roof.bytes_figure(list(sweep), overtakes), key="scale_bytes")
    with right:
        plot(roof.throughput_figure(list(sweep), view.sequences), key="scale_throughput")
    st.caption("Lower bounds at peak bandwidth and FLOP/s: real kernels reach about 70-90% and 60-80% of them, "
               "small steps also pay kernel launches, and tensor parallelism adds two all-reduces per layer (after "
               "attention and after the MLP, as Megatron-LM splits them), not counted. Mixture-of-experts models read only the experts their tokens are routed to (uniform "
               "routing assumed).")
