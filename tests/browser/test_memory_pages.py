"""Tier 3 (browser): the At scale and Memory pages load in Chromium, react to a control, and are screenshotted."""

from __future__ import annotations

from playwright.sync_api import expect

from viz.core.scale.memory import cache_memory, format_bytes
from viz.core.scale.model_config import preset


def test_at_scale_page_switches_model(app):
    """At scale shows Llama-2-7B's 2 GiB per sequence; choosing Llama-3-8B shows its 1 GiB at 8192 tokens."""
    app.open("/at_scale")
    app.assert_no_exception()
    expect(app.page.get_by_role("dialog")).to_have_count(0)
    expect(app.stat("Per sequence")).to_have_text("2 GiB")
    app.screenshot("at-scale-llama2-7b")
    app.main.get_by_test_id("stSelectbox").filter(has_text="Model").first.click()
    with app.rerun():
        app.page.get_by_role("option", name="Llama-3-8B", exact=True).click()
    app.assert_no_exception()
    expected = format_bytes(cache_memory(preset("Llama-3-8B"), 8192).bytes_per_sequence)
    expect(app.stat("Per sequence")).to_have_text(expected)
    expect(app.figure_title("Cache memory grows with every token")).to_be_visible()
    app.screenshot("at-scale-llama3-8b")
    with app.rerun():  # the tab lays the cache out only when open, so opening it reruns
        app.page.get_by_role("tab", name="transformers' own count").click()
    expect(app.stat("The formula")).to_have_text(expected)
    expect(app.stat("transformers: storage")).to_have_text("= the formula")  # byte for byte
    app.screenshot("at-scale-transformers-count")
    with app.rerun():
        app.page.get_by_role("tab", name="What limits a decode step").click()
    expect(app.stat("Time per token")).to_contain_text("ms")
    expect(app.main.get_by_text("Roofline: H100 SXM, fp16/bf16")).to_be_visible()
    app.screenshot("at-scale-roofline")


def test_memory_page_paged_blocks_and_eviction(app):
    """Memory draws the pool (opening at its first iteration, stepped forward to its last) and its waste;
    quantisation and sinks show their comparison without errors."""
    app.open("/memory")
    app.assert_no_exception()
    expect(app.page.get_by_role("dialog")).to_have_count(0)
    expect(app.main.get_by_text("Physical blocks after prefill A")).to_be_visible()
    app.step_to_last("memory_snapshot")
    expect(app.main.get_by_text("Physical blocks after decode 3")).to_be_visible()
    expect(app.main.get_by_text("identical to decoding each sequence alone", exact=False)).to_be_visible()
    app.screenshot("memory-paged")
    app.show("Eviction and quantisation")  # the page's sections: only the one shown is built
    with app.rerun():
        app.page.get_by_role("radio", name="Quantise", exact=True).click()
    app.assert_no_exception()
    expect(app.stat("First changed word")).to_have_text("none")
    expect(app.main.get_by_text("int8, per-token scales", exact=False).first).to_be_visible()
    app.screenshot("memory-quantise")
    with app.rerun():
        app.page.get_by_role("radio", name="KIVI", exact=True).click()
    app.assert_no_exception()
    expect(app.main.get_by_text("KIVI: keys per channel in groups of 4", exact=False).first).to_be_visible()
    app.screenshot("memory-quantise-kivi")
    with app.rerun():
        app.page.get_by_role("radio", name="Sinks + window", exact=True).click()
    app.assert_no_exception()
    expect(app.main.get_by_text("keep the last 3 + the first 1", exact=False).first).to_be_visible()
    app.screenshot("memory-sinks")
