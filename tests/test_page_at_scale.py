"""Tier 2: the At scale page renders inside the app and every control changes what it should."""

from __future__ import annotations

import pytest
from apptest_helpers import errors, figure, figures, on_page, plain_table, rerun, stat_labels, stat_value

import json

from viz import generate, load_preset
from viz.core.scale.gpus import GPU_BY_NAME
from viz.core.scale.memory import cache_memory, format_bytes, gpu_fit, toy_cache_memory
from viz.core.scale.model_config import preset, preset_text
from viz.core.scale.roofline import decode_step

PAGE = "pages/at_scale.py"


@pytest.fixture
def at(app):
    """The app, switched to the At scale page."""
    return on_page(app, PAGE)


def test_default_is_llama2_7b_with_the_published_2_gib(at):
    """By default the page shows Llama-2-7B in fp16 at 4096 tokens: 512 KiB per token, 2 GiB per sequence."""
    assert at.selectbox(key="scale_model").value == "Llama-2-7B"
    assert stat_value(at, "Per token") == "512 KiB"
    assert stat_value(at, "Per sequence") == "2 GiB"
    expected = gpu_fit(cache_memory(preset("Llama-2-7B"), 4096), GPU_BY_NAME["H100 SXM"]).sequences
    assert stat_value(at, "Sequences that fit") == f"{expected:,}" == "29"


def test_choosing_a_model_sets_its_context_and_its_bytes(at):
    """Picking Llama-3-8B moves the context to its 8192 tokens and shows 1 GiB per sequence."""
    at.selectbox(key="scale_model").select("Llama-3-8B")
    rerun(at)
    assert at.number_input(key="scale_tokens").value == 8192
    assert stat_value(at, "Per sequence") == "1 GiB"
    assert stat_value(at, "Per token") == "128 KiB"


def test_dtype_batch_and_length_change_the_numbers(at):
    """fp32 doubles the per-token bytes; a batch of 4 multiplies the batch; a shorter context shrinks it."""
    at.selectbox(key="scale_dtype").select("fp32")
    rerun(at)
    assert stat_value(at, "Per token") == "1 MiB"
    at.number_input(key="scale_batch").set_value(4)
    at.number_input(key="scale_tokens").set_value(1024)
    rerun(at)
    assert stat_value(at, "Per sequence") == "1 GiB"
    assert stat_value(at, "Per batch") == "4 GiB"


def test_gpu_controls_change_what_fits(at):
    """Llama-2-70B's fp16 weights do not fit one H100 (an error says so); two GPUs fit them; int4 weights on a T4."""
    at.selectbox(key="scale_model").select("Llama-2-70B")
    rerun(at)
    assert stat_value(at, "Sequences that fit") == "0"
    assert any("do not fit" in e for e in errors(at))
    at.number_input(key="scale_gpu_count").set_value(2)
    rerun(at)
    expected = gpu_fit(cache_memory(preset("Llama-2-70B"), 4096), GPU_BY_NAME["H100 SXM"], 2).sequences
    assert stat_value(at, "Sequences that fit") == f"{expected:,}" and expected > 0
    assert not at.error
    at.selectbox(key="scale_gpu").select("T4")
    at.selectbox(key="scale_weights_dtype").select("int4")
    rerun(at)
    assert stat_value(at, "Weights per GPU") == format_bytes(68_976_648_192 // 2 // 2)


def test_tensor_parallel_mla_is_not_one_pool(at):
    """DeepSeek-V3 in fp8 (its checkpoint's dtype) on 8 H200s at 128K tokens: 5 sequences fit, and the page says
    one pool of memory would wrongly suggest more."""
    at.selectbox(key="scale_model").select("DeepSeek-V3")
    rerun(at)
    assert at.selectbox(key="scale_weights_dtype").value == "fp8"
    at.number_input(key="scale_tokens").set_value(131072)
    at.selectbox(key="scale_gpu").select("H200 SXM")
    at.number_input(key="scale_gpu_count").set_value(8)
    rerun(at)
    assert stat_value(at, "Sequences that fit") == "5"
    assert any("every GPU keeps all of it" in i.value and "one pool" in i.value for i in at.info)


def test_a_gpu_count_that_does_not_divide_the_heads_is_refused(at):
    """Three GPUs cannot split Llama-2-7B's 32 heads: one line says so and one GPU is counted."""
    at.number_input(key="scale_gpu_count").set_value(3)
    rerun(at)
    assert any("do not divide" in e and "counting one GPU" in e for e in errors(at))
    assert stat_value(at, "Sequences that fit") == "29"


def test_utilization_and_reserve_set_the_budget(at):
    """Lowering gpu_memory_utilization to 0.5 and raising the reserve shrink the budget as the formula says."""
    at.slider(key="scale_usable").set_value(0.5)
    at.number_input(key="scale_reserve").set_value(3.0)
    rerun(at)
    fit = gpu_fit(cache_memory(preset("Llama-2-7B"), 4096), GPU_BY_NAME["H100 SXM"], 1, "fp16/bf16", 0.5, 3.0)
    assert stat_value(at, "Cache budget") == format_bytes(fit.cache_budget_bytes)
    assert stat_value(at, "Sequences that fit") == f"{fit.sequences:,}"


def test_beyond_the_trained_context_warns(at):
    """A context longer than the model's trained length shows a warning."""
    at.number_input(key="scale_tokens").set_value(5000)
    rerun(at)
    assert any("longer than the 4,096 tokens" in w.value for w in at.warning)


def own_config(at, text: str):
    """Choose 'Your config.json' and type ``text`` into it."""
    at.selectbox(key="scale_model").select("Your config.json")
    rerun(at)
    at.text_area(key="scale_config_text").input(text)
    return rerun(at)


def test_your_config_json_is_counted_and_a_refused_one_keeps_the_last(at):
    """Editing Llama-2-7B's config.json to 8 K/V heads divides its cache by 4; an impossible or broken config
    shows one line and the last good numbers stay."""
    raw = json.loads(preset_text("Llama-2-7B"))
    raw["num_key_value_heads"] = 8
    own_config(at, json.dumps(raw))
    assert not errors(at) and stat_value(at, "Per sequence") == "512 MiB"
    at.text_area(key="scale_config_text").input('{"model_type": "llama", "num_hidden_layers": 1000000}')
    rerun(at)
    assert any("layers up to 128" in e.replace("\\", "") and "last configuration" in e for e in errors(at))
    assert stat_value(at, "Per sequence") == "512 MiB"
    at.text_area(key="scale_config_text").input('{"model_type": "llama", ')
    rerun(at)
    assert any("not valid JSON" in e.replace("\\", "") for e in errors(at))
    assert stat_value(at, "Per sequence") == "512 MiB"


def test_your_config_starts_from_the_last_preset(at):
    """Switching to 'Your config.json' after Phi-3 fills the editor with Phi-3's shipped config.json."""
    at.selectbox(key="scale_model").select("Phi-3-mini (4k)")
    rerun(at)
    at.selectbox(key="scale_model").select("Your config.json")
    rerun(at)
    assert at.text_area(key="scale_config_text").value == preset_text("Phi-3-mini (4k)")
    assert stat_value(at, "Per token") == format_bytes(cache_memory(preset("Phi-3-mini (4k)"), 1).bytes_per_token)


def test_transformers_count_matches_the_formula(at):
    """The library tab shows transformers' storage equal to the formula for Phi-3-mini at 4,096 tokens, and the
    tensors' shapes one token short per layer (767 MiB)."""
    at.selectbox(key="scale_model").select("Phi-3-mini (4k)")
    rerun(at)
    assert "The formula" not in stat_labels(at)  # laid out only when its tab is open
    at.session_state["scale_tab"] = "transformers' own count"
    rerun(at)
    assert stat_value(at, "The formula") == "768 MiB" and stat_value(at, "transformers: storage") == "= the formula"
    assert stat_value(at, "transformers: tensor shapes") == "767 MiB"
    text = " ".join(m.value for m in at.markdown)
    assert "32 × DynamicSlidingWindowLayer" in text and "equal to the formula, byte for byte" in text
    table = next(d.value for d in at.dataframe if "transformers class" in d.value.columns)
    assert list(table["layers"]) == ["0–31"] and list(table["K shape"]) == ["[1, 32, 2046, 96]"]


def test_decode_limit_tab_shows_the_roofline(at):
    """The roofline tab shows Llama-2-7B's decode step: 14.3 GiB read, memory-bound, 4.59 ms per token."""
    step = decode_step(preset("Llama-2-7B"), GPU_BY_NAME["H100 SXM"], 1, 4096)
    assert stat_value(at, "Bytes read per step") == format_bytes(step.bytes) == "14.3 GiB"
    assert stat_value(at, "Time per token") == "4.59 ms"
    roofline = figure(at, "Roofline: H100 SXM, fp16/bf16")
    assert [trace["name"] for trace in roofline["data"]][2:] == ["decode, batch 1", "prefill, 4,096 tokens"]
    bars = figure(at, "Bytes per decode step")
    assert bars["layout"]["annotations"][0]["text"] == "cache > weights from a batch of 7"
    figure(at, "Throughput against batch size")
    text = " ".join(m.value for m in at.markdown)
    assert "memory-bound" in text and "compute-bound" in text


def test_toy_cache_comes_from_the_engine(at):
    """The toy's row shows the bytes the engine's cache holds for the current scenario."""
    toy = toy_cache_memory(generate(load_preset("seed"), 1, "kv").cache)
    table = plain_table(at, "the toy")  # one row per fact: three columns, as a phone's width holds
    rows = dict(zip(table[""], table["the toy"]))
    assert rows["whole cache"] == format_bytes(toy.nbytes)
    assert rows["per token"] == format_bytes((4 * 64 + 1) * 4)
    assert table["Llama-2-7B (fp16/bf16)"][table[""].index("per token")] == "512 KiB"


def test_published_checks_are_listed(at):
    """The published-figures expander shows the three checks with the calculator's bytes."""
    text = " ".join(m.value for m in at.markdown)
    assert "2,147,483,648 bytes" in text and "1,073,741,824 bytes" in text and "819,200 bytes" in text


def test_html_in_a_config_name_is_not_rendered(at):
    """A config.json whose model_type is HTML is refused as text, never rendered."""
    own_config(at, '{"model_type": "<b>bold</b>"}')
    assert any("does not know" in e for e in errors(at))
    assert all("<b>" not in e for e in errors(at))


def test_compare_adds_curves(at):
    """Choosing models to compare adds their lines to the context-length plot."""
    at.multiselect(key="scale_compare").select("Gemma-2-9B").select("DeepSeek-V3")
    rerun(at)
    assert at.multiselect(key="scale_compare").value == ["Gemma-2-9B", "DeepSeek-V3"]
    curves = [trace for trace in figure(at, "Cache memory grows")["data"] if trace.get("mode") == "lines"]
    assert [trace["name"] for trace in curves] == ["Llama-2-7B", "Gemma-2-9B", "DeepSeek-V3"]


HYBRID_TEXT = json.dumps({  # a small Qwen3-Next: 2 full-attention layers among 8, the rest Gated DeltaNet
    "model_type": "qwen3_next", "num_hidden_layers": 8, "hidden_size": 256, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "intermediate_size": 256,
    "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "num_experts": 4, "num_experts_per_tok": 2,
    "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
    "max_position_embeddings": 4096})


def test_a_hybrid_shows_its_fixed_state_as_its_own_part(at):
    """A hybrid's per-sequence bytes are its K/V of 2 layers plus the fixed state of 6, shown as its own stat, named in
    the formula line and drawn as its own part of the GPU's memory (issue 31, wrong 3 and misleading 1)."""
    from viz.core.scale.count import read_model

    own_config(at, HYBRID_TEXT)
    memory = cache_memory(read_model(HYBRID_TEXT), 4096)
    assert not errors(at) and memory.state_bytes_per_sequence > 0
    assert stat_value(at, "Fixed state") == format_bytes(memory.state_bytes_per_sequence)
    assert stat_value(at, "Per sequence") == format_bytes(memory.bytes_per_sequence + memory.state_bytes_per_sequence)
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "2 · 2 layers" in text and "fixed state of" in text and "6 linear-attention" in text
    split = figure(at, "Where the")
    assert "fixed state of the batch" in [trace["name"] for trace in split["data"]]
    curve = figure(at, "Cache memory grows")  # the state drawn flat under the growing K/V
    flat = [shape for shape in curve["layout"]["shapes"] if shape["y0"] == shape["y1"]]
    assert any(abs(shape["y0"] - memory.state_bytes_per_sequence / 1024**3) < 1e-12 for shape in flat)


def test_the_roofline_names_memory_first_and_one_sequence(at):
    """Llama-3-70B on 8 H100s at a batch of 64: the narration says one sequence overtakes the weights from 424,213
    tokens (not the batch's 6,629), that memory caps the batch before the sweep's 1,024, and that TP adds two
    all-reduces per layer (issue 31, wrong 2 and 6, misleading 4)."""
    at.selectbox(key="scale_model").select("Llama-3-70B")
    rerun(at)
    at.number_input(key="scale_gpu_count").set_value(8)
    at.number_input(key="scale_batch").set_value(64)
    rerun(at)
    text = " ".join(m.value for m in at.markdown)
    assert "for one sequence, from 424,213 tokens" in text and "6,629" not in text
    fits = int(stat_value(at, "Sequences that fit").replace(",", ""))
    assert f"only {fits:,} sequences of 8,192 tokens fit in memory" in text and "Memory comes first" in text
    assert any("two all-reduces per layer" in c.value for c in at.caption)


def test_mla_under_tensor_parallelism_teaches_data_parallel_attention(at):
    """DeepSeek-V3 on 8 GPUs: the latent is copied on every GPU, and the page names the remedy serving engines use,
    data-parallel attention (issue 31, missing lesson 3)."""
    at.selectbox(key="scale_model").select("DeepSeek-V3")
    rerun(at)
    at.number_input(key="scale_gpu_count").set_value(8)
    rerun(at)
    info = " ".join(i.value for i in at.info)
    assert "data-parallel attention" in info and "--enable-dp-attention" in info
    caption = " ".join(c.value for c in at.caption)  # and the latent is what current engines cache (misleading 7)
    assert "transformers 4.x cached the expanded per-head K and V, 71× more" in caption


def test_the_transformers_tab_shows_the_prefill_peak(at):
    """Gemma-2-9B at 8,192 tokens: right after prefill every sliding layer still holds the whole prompt, so the peak
    storage is above the storage after the step (issue 31, misleading 2)."""
    at.selectbox(key="scale_model").select("Gemma-2-9B")
    rerun(at)
    at.session_state["scale_tab"] = "transformers' own count"
    rerun(at)
    per_token_layer = 2 * 8 * 256 * 2
    assert stat_value(at, "transformers: right after prefill") == format_bytes(42 * 8191 * per_token_layer)
    assert stat_value(at, "The formula") == format_bytes((21 * 8192 + 21 * 4096) * per_token_layer)
    assert stat_value(at, "transformers: storage") == "= the formula"  # byte for byte, not its size again
    assert any("Memory runs out at that peak" in m.value for m in at.markdown)


def test_a_model_without_attention_draws_every_tab(at):
    """Mamba keeps no K/V: every tab draws (no division by zero), per sequence is its state, and the formula line
    says no layer keeps K/V (issue 29, item 3)."""
    own_config(at, json.dumps({"model_type": "mamba", "num_hidden_layers": 4, "hidden_size": 256, "state_size": 16,
                               "expand": 2, "conv_kernel": 4, "vocab_size": 1024}))
    at.number_input(key="scale_gpu_count").set_value(2)
    at.session_state["scale_tab"] = "transformers' own count"
    rerun(at)
    assert not errors(at) and not at.exception
    state = 4 * (512 * 4 * 2 + 512 * 16 * 4)
    assert stat_value(at, "Per sequence") == format_bytes(state)  # all it keeps: no 'Fixed state' saying it again
    assert "Fixed state" not in stat_labels(at)
    text = " ".join(m.value for m in at.markdown).replace("\\", "")
    assert "no layer keeps K/V" in text and "none ·" in text


def test_the_first_tab_uses_an_input_a_later_tab_holds(at):
    """The cache curve (first tab) marks the cache the GPUs hold, which the GPU tab's utilization slider
    (drawn after it) sets: one view worked out before the tabs, so they are laid out in their order."""
    def held(at) -> str:  # the curve's note of the cache the GPUs hold (far above a 4,096-token curve), one line
        curve = figure(at, "Cache memory grows")
        return " ".join(_one_line(a["text"]) for a in curve["layout"]["annotations"]
                        if "far above this chart" in _one_line(a["text"]))

    before = held(at)
    at.slider(key="scale_usable").set_value(0.5)
    rerun(at)
    fit = gpu_fit(cache_memory(preset("Llama-2-7B"), 4096), GPU_BY_NAME["H100 SXM"], 1, "fp16/bf16", 0.5)
    assert f"hold, {format_bytes(fit.capacity_bytes)}," in held(at) and held(at) != before
    assert [t.label for t in at.tabs][:3] == ["Cache memory", "transformers' own count", "On GPUs"]


def test_the_gpu_tab_opens_with_its_split(at):
    """'On GPUs' opens with where the GPU's memory goes (the picture first, issue 32), then the engine's share
    it is drawn from, its two inputs and the numbers: a projector showed a paragraph, two inputs and four
    numbers before the figure, which started at 612 px of 720."""
    from test_page_serving import in_page_order

    tab = next(t for t in at.tabs if t.label == "On GPUs")
    kinds = [(type(e).__name__, getattr(e, "label", None), type(getattr(e, "proto", None)).__name__)
             for e in in_page_order(tab)]
    chart = next(i for i, k in enumerate(kinds) if k[2] == "PlotlyChart")
    later = [i for i, k in enumerate(kinds) if k[0] in ("Slider", "NumberInput", "Markdown", "Metric")]
    assert later and chart < min(later), kinds


def _one_line(text: str) -> str:
    """A note as read: its lines (broken to fit a phone) joined, no-break spaces as spaces."""
    return text.replace("<br>", " ").replace("\u00a0", " ")


@pytest.mark.parametrize("gpus, words", [(1, "the cache the GPU can hold"), (2, "the cache the 2 GPUs can hold")])
def test_the_curves_note_counts_the_gpus(at, gpus, words):
    """The note on the cache curve names the GPUs as many as there are: 'the GPU' for the default one
    (it said 'the GPUs' for one GPU, a teacher's review)."""
    at.number_input(key="scale_gpu_count").set_value(gpus)
    rerun(at)
    notes = [_one_line(a["text"]) for a in figure(at, "Cache memory grows")["layout"]["annotations"]]
    assert any(n.startswith(words) and n.endswith("is far above this chart") for n in notes), notes
    assert gpus > 1 or not any("GPUs" in n for n in notes), notes


# the curve's plot on a phone (358-px figure less the y axis's title and numbers), and its notes' type:
# 12 px at 0.52 em a character (Source Sans measures about 0.44 em: the estimate is generous)
PHONE_PLOT_PX, NOTE_CHAR_PX, NOTE_LINE_PX, PHONE_PLOT_HEIGHT_PX = 288, 12 * 0.52, 16, 200


def _boxes(spec: dict) -> tuple[list[float], list[tuple[str, float, float, float, float]]]:
    """The curve's vertical lines (fractions of its x axis) and each of its words' box on a phone's plot:
    (text, left, right as fractions of the plot's width, top, bottom in px from the plot's top)."""
    layout = spec["layout"]
    vertical = [s for s in layout.get("shapes", []) if s.get("x0") is not None and s["x0"] == s.get("x1")
                and s.get("xref", "x") == "x"]
    span = max([max(t["x"]) for t in spec["data"]] + [s["x0"] for s in vertical])
    boxes = []
    for a in layout["annotations"]:
        lines = a["text"].split("<br>")
        width = max(len(line) for line in lines) * NOTE_CHAR_PX / PHONE_PLOT_PX
        x = a["x"] if a.get("xref") == "paper" else a["x"] / span
        x += (a.get("xshift") or 0) / PHONE_PLOT_PX
        left = {"left": x, "right": x - width, "center": x - width / 2}[a.get("xanchor", "center")]
        height = len(lines) * NOTE_LINE_PX
        at_top = a["y"] == 1  # a line's label at its top, or a note under those labels; else at the plot's foot
        top = -(a.get("yshift") or 0) if at_top else PHONE_PLOT_HEIGHT_PX - height - (a.get("yshift") or 0)
        boxes.append((a["text"], left, left + width, top, top + height))
    return [s["x0"] / span for s in vertical], boxes


@pytest.mark.parametrize("tokens", [4096, 1000, 2048, 6000])
def test_the_curves_words_cross_no_line_and_no_other_words(at, tokens):
    """On a phone's plot, no word on the cache curve touches or crosses a vertical line (the chosen length,
    the trained context), nor another's words: the note 'the cache … is far above this chart' was drawn
    across the dotted 4,096-token line on a 390-px phone, and '4,096 tokens' touched it (a student's and a
    teacher's review). At 1,000 and 2,048 tokens the trained context's line stands at the axis's end or
    between, at 6,000 before the chosen length."""
    at.number_input(key="scale_tokens").set_value(tokens)
    rerun(at)
    lines, boxes = _boxes(figure(at, "Cache memory grows"))
    assert any("far above" in _one_line(text) for text, *_ in boxes) and len(lines) == (1 if tokens == 4096 else 2)
    for text, left, right, top, bottom in boxes:
        assert -0.04 <= left and right <= 1.04, (text, left, right)  # the estimate's own margin: 12 px
        assert not any(left <= x <= right for x in lines), (text, left, right, lines)
    for i, (text, left, right, top, bottom) in enumerate(boxes):
        for other, left2, right2, top2, bottom2 in boxes[i + 1:]:
            assert right <= left2 or right2 <= left or bottom <= top2 or bottom2 <= top, (text, other)
