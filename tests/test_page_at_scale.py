"""Tier 2: the At scale page renders inside the app and every control changes what it should."""

from __future__ import annotations

import pytest
from apptest_helpers import by_label, errors, figure

from viz import generate, load_preset
from viz.core.memory import PRESETS, cache_memory, format_bytes, gpu_fit, toy_cache_memory

PAGE = "pages/at_scale.py"


@pytest.fixture
def at(app):
    """The app, switched to the At scale page."""
    app.switch_page(PAGE).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def metric(at, label: str) -> str:
    """The value shown by the metric with this label."""
    return by_label(at.metric, label).value


def rerun(at):
    """Run again and check nothing raised."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_default_is_llama2_7b_with_the_published_2_gib(at):
    """By default the page shows Llama-2-7B in fp16 at 4096 tokens: 512 KiB per token, 2 GiB per sequence."""
    assert at.selectbox(key="scale_model").value == "Llama-2-7B"
    assert metric(at, "Per token") == "512 KiB"
    assert metric(at, "Per sequence") == "2 GiB"
    assert metric(at, "Sequences that fit") == f"{gpu_fit(cache_memory(PRESETS['Llama-2-7B'], 4096), 80).sequences:,}"


def test_choosing_a_model_sets_its_context_and_its_bytes(at):
    """Picking Llama-3-8B moves the context to its 8192 tokens and shows 1 GiB per sequence."""
    at.selectbox(key="scale_model").select("Llama-3-8B")
    rerun(at)
    assert at.number_input(key="scale_tokens").value == 8192
    assert metric(at, "Per sequence") == "1 GiB"
    assert metric(at, "Per token") == "128 KiB"


def test_dtype_batch_and_length_change_the_numbers(at):
    """fp32 doubles the per-token bytes; a batch of 4 multiplies the batch; a shorter context shrinks it."""
    at.selectbox(key="scale_dtype").select("fp32")
    rerun(at)
    assert metric(at, "Per token") == "1 MiB"
    at.number_input(key="scale_batch").set_value(4)
    at.number_input(key="scale_tokens").set_value(1024)
    rerun(at)
    assert metric(at, "Per sequence") == "1 GiB"
    assert metric(at, "Per batch") == "4 GiB"


def test_gpu_controls_change_what_fits(at):
    """Llama-2-70B's fp16 weights do not fit one 80 GiB GPU (an error says so); two GPUs fit them."""
    at.selectbox(key="scale_model").select("Llama-2-70B")
    rerun(at)
    assert metric(at, "Sequences that fit") == "0"
    assert any("do not fit" in e for e in errors(at))
    at.number_input(key="scale_gpu_count").set_value(2)
    rerun(at)
    expected = gpu_fit(cache_memory(PRESETS["Llama-2-70B"], 4096), 80, 2).sequences
    assert metric(at, "Sequences that fit") == f"{expected:,}" and expected > 0
    assert not at.error
    at.selectbox(key="scale_gpu").select("16 GB (T4, V100-16GB)")
    at.selectbox(key="scale_weights_dtype").select("int4")
    rerun(at)
    assert metric(at, "Weights") == format_bytes(68_976_648_192 // 2)


def test_beyond_the_trained_context_warns(at):
    """A context longer than the model's trained length shows a warning."""
    at.number_input(key="scale_tokens").set_value(5000)
    rerun(at)
    assert any("longer than the 4,096 tokens" in w.value for w in at.warning)


def test_custom_model_and_a_refused_configuration(at):
    """A custom GQA model is computed from its fields; an impossible one shows a message and keeps
    the last good numbers."""
    at.selectbox(key="scale_model").select("Custom")
    rerun(at)
    assert metric(at, "Per token") == format_bytes(2 * 32 * 8 * 128 * 2)
    at.number_input(key="scale_custom_kv_heads").set_value(5)
    rerun(at)
    assert any("KV heads" in e and "last configuration" in e for e in errors(at))
    assert metric(at, "Per token") == format_bytes(2 * 32 * 8 * 128 * 2)
    at.number_input(key="scale_custom_kv_heads").set_value(4)
    rerun(at)
    assert not at.error and metric(at, "Per token") == format_bytes(2 * 32 * 4 * 128 * 2)


def test_custom_mla_uses_latent_and_rope(at):
    """Switching the custom model to MLA counts latent + RoPE numbers per token and layer."""
    at.selectbox(key="scale_model").select("Custom")
    rerun(at)
    at.segmented_control(key="scale_custom_attention").set_value("MLA")
    rerun(at)
    assert metric(at, "Per token") == format_bytes((512 + 64) * 32 * 2)


def test_toy_cache_comes_from_the_engine(at):
    """The toy's row shows the bytes the engine's cache holds for the current scenario."""
    toy = toy_cache_memory(generate(load_preset("seed"), 1, "kv").cache)
    table = next(d.value for d in at.dataframe if "whole cache" in d.value.columns)
    assert table["whole cache"][0] == format_bytes(toy.nbytes)
    assert table["per token"][0] == format_bytes((4 * 64 + 1) * 4)


def test_published_checks_are_listed(at):
    """The published-figures expander shows the three checks with the calculator's bytes."""
    text = " ".join(m.value for m in at.markdown)
    assert "2,147,483,648 bytes" in text and "1,073,741,824 bytes" in text and "819,200 bytes" in text


def test_compare_adds_curves(at):
    """Choosing models to compare adds their lines to the context-length plot."""
    at.multiselect(key="scale_compare").select("Gemma-2-9B").select("DeepSeek-V3")
    rerun(at)
    assert at.multiselect(key="scale_compare").value == ["Gemma-2-9B", "DeepSeek-V3"]
    curves = [trace for trace in figure(at, "Cache memory grows")["data"] if trace.get("mode") == "lines"]
    assert [trace["name"] for trace in curves] == ["Llama-2-7B", "Gemma-2-9B", "DeepSeek-V3"]
