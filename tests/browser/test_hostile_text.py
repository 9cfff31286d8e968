"""Tier 3 (browser): visitor text that looks like Markdown, HTML or LaTeX reaches the DOM as text.

The hostile scenario of tests/hostile_text.py (every token, head name, rule, word, the title, the
description and the prompt a link, an image, HTML, LaTeX, a directive, an icon or an emoji
shortcode) is opened from a share link on every registered page, three tokens into decode. The
DOM must hold no anchor and no image made from it, no KaTeX, no emoji or icon made from a
shortcode, and no script may have run.
"""

from __future__ import annotations

from playwright.sync_api import expect

from hostile_text import HTML_IMAGE, ICON, LINK, SCENARIO, record
from viz.core.engine.share import View, encode_view
from viz.ui.common import md_escape

# Anything in the DOM built from the hostile strings, if Markdown, HTML or LaTeX had been rendered.
MADE_FROM_USER_TEXT = ('a[href*="example.org"]', 'img[src*="example.org"]', 'img[src="x"]', ".katex",
                       ".katex-display", "h1:has-text('heading')", "script:has-text('alert')")


def test_hostile_text_stays_text_on_every_page(app, registered_page):
    """No link, image, KaTeX, emoji or icon is made from visitor text; the text shows as typed."""
    app.open(registered_page.url_path, **encode_view(View(SCENARIO, step=3)))
    app.assert_no_exception()
    for selector in MADE_FROM_USER_TEXT:
        expect(app.page.locator(selector)).to_have_count(0)
    text = app.page.locator("body").inner_text()
    assert "😄" not in text  # :smile: stayed a shortcode
    assert app.dialogs == []  # <img onerror=alert(1)> never ran
    if registered_page.name in ("prefill", "decode", "memory"):  # these pages quote the tokens
        expect(app.main).to_contain_text(LINK)
        expect(app.main).to_contain_text(HTML_IMAGE)
    if registered_page.name == "prefill":
        expect(app.main).to_contain_text(ICON)  # the head name, not a house icon
        position = app.main.get_by_role("slider", name="Step · query position")  # the slider quotes the token, escaped
        expect(position).to_have_attribute("aria-valuetext", md_escape(f"1 · {LINK}"))
        expect(app.main.get_by_text("divides by zero", exact=False).first).to_be_visible()
    app.screenshot(f"hostile-{registered_page.name}")
    record("Visitor text in Chromium, every page (DOM: no anchor, image, KaTeX, emoji, dialog)", "ran")
