"""Tier 3 (browser): the Real model page in Chromium: prefill, a decode step on the real cache,
cache vs no cache, and a matched rule loaded into the toy; a screenshot of each."""

from __future__ import annotations

from playwright.sync_api import expect


def open_tab(app, name: str) -> None:
    """Show a tab (switching tabs does not rerun the script)."""
    app.page.get_by_role("tab", name=name).click()
    expect(app.page.get_by_role("tab", name=name)).to_have_attribute("aria-selected", "true")


def test_real_model_page_end_to_end(app):
    """Every tab renders without an exception, and its main control does what it says."""
    app.open("/real_model")
    app.assert_no_exception()
    expect(app.page.get_by_role("dialog")).to_have_count(0)
    expect(app.main.get_by_text("kvlab-pydoc (shipped)")).to_be_visible()
    expect(app.main.get_by_text("Attention of every head")).to_be_visible()
    app.screenshot("real-model-prefill")

    open_tab(app, "Decode with the KV cache")
    cached = int(app.stat("Tokens in the cache").inner_text())
    app.click_button("Step")
    app.assert_no_exception()
    expect(app.stat("Tokens generated")).to_have_text("1")
    expect(app.stat("Tokens in the cache")).to_have_text(str(cached + 1))
    expect(app.stat("Formula")).to_have_text(app.stat("Cache bytes (measured)").inner_text())
    app.screenshot("real-model-decode")
    for key, generated in (("PageDown", "2"), ("ArrowLeft", "1")):  # the lesson's keys, as on Decode
        with app.rerun():
            app.page.keyboard.press(key)
        expect(app.stat("Tokens generated")).to_have_text(generated)
    expect(app.main.get_by_test_id("stAlertContentInfo").filter(has_text="Step 1: the model picked")).to_be_visible()

    open_tab(app, "K/V heads")
    expect(app.stat("Cache per token (measured)")).to_have_text("4,096 B")
    with app.rerun():
        app.page.get_by_role("radio", name="Llama: 8 query heads share 2 K/V heads (GQA)", exact=True).click()
    app.assert_no_exception()
    expect(app.main.get_by_text("kvlab-pydoc-llama (shipped)")).to_be_visible()
    open_tab(app, "K/V heads")
    expect(app.stat("Cache per token (measured)")).to_have_text("1,024 B")
    app.screenshot("real-model-llama-kv-heads")
    with app.rerun():
        app.page.get_by_role("radio", name="GPT-2: every query head has its own K/V head", exact=True).click()

    open_tab(app, "Cache vs no cache")
    app.click_button("Run both ways")
    app.assert_no_exception()
    expect(app.stat("Same tokens")).to_have_text("yes")
    assert float(app.stat("max |logit difference|").inner_text()) < 1e-4
    expect(app.main.get_by_text("Measured speed of each decode step")).to_be_visible()
    app.screenshot("real-model-compare")

    open_tab(app, "Heads that look like rules")
    expect(app.figure_title("Every head against every rule")).to_be_visible()
    app.screenshot("real-model-rules")
    with app.rerun():
        app.main.get_by_role("button", name="Add '").click()
    app.assert_no_exception()
    open_tab(app, "Heads that look like rules")
    expect(app.main.get_by_text("to the toy scenario.", exact=False).first).to_be_visible()
    app.screenshot("real-model-rule-added")
