"""At scale: the KV cache of real models in bytes, what fits on a GPU, and the toy's cache beside it."""

import streamlit as st

from viz import generate
from viz.figures import memory as figures
from viz.core.memory import (ATTENTION_KINDS, ATTENTION_LABELS, DEFAULT_MODEL, DEFAULT_USABLE, DTYPE_BITS, GPUS, KIB,
                        MAX_BATCH, MAX_GPUS, MAX_TOKENS, PRESETS, MemoryConfigError, beyond_context, by_dtype,
                        cache_memory, curve_span, custom_config, fits_by_gpu, format_bytes, gpu_fit, memory_curve,
                        per_token_ratio, toy_cache_memory)
from viz.ui import state
from viz.ui.common import header, md_escape, plot

state.require_frame()
MODEL = "scale_model"
DTYPE = "scale_dtype"
TOKENS = "scale_tokens"
BATCH = "scale_batch"
COMPARE = "scale_compare"
GPU = "scale_gpu"
GPU_COUNT = "scale_gpu_count"
WEIGHTS_DTYPE = "scale_weights_dtype"
USABLE = "scale_usable"
CUSTOM = "scale_custom_"  # prefix of the custom configuration's fields
LAST_GOOD = "scale_last_good_custom"
CUSTOM_NAME = "Custom"
CUSTOM_DEFAULTS = {"attention": "GQA", "layers": 32, "query_heads": 32, "kv_heads": 8, "head_dim": 128,
                   "params_b": 8.0, "max_context": 8192, "latent_dim": 512, "rope_dim": 64, "window": 0,
                   "sliding_layers": 0}


def _model_changed() -> None:
    name = st.session_state[MODEL]
    if name in PRESETS:
        st.session_state[TOKENS] = PRESETS[name].max_context


def _custom_config():
    """The custom model from its widgets; a refused one shows its message and the last good one stays."""
    with st.expander("Custom model", expanded=True):
        for key, default in CUSTOM_DEFAULTS.items():
            st.session_state.setdefault(CUSTOM + key, default)
        kind = st.segmented_control("Attention", ATTENTION_KINDS, key=CUSTOM + "attention", required=True,
                                    help="\n".join(f"{k}: {v}" for k, v in ATTENTION_LABELS.items()))
        cols = st.columns(4)
        cols[0].number_input("Layers", 1, 1000, key=CUSTOM + "layers")
        cols[1].number_input("Query heads", 1, 1024, key=CUSTOM + "query_heads")
        cols[2].number_input("K/V heads", 1, 1024, key=CUSTOM + "kv_heads", disabled=kind != "GQA",
                             help="Only GQA chooses this: MHA has one per query head, MQA one in all.")
        cols[3].number_input("Head dim", 1, 8192, key=CUSTOM + "head_dim")
        cols = st.columns(4)
        cols[0].number_input("Parameters (billions)", 0.001, 100_000.0, key=CUSTOM + "params_b", format="%.3f")
        cols[1].number_input("Trained context", 1, MAX_TOKENS, key=CUSTOM + "max_context")
        cols[2].number_input("Sliding window (0 = none)", 0, MAX_TOKENS, key=CUSTOM + "window")
        cols[3].number_input("Layers with the window", 0, 1000, key=CUSTOM + "sliding_layers")
        if kind == "MLA":
            cols = st.columns(4)
            cols[0].number_input("Latent dim (kv_lora_rank)", 1, 8192, key=CUSTOM + "latent_dim")
            cols[1].number_input("RoPE dim (qk_rope_head_dim)", 0, 8192, key=CUSTOM + "rope_dim")
        values = {key: st.session_state[CUSTOM + key] for key in CUSTOM_DEFAULTS}
        try:
            config = custom_config(values["attention"], int(values["layers"]), int(values["query_heads"]),
                                   int(values["kv_heads"]), int(values["head_dim"]), values["params_b"] * 1e9,
                                   int(values["max_context"]), latent_dim=int(values["latent_dim"]),
                                   rope_dim=int(values["rope_dim"]), window=int(values["window"]),
                                   sliding_layers=int(values["sliding_layers"]))
        except MemoryConfigError as err:
            st.error(f"{err} — showing the last configuration that worked.", icon=":material/error:")
            return st.session_state.get(LAST_GOOD, PRESETS[DEFAULT_MODEL])
    st.session_state[LAST_GOOD] = config
    return config


header("At scale", "The toy's cache is a few hundred bytes. A real model keeps a key and a value per "
                   "K/V head in every layer for every token: gigabytes, and the reason serving is "
                   "limited by memory.")

names = [*PRESETS, CUSTOM_NAME]
st.session_state.setdefault(MODEL, DEFAULT_MODEL)
st.session_state.setdefault(TOKENS, PRESETS[DEFAULT_MODEL].max_context)
top = st.columns([3, 2, 2, 2])
name = top[0].selectbox("Model", names, key=MODEL, on_change=_model_changed,
                        help="Published configurations; 'Custom' lets you set every number.")
dtype = top[1].selectbox("Cache dtype", list(DTYPE_BITS), index=1, key=DTYPE,
                         help="Bytes per cached number: 4, 2, 1, 1, ½, ¼. Quantised caches also store "
                              "scales, not counted here (the Memory page counts them for the toy).")
tokens = top[2].number_input("Context length (tokens)", 1, MAX_TOKENS, key=TOKENS, step=1024)
batch = top[3].number_input("Batch (sequences)", 1, MAX_BATCH, value=1, key=BATCH)

config = _custom_config() if name == CUSTOM_NAME else PRESETS[name]
memory = cache_memory(config, int(tokens), dtype, int(batch))

st.markdown(f"**{md_escape(config.name)}** · {figures.config_summary(memory)}")
if config.source:
    st.caption(f"Source: {md_escape(config.source)}")

cols = st.columns(4)
cols[0].metric("Per token", format_bytes(memory.bytes_per_token),
               help="One more token of context, while every layer still grows.")
cols[1].metric("Per sequence", format_bytes(memory.bytes_per_sequence),
               help=f"{int(tokens):,} tokens of context.")
cols[2].metric("Per batch", format_bytes(memory.bytes_per_batch), help=f"{int(batch):,} sequences.")
cols[3].metric("With plain MHA", format_bytes(memory.mha_bytes_per_sequence),
               help="Per sequence, if every query head kept its own K and V and no layer had a window.")
st.markdown(md_escape(figures.formula_text(memory)))
if beyond_context(memory):
    st.warning(f"{int(tokens):,} tokens is longer than the {config.max_context:,} tokens "
               f"{md_escape(config.name)} was released for; the bytes are still what its cache would take.",
               icon=":material/warning:")

st.subheader("On a GPU")
cols = st.columns([3, 1, 2, 2])
gpu = cols[0].selectbox("GPU", list(GPUS), index=4, key=GPU)
gpus = cols[1].number_input("GPUs", 1, MAX_GPUS, value=1, key=GPU_COUNT)
weights_dtype = cols[2].selectbox("Weights dtype", list(DTYPE_BITS), index=1, key=WEIGHTS_DTYPE)
usable = cols[3].slider("Usable memory", 0.5, 1.0, DEFAULT_USABLE, 0.05, key=USABLE,
                        help="The share a serving engine may use (vLLM's gpu_memory_utilization, 0.9 by "
                             "default); the rest is left for activations and the runtime.")
fit = gpu_fit(memory, GPUS[gpu], int(gpus), weights_dtype, usable)
cols = st.columns(4)
cols[0].metric("Weights", format_bytes(fit.weights_bytes), help=f"{config.params:,.0f} parameters in {weights_dtype}.")
cols[1].metric("Cache budget", format_bytes(fit.cache_budget_bytes), help="Usable memory left after the weights.")
cols[2].metric("Sequences that fit", f"{fit.sequences:,}", help=f"At {int(tokens):,} tokens each.")
cols[3].metric("Tokens of cache", f"{fit.tokens:,}", help="Cache budget / bytes per token.")
if not fit.weights_fit:
    st.error(f"The weights alone ({format_bytes(fit.weights_bytes)}) do not fit in "
             f"{format_bytes(fit.usable_bytes)}: add GPUs or store the weights in fewer bits.",
             icon=":material/memory:")
elif fit.sequences < batch:
    st.warning(f"A batch of {int(batch):,} does not fit: at most {fit.sequences:,} sequences of "
               f"{int(tokens):,} tokens.", icon=":material/warning:")
plot(figures.gpu_split_figure(fit, memory.bytes_per_batch), key="scale_split")

st.subheader("Against context length")
others = [n for n in PRESETS if n != config.name]
compare = st.multiselect("Compare with", others, default=[], key=COMPARE, max_selections=5)

span = curve_span(memory)
curves = [(config.name, memory_curve(config, span, dtype, int(batch)))]
curves += [(n, memory_curve(PRESETS[n], span, dtype, int(batch))) for n in compare]
plot(figures.memory_curve_figure(curves, int(tokens), fit.cache_budget_bytes if fit.weights_fit else None,
                                 config.max_context), key="scale_curve")

left, right = st.columns(2)
with left:
    st.markdown("**Every cache dtype**")
    st.dataframe(figures.dtype_table(by_dtype(memory)), hide_index=True, width="stretch")
with right:
    st.markdown(f"**Every GPU size** ({int(gpus)} × each, weights in {weights_dtype})")
    st.dataframe(figures.gpu_table(fits_by_gpu(memory, int(gpus), weights_dtype, usable)),
                 hide_index=True, width="stretch")

st.subheader("The toy, measured by the engine")
scenario = state.scenario()
trace = generate(scenario, max(1, state.step()), "kv")
toy = toy_cache_memory(trace.cache)
st.markdown(md_escape(figures.toy_sentence(toy, memory, per_token_ratio(memory, toy))))
st.dataframe(figures.toy_table(toy, memory), hide_index=True, width="stretch")
st.caption(f"The toy has one layer, a key of d_k = {toy.d_k} numbers per head and one value per token shared "
           f"by its {toy.heads} heads, in float32; its buffers reserve {format_bytes(toy.allocated_nbytes)} "
           "(they grow by doubling).")

with st.expander("Check against the published figures"):
    checks = [("Llama-2-7B, fp16, 4,096 tokens", cache_memory(PRESETS["Llama-2-7B"], 4096).bytes_per_sequence,
               "2 GiB per sequence (the articles' 'several gigabytes')"),
              ("Llama-3-8B, bf16, 8,192 tokens", cache_memory(PRESETS["Llama-3-8B"], 8192).bytes_per_sequence,
               "1 GiB per sequence"),
              ("OPT-13B, fp16, per token", cache_memory(PRESETS["OPT-13B"], 1).bytes_per_token,
               "800 KB per token (vLLM paper)")]
    for label, value, published in checks:
        st.markdown(f"- {label}: **{format_bytes(value)}** ({value:,} bytes) — published: {published}")
    st.caption(f"1 KiB = {KIB} bytes; the vLLM paper's 800 KB is 800 KiB = 819,200 bytes.")
