"""The At scale page's words: its fixed prose, and the sentences built from the view's numbers.

Data and small functions over typed values (no torch work). A sentence that quotes something a visitor
may have typed (a config's name or source) takes the page's escaping function as ``esc``; a few plain-text
ones (said so where they are) the page escapes whole; every other sentence is the app's own Markdown,
shown as it stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .cache_layout import LibraryLayout
from .gpus import Gpu
from .memory import (DEFAULT_UTILIZATION, DTYPE_BITS, KIB, CacheMemory, GpuFit, ParallelNote, ToyCacheMemory,
                     cache_memory, format_bytes)
from .model_config import SLIDING_KINDS, ModelConfig, preset
from .roofline import StepCost, format_flops, format_seconds


@dataclass(frozen=True)
class StatText:
    """One labelled figure of a stats row as the page shows it: its label, value, note and help."""

    label: str
    value: object
    help: str = ""
    delta: str | None = None
    good: str | None = "up"  # which direction of the delta is good news (None: the delta is only a note)


# the config.json editor (own config)
OWN_CONFIG = ("Paste or upload a Hugging Face config.json (at most 64 KiB). transformers reads it with its own "
              "configuration class and builds the model on the meta device (shapes only, nothing "
              "downloaded, no code from the file run).")
READING_CONFIG = "Reading the config with transformers…"  # a spinner's
MODEL_HELP = "Published config.json files shipped with kvlab, or your own."
DTYPE_HELP = ("Bytes per cached number: 4, 2, 1, 1, ½, ¼. Quantised caches also store scales, "
              "not counted here (the Memory page counts them for the toy).")
GPUS_HELP = "One copy of the model split over this many GPUs, as vLLM's --tensor-parallel-size does."
WEIGHTS_HELP = ("Starts at what a server loads: the format the config's quantization_config "
                "names (DeepSeek-V3 fp8; gpt-oss MXFP4, 4.25 bits, for its experts only), else "
                "16 bits: vLLM's --dtype auto serves a float32 checkpoint in 16 bits too.")


def config_refused(message: str) -> str:
    """Why a config.json was refused, and what the page shows instead (plain text)."""
    return f"{message} — showing the last configuration that worked."


def gpus_refused(message: str) -> str:
    """Why the visitor's GPU count was not used (plain text)."""
    return f"{message} — counting one GPU."


# the On GPUs tab
GPU_SHARE = (
    f"A serving engine takes a fixed share of each GPU: vLLM's `gpu_memory_utilization`, "
    f"{DEFAULT_UTILIZATION} by default in current releases (0.9 before). Inside that share it keeps the "
    "weights, the activation peak it measures with one profiling forward pass, and its CUDA graphs; the KV "
    "cache gets the rest: **utilization × memory − weights − activation peak − CUDA graphs**. The share "
    "outside is left to other processes, not to activations. Memory is what the driver reports, less than "
    "the size on the box.")
UTILIZATION_HELP = (f"vLLM's CacheConfig.gpu_memory_utilization (vllm/config/cache.py): "
                    f"{DEFAULT_UTILIZATION} by default, 0.9 in earlier releases.")
RESERVE_LABEL = "Activation peak + CUDA graphs per GPU (GiB)"
RESERVE_HELP = ("An assumption: vLLM's start-up log prints both figures for your model "
                "and settings (max_num_batched_tokens, CUDA graph sizes).")
FIT_STATS = "What fits on this GPU"


def fit_stats(config: ModelConfig, fit: GpuFit, gpus: int, weights_dtype: str, tokens: int) -> tuple[StatText, ...]:
    """What fits on the GPUs: the weights, the cache budget, the sequences and tokens of cache."""
    each = " per GPU" if gpus > 1 else ""
    return (_weights_stat(config, fit, gpus, weights_dtype),
            StatText("Cache budget" + each, format_bytes(fit.cache_budget_bytes),
                     "utilization × memory − weights − activation peak − CUDA graphs."),
            _sequences_stat(fit, tokens),
            StatText("Tokens of cache", fit.tokens,
                     f"Tokens of {tokens:,}-token sequences whose cache fits: budget / one sequence's bytes × "
                     f"{tokens:,} (a sliding layer stops growing at its window, a fixed state never grows)."))


def _weights_stat(config: ModelConfig, fit: GpuFit, gpus: int, weights_dtype: str) -> StatText:
    return StatText("Weights" + (" per GPU" if gpus > 1 else ""), format_bytes(fit.weights_bytes),
                    f"{config.params:,} parameters in {weights_dtype}" + (f", split {gpus} ways." if gpus > 1 else "."))


def _sequences_stat(fit: GpuFit, tokens: int) -> StatText:
    gpus = f"{fit.gpus} × {fit.gpu.name}" if fit.gpus > 1 else fit.gpu.name
    return StatText("Sequences that fit", fit.sequences,
                    f"At {tokens:,} tokens each, in what {gpus} keeps for the cache beside the weights.")


def fit_alert(fit: GpuFit, gpus: int, batch: int, tokens: int) -> tuple[str, str] | None:
    """("error" or "warning", the sentence) when the weights or the batch do not fit; None when both do."""
    if not fit.weights_fit:
        each = " per GPU" if gpus > 1 else ""
        return ("error", f"The weights{each} ({format_bytes(fit.weights_bytes)}) and the reserve do not fit in the "
                         f"{format_bytes(fit.requested_bytes)} the engine may use: add GPUs or store the weights in "
                         "fewer bits.")
    if fit.sequences < batch:
        return "warning", f"A batch of {batch:,} does not fit: at most {fit.sequences:,} sequences of {tokens:,} tokens."
    return None


def parallel_sentence(note: ParallelNote, fit: GpuFit, gpus: int) -> str:
    """How tensor parallelism splits the cache, and what fits because of it."""
    return (f"Under tensor parallelism {note.split}. {fit.sequences:,} sequences fit"
            + (f", not the {fit.pooled_sequences:,} that adding up the {gpus} GPUs' budgets as one pool "
               "would suggest." if fit.pooled_sequences != fit.sequences else ".")
            + (f" {note.remedy}" if note.remedy else ""))


def every_gpu(gpus: int, weights_dtype: str) -> str:
    return f"**Every GPU** ({gpus} × each, weights in {weights_dtype})"


def gpu_caption(gpu: Gpu, esc: Callable[[str], str]) -> str:
    return (f"{gpu.name}: {gpu.memory_mib:,} MiB, {gpu.bandwidth / 1e12:g} TB/s, {gpu.fp16 / 1e12:g} TFLOP/s dense "
            f"fp16/bf16. Sources: {esc(gpu.source)}. Memory is nvidia-smi's total (rocm-smi for the "
            "MI300X); docs/scale.md lists every card's sources.")


# the Cache memory tab
CACHE_STATS = "The cache, the weights and what fits"
EVERY_DTYPE = "**Every cache dtype**"
TOY_HEADING = "The toy, measured by the engine"
CHECKS = "Check against the published figures"
# the small tables' names for screen readers (each a real HTML table, wrapping its text to its column)
DTYPE_TABLE = "The cache per token, per sequence and per batch in every cache dtype"
TOY_TABLE = "The toy's cache, measured by the engine, beside this model's"
GPU_TABLE = "Every GPU: whether the weights fit, the cache budget, the sequences and tokens that fit"
STEPS_TABLE = "Each step on the roofline: bytes, FLOPs, FLOPs per byte, the time each bound allows"
STEPS_TABLE_NOTE = ("A step is memory-bound when its FLOPs per byte are below the GPU's ridge point, "
                    "compute-bound above it.")  # under the table (no hover): its caption's hover defines them
KIB_NOTE = f"1 KiB = {KIB} bytes; the vLLM paper's 800 KB is 800 KiB = 819,200 bytes."


def cache_stats(memory: CacheMemory, config: ModelConfig, fit: GpuFit, gpus: int, weights_dtype: str
                ) -> tuple[StatText, ...]:
    """The page's opening figures, each a different number: the cache per token and per sequence, its
    fixed state (when the model also keeps K/V), the batch's cache (a batch of more than one), the
    weights and the sequences that fit on the GPUs; a sequence's cache with plain MHA, when that
    differs, is a note under the sequence's (as a figure of its own it could repeat the batch's)."""
    tokens, batch = memory.tokens, memory.batch
    state_help = (f": K/V {format_bytes(memory.bytes_per_sequence)} + fixed state "
                  f"{format_bytes(memory.state_bytes_per_sequence)}" if memory.state_bytes_per_sequence else "")
    state = StatText("Fixed state", format_bytes(memory.state_bytes_per_sequence),
                     f"Per sequence, in the {config.state_layers} linear-attention or state-space layers, as "
                     "transformers allocates it; the same at 10 tokens as at a million (vLLM too keeps one "
                     "per request). The K/V grows with every token; this does not.")
    sequence = format_bytes(memory.sequence_bytes)
    mha = format_bytes(memory.mha_bytes_per_sequence)
    return (StatText("Per token", format_bytes(memory.bytes_per_token),
                     "One more token of context, while every layer still grows."),
            StatText("Per sequence", sequence, f"{tokens:,} tokens of context{state_help}." + (
                " Plain MHA: every query head keeping its own K and V, and no layer a window." if mha != sequence
                else ""), delta=f"{mha} with plain MHA" if mha != sequence else None, good=None),
            *((state,) if memory.state_bytes_per_sequence and memory.bytes_per_sequence else ()),
            *((StatText("Per batch", format_bytes(memory.batch_bytes), f"{batch:,} sequences."),) if batch > 1 else ()),
            _weights_stat(config, fit, gpus, weights_dtype), _sequences_stat(fit, tokens))


def model_line(config: ModelConfig, summary: str, esc: Callable[[str], str]) -> str:
    """The model's name over its curve, with its shape in brief (``summary``: :func:`config_summary`)."""
    return f"**{esc(config.name)}** · {summary}"


def config_summary(memory: CacheMemory) -> str:
    """The model's attention shape in one line (markdown-safe: no user text)."""
    c = memory.config
    shape = ("no K/V" if c.attention == "none" else
             f"latent {c.latent_dim} + RoPE {c.rope_dim} per token and layer" if c.attention == "MLA"
             else f"{c.kv_heads} K/V heads × {c.head_dim} dims")
    sliding = c.sliding_layers - c.chunked_layers
    window = f" · window {c.window:,} on {sliding} of {c.layers} layers" if sliding else ""
    chunked = f" · chunks of {c.window:,} on {c.chunked_layers} of {c.layers} layers" if c.chunked_layers else ""
    attention = (f" · attention in {c.attention_layers} of them, a fixed state in {c.state_layers}"
                 if c.state_layers else "")
    shared = f" · {c.cacheless_layers} layers keep no cache of their own" if c.cacheless_layers else ""
    experts = f" · {c.experts} experts, {c.experts_per_token} per token" if c.experts else ""
    heads = f" · {c.query_heads} query heads" if c.query_heads else ""
    return (f"{c.attention} · {c.layers} layers{attention}{heads} · {shape}{window}{chunked}{shared}"
            f"{experts} · {c.params / 1e9:,.2f} B parameters")


def formula_text(memory: CacheMemory) -> str:
    """The calculator's formula with this model's numbers filled in (plain text: the page escapes it whole)."""
    c, size = memory.config, f"{DTYPE_BITS[memory.dtype] / 8:g} bytes"
    run = f"{memory.tokens:,} tokens · {memory.batch:,} sequence{'s' if memory.batch != 1 else ''} · {size}"
    caching = c.attention_layers  # only layers that keep K/V: not shared, state-only or MLP-only ones
    if c.attention == "none":
        text = "no layer keeps K/V: bytes = 0 for any number of tokens"
    elif c.attention == "MLA":
        text = f"bytes = ({c.latent_dim} + {c.rope_dim}) · {caching} layers · {run} (one latent, no factor 2)"
    else:
        text = f"bytes = 2 · {caching} layers · {c.kv_heads} K/V heads · {c.head_dim} dims · {run}"
    sliding = c.sliding_layers - c.chunked_layers
    if sliding:
        text += f"; the {sliding} sliding layers hold at most {c.window:,} tokens"
    if c.chunked_layers:
        text += (f"; the {c.chunked_layers} chunked layers attend within chunks of {c.window:,} tokens and are "
                 "counted as transformers keeps them, the last {:,} (vLLM frees the blocks before the chunk's "
                 "start, so it holds fewer)".format(c.window))
    if memory.state_bytes_per_sequence:
        text += (f"; plus a fixed state of {format_bytes(memory.state_bytes_per_sequence)} per sequence in the "
                 f"{c.state_layers} linear-attention or state-space layers, the same at any length")
    return text


@dataclass(frozen=True)
class CurveNotes:
    """The cache curve's words on its lines (plain text, the app's own: no visitor's text in them)."""

    held: str  # beside the dashed line of the cache the GPUs hold ("" when the weights do not fit)
    above: str  # the same in a note, when that line is far above the curves
    tokens: str  # on the dotted line at the chosen length
    trained: str  # on the grey line at the trained context
    state: str  # on the fixed state's line ("" without one)


NBSP = "\u00a0"  # between a number and its unit: a note broken into lines keeps them together


def the_gpus(gpus: int) -> str:
    """'the GPU', or 'the 4 GPUs'."""
    return "the GPU" if gpus == 1 else f"the {gpus:,} GPUs"


def curve_notes(capacity_bytes: int | None, gpus: int, tokens: int, state_bytes: int = 0) -> CurveNotes:
    """The curve's words, the GPUs counted as the view counts them (one GPU: 'the GPU')."""
    held = "" if capacity_bytes is None else format_bytes(capacity_bytes)
    state = f"fixed state of the batch: {format_bytes(state_bytes)}, at any length" if state_bytes else ""
    return CurveNotes(held=f"cache {the_gpus(gpus)} can hold: {held}" if held else "",
                      above=(f"the cache {the_gpus(gpus)} can hold, {held.replace(' ', NBSP)}, is far above "
                             "this chart" if held else ""),
                      tokens=f"{tokens:,} tokens", trained="trained context", state=state)


def toy_sentence(toy: ToyCacheMemory, memory: CacheMemory, ratio: float) -> str:
    """One line putting the toy's whole cache next to one token of the real model (plain text: it names the
    model, which a visitor's config.json may have named, so the page escapes it whole)."""
    return (f"The toy's whole cache, {toy.tokens} tokens, takes {format_bytes(toy.nbytes)}. One token of "
            f"{memory.config.name} takes {format_bytes(memory.bytes_per_token)}: {ratio:,.0f} times as much.")


def beyond_context(tokens: int, config: ModelConfig, esc: Callable[[str], str]) -> str:
    return (f"{tokens:,} tokens is longer than the {config.max_context:,} tokens {esc(config.name)} "
            "was released for; the bytes are still what its cache would take.")


def source_caption(attention_label: str, config: ModelConfig, latent: str, esc: Callable[[str], str]) -> str:
    return (f"{attention_label}. Source: {esc(config.source or 'your config.json')}"
            + (f". {latent}" if latent else ""))


def toy_caption(d_k: int, heads: int, allocated_nbytes: int) -> str:
    return (f"The toy has one layer, a key of d_k = {d_k} numbers per head and one value per token shared "
            f"by its {heads} heads, in float32; its buffers reserve {format_bytes(allocated_nbytes)} "
            "(they grow by doubling).")


def published_checks() -> tuple[str, ...]:
    """The formula against three published figures, one Markdown line each."""
    checks = [("Llama-2-7B, fp16, 4,096 tokens", cache_memory(preset("Llama-2-7B"), 4096).bytes_per_sequence,
               "2 GiB per sequence (the articles' 'several gigabytes')"),
              ("Llama-3-8B, bf16, 8,192 tokens", cache_memory(preset("Llama-3-8B"), 8192).bytes_per_sequence,
               "1 GiB per sequence"),
              ("OPT-13B, fp16, per token", cache_memory(preset("OPT-13B"), 1).bytes_per_token,
               "800 KB per token (vLLM paper)")]
    return tuple(f"- {label}: **{format_bytes(value)}** ({value:,} bytes) — published: {published}"
                 for label, value, published in checks)


# transformers' own count (worked out only while its tab is open)
LIBRARY = ("The formula, checked by the library itself: kvlab builds the model from its config.json on "
           "PyTorch's meta device (shapes, no memory), gives it `DynamicCache(config=...)`, which chooses "
           "a full or a sliding-window layer per layer as `generate()` does, and runs the prompt and one "
           "decode step. Then it reads what the cache's tensors hold.")
LAYING_OUT = "Laying out the cache with transformers…"  # a spinner's
LIBRARY_SHORT = "Choose a context of at least 2 tokens (a prompt and one decode step)."
LIBRARY_STATS = "The formula against transformers' own count"
LIBRARY_BLOCKS = ("One sequence. Serving engines allocate differently: vLLM hands out blocks of 16 tokens, "
                  "so a sequence's last block is partly empty.")


SAME_AS_FORMULA = "= the formula"


def against_formula(count: int, formula: int) -> str:
    """transformers' count as a figure beside the formula's: '= the formula' when equal byte for byte,
    its size when that reads differently, else the gap ('formula − 512 KiB': four figures that all read
    '2 GiB' told nothing, issue 32)."""
    if count == formula:
        return SAME_AS_FORMULA
    if format_bytes(count) != format_bytes(formula):
        return format_bytes(count)
    return f"formula {'+' if count > formula else '−'} {format_bytes(abs(count - formula))}"


def library_stats(layout: LibraryLayout) -> tuple[StatText, ...]:
    """The formula's bytes against what transformers' cache holds after prefill and after one decode step."""
    formula = layout.formula_bytes
    return (StatText("The formula", format_bytes(formula), f"{formula:,} bytes of K/V"),
            StatText("transformers: storage", against_formula(layout.storage_bytes, formula),
                     f"{layout.storage_bytes:,} bytes: what the K and V tensors' storage holds after the "
                     "decode step" + (", with the fixed states" if layout.state_bytes else "")),
            StatText("transformers: right after prefill", against_formula(layout.prefill_bytes, formula),
                     f"{layout.prefill_bytes:,} bytes: the storage before the decode step, the peak a "
                     "sliding layer reaches while it still holds the whole prompt"),
            StatText("transformers: tensor shapes", against_formula(layout.held_bytes, formula),
                     f"{layout.held_bytes:,} bytes: numel × element size"))


def layout_sentences(layout: LibraryLayout) -> list[str]:
    """transformers' own count against the formula in words, one Markdown paragraph each (no visitor text)."""
    classes = ", ".join(f"{count} × {name}" for name, count in layout.classes.items())
    verdict = ("equal to the formula, byte for byte" if layout.matches_formula else
               f"{format_bytes(abs(layout.storage_bytes - layout.formula_bytes))} "
               f"{'more' if layout.storage_bytes > layout.formula_bytes else 'less'} than the formula")
    lines = [f"`DynamicCache(config=...)` built {classes}. After {layout.tokens - 1:,} tokens of prefill and one "
             f"decode step its tensors' storage holds {format_bytes(layout.storage_bytes)} "
             f"({layout.storage_bytes:,} bytes) in {layout.dtype}: {verdict}."]
    if layout.view_bytes and any(layer.kind in SLIDING_KINDS for layer in layout.layers):
        lines.append(f"The tensors' shapes show {format_bytes(layout.view_bytes)} less "
                     f"({format_bytes(layout.held_bytes)}): a sliding-window layer keeps a view of its last "
                     "window − 1 tokens, since the next token completes the window, over the window-long "
                     "tensor its last `torch.cat` made. The storage is what stays allocated.")
    elif layout.view_bytes:
        lines.append(f"The tensors' shapes show {format_bytes(layout.view_bytes)} less "
                     f"({format_bytes(layout.held_bytes)}) than their storage: views over larger tensors.")
    if layout.prefill_bytes:
        lines.append(f"Right after the prefill of {layout.tokens - 1:,} tokens, before the decode step, the storage "
                     f"held {format_bytes(layout.prefill_bytes)} ({layout.prefill_bytes:,} bytes)"
                     + (": a sliding layer keeps the whole prompt until the next token cuts it to its window. "
                        "Memory runs out at that peak, not at the smaller figure after the step."
                        if layout.prefill_bytes > layout.storage_bytes else "."))
    for difference in layout.differences:
        lines.append(f"{format_bytes(abs(difference.bytes))} of the difference: {difference.reason}.")
    if layout.unexplained_bytes:
        lines.append(f"{format_bytes(abs(layout.unexplained_bytes))} of the difference is not explained by "
                     "anything kvlab models: the formula does not describe this architecture fully.")
    return lines


def library_dtype(dtype: str) -> str:
    """Why transformers' count is in 16 bits for a narrower cache dtype."""
    return (f"A DynamicCache holds what the model computes; {dtype} caches need optional "
            "quantisation backends, so this count is in fp16/bf16, the formula's too.")


# What limits a decode step
ROOF_STATS = "One decode step"
ROOF_CAVEATS = ("Lower bounds at peak bandwidth and FLOP/s: real kernels reach about 70-90% and 60-80% of them, "
                "small steps also pay kernel launches, and tensor parallelism adds two all-reduces per layer (after "
                "attention and after the MLP, as Megatron-LM splits them), not counted. Mixture-of-experts models "
                "read only the experts their tokens are routed to (uniform routing assumed).")


ROOF_INTRO = ("Each decode step reads **all the weights** once and **every sequence's KV cache** once, and "
              "does about two FLOPs per weight per sequence. Whether the bytes or the arithmetic take longer, "
              "at the GPU's peak, decides what limits it.")


def roof_sources(gpu: Gpu, esc: Callable[[str], str]) -> str:
    """Where the roofline's peak figures come from: a caption under it, not the lesson's sentence (it
    quoted issue numbers and docs/ in the tab's first paragraph, on a projector too)."""
    return (f"{gpu.name}'s peak figures are the vendor's, dense, per GPU. Sources: {esc(gpu.source)}; "
            "docs/scale.md lists them all.")


def roof_stats(step: StepCost) -> tuple[StatText, ...]:
    """One decode step: bytes read, FLOPs, FLOPs per byte against the ridge point, time per token."""
    return (StatText("Bytes read per step", format_bytes(step.bytes),
                     f"weights {format_bytes(step.weight_bytes)} + KV cache {format_bytes(step.cache_bytes)}"),
            StatText("FLOPs per step", format_flops(step.flops)),
            StatText("FLOPs per byte", f"{step.intensity:,.1f}", delta=f"ridge point {step.ridge:,.0f}", good=None),
            StatText("Time per token", format_seconds(step.seconds), delta=f"{step.bound}-bound", good=None))


def roof_reading(step: StepCost, prefill: StepCost, overtakes: int | None, context_overtakes: int | None,
                   saturates: StepCost, fits: int | None = None) -> list[str]:
    """The roofline in plain words, with this configuration's numbers; ``context_overtakes`` is for one
    sequence, ``fits`` the sequences whose cache fits in memory (None: the weights do not fit)."""
    per_token = format_seconds(step.seconds)
    lines = [
        f"**Decode reads everything once per step.** A step over a batch of {step.batch:,} reads "
        f"{format_bytes(step.weight_bytes)} of weights and {format_bytes(step.cache_bytes)} of KV cache"
        f"{' per GPU' if step.gpus > 1 else ''} to make {step.batch:,} token{'s' if step.batch > 1 else ''}, "
        f"and does {format_flops(step.flops)}: {step.intensity:,.1f} FLOPs per byte, against a ridge point of "
        f"{step.ridge:,.0f}. Reading takes at least {format_seconds(step.memory_seconds)}, the arithmetic "
        f"{format_seconds(step.compute_seconds)}: the step is **{step.bound}-bound**, at best {per_token} per token "
        f"for each sequence.",
        f"**Prefill reuses every weight for every prompt token.** Reading a {prefill.context:,}-token prompt in one "
        f"pass does {prefill.intensity:,.0f} FLOPs per byte, so it is **{prefill.bound}-bound**: about "
        f"{format_seconds(prefill.seconds)} for the prompt, {format_seconds(prefill.seconds_per_token)} "
        "per token, where decode pays a whole step per token. That is why a model reads a prompt quickly and "
        "answers slowly.",
    ]
    if overtakes:
        lines.append(f"**Where the cache takes over.** At {step.context:,} tokens of context the cache read per "
                     f"step outweighs the weights from a batch of {overtakes:,}"
                     + (f"; for one sequence, from {context_overtakes:,} tokens of context." if context_overtakes
                        else "."))
    else:
        lines.append("**The cache stays small.** At this context no batch makes the cache outweigh the weights "
                     "(sliding windows or a small latent keep it bounded).")
    lines.append(f"**Why batching helps, and where it stops.** Every sequence in the batch shares the one read "
                 f"of the weights, so tokens per second grow almost with the batch while the weights dominate. "
                 f"At a batch of {saturates.batch:,} the step is {saturates.bound}-bound"
                 + (": the GPU's arithmetic is the limit, more sequences add time as fast as tokens."
                    if saturates.bound == "compute" else
                    ": each sequence's own cache must still be read, so throughput levels off at what "
                    "bandwidth allows for the cache alone.")
                 + " Times are lower bounds at peak bandwidth and FLOP/s.")
    if fits is None or fits < saturates.batch:
        limit = ("the weights alone do not fit, so no batch runs at all" if fits is None else
                 f"only {fits:,} sequence{'s' if fits != 1 else ''} of {step.context:,} tokens fit in memory beside "
                 f"the weights, so a batch of {saturates.batch:,} is arithmetic on paper")
        lines.append(f"**Memory comes first.** Before bandwidth or arithmetic, the KV cache caps the batch: {limit}. "
                     "Shorter contexts, a smaller cache dtype, or more GPUs raise that limit.")
    return lines


def step_point(batch: int) -> str:
    return f"decode, batch {batch:,}"


def prefill_point(tokens: int) -> str:
    return f"prefill, {tokens:,} tokens"
