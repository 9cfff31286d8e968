"""Tier 3 (browser): the app frame in Chromium: every registered page, the sidebar editors, refused
edits, presenter mode, share links and user text that looks like HTML.

Expected numbers come from the engine (``viz.generate``), never from literals typed here.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from viz import Scenario, generate, load_preset
from viz.core.engine.explain import fmt, narrate_step
from viz.core.engine.scenario import Head
from viz.core.lessons import words_prefill
from viz.core.engine.share import View, decode_scenario, encode_view
from viz.tools.protocol import kind, parse

HOSTILE = "<img src=x onerror=alert(1)>"


def last_context(scenario: Scenario) -> str:
    """The last prompt position's context as the Prefill page writes it, from the engine."""
    context = generate(scenario, 1).steps[0].context
    return "[" + ", ".join(fmt(float(c)) for c in context) + "]"


def context_line(app):
    """The Prefill sentence that states the last position's context vector (in its own section)."""
    app.show("From context to word")  # the page's sections: only the one shown is drawn
    return app.main.locator("p", has_text="The context of the last position")


def token_column(app, count: int) -> list:
    """The first ``count`` cells of the sidebar token table's token column."""
    grid = app.expander("Tokens and values", app.sidebar, reruns=True).get_by_test_id("stDataFrame")
    return [app.cell(grid, row, "token") for row in range(count)]


def test_every_registered_page_loads(app, registered_page):
    """Each page app.py registers opens at its url path, marked current, with no exception."""
    app.open(registered_page.url_path)
    current = app.sidebar.locator('[data-testid="stSidebarNavLink"][aria-current="page"]')
    expect(current).to_have_count(1)
    expect(current).to_contain_text(registered_page.title)
    expect(app.page.get_by_role("dialog")).to_have_count(0)  # e.g. Streamlit's "Page not found"
    prompt = app.sidebar.get_by_test_id("stExpander").filter(has=app.page.locator("summary", has_text="Prompt"))
    if registered_page.editors:  # the prompt's fold, the first editor panel
        expect(prompt).to_be_visible()
    else:  # pages that do not read the scenario leave its editors out
        expect(app.sidebar.get_by_text("This page does not use the scenario editors")).to_be_visible()
        expect(prompt).to_have_count(0)
    app.assert_no_exception()
    assert app.dialogs == []
    app.screenshot(f"page-{registered_page.name}")


def test_navigation_lists_the_registered_pages_in_order(app, app_pages):
    """The sidebar navigation links are exactly app.py's pages, titles and addresses, in order."""
    app.open("/")
    links = app.sidebar.get_by_test_id("stSidebarNavLink")
    expect(links).to_have_count(len(app_pages))
    for link, registered in zip(links.all(), app_pages):
        expect(link).to_contain_text(registered.title)
        assert link.get_attribute("href") == app.server.url + registered.url_path


def test_a_refused_prompt_stays_in_the_box_and_a_draft_survives_a_step(app):
    """An empty prompt is refused: the box (st.text_input) keeps what was typed, with the message
    below it; text typed and then left for Step is sent as the box is left, applies, and stays in
    the box through the rerun; the message goes."""
    app.open("/decode")
    box = app.prompt()
    app.type_text("Prompt", "   ")
    expect(box).to_have_value("   ")
    expect(app.sidebar.get_by_test_id("stAlertContentError")).to_contain_text("no tokens")
    box.fill("a draft not sent")
    app.click_button("Step")  # leaving the box sends what it holds (Streamlit's text input), then Step
    expect(box).to_have_value("a draft not sent")  # the rerun did not overwrite the visitor's typing
    expect(app.sidebar.get_by_test_id("stAlertContentError")).to_have_count(0)
    assert decode_scenario(app.query["s"]).tokens == ("a", "draft", "not", "sent")
    app.assert_no_exception()


def test_typing_a_prompt_retokenises(app):
    """A new prompt typed in the sidebar fills the token table and the page with the new tokens."""
    app.open("/prefill")
    app.prompt()
    app.type_text("Prompt", "The cat sat on the mat")
    expected = ["The", "cat", "sat", "on", "the", "mat"]
    for cell, token in zip(token_column(app, len(expected)), expected):
        expect(cell).to_have_text(token)
    assert decode_scenario(app.query["s"]).tokens == tuple(expected)
    app.expander(words_prefill.ABOUT, app.main, reruns=True)  # the scenario's size, built when opened
    expect(app.main).to_contain_text(f"{len(expected)} tokens")
    expect(context_line(app)).to_contain_text(last_context(decode_scenario(app.query["s"])))
    app.assert_no_exception()
    app.screenshot("frame-prompt-retokenised")


def test_bad_rule_shows_error_and_keeps_the_numbers(app):
    """A hostile rule typed into the heads table is refused next to it; the numbers stay; a fix applies."""
    seed = load_preset("seed")
    app.open("/prefill")
    expect(context_line(app)).to_contain_text(last_context(seed))
    link = app.query["s"]
    heads = app.expander("Heads", app.sidebar, reruns=True)
    grid = heads.get_by_test_id("stDataFrame")

    app.edit_cell(grid, 0, "rule", "__import__('os').system('echo owned')")
    error = heads.get_by_test_id("stAlertContentError")
    expect(error).to_contain_text("heads, row 1, rule")
    expect(context_line(app)).to_contain_text(last_context(seed))
    assert app.query["s"] == link and decode_scenario(link) == seed
    app.assert_no_exception()
    app.screenshot("frame-bad-rule-refused")

    app.edit_cell(grid, 0, "rule", "k.pos == q.pos")
    fixed = seed.with_heads([Head("even", "k.pos == q.pos"), *seed.heads[1:]], [0, 1, 2, 3])
    expect(context_line(app)).to_contain_text(last_context(fixed))
    expect(error).to_have_count(0)
    assert decode_scenario(app.query["s"]) == fixed


def test_a_refused_cell_typed_back_is_refused_no_more(app):
    """A refused rule, then the rule in force typed back: the browser drops the edit, and the sidebar's
    message and the page's notice go with it, also on the next page."""
    app.open("/decode")
    heads = app.expander("Heads", app.sidebar, reruns=True)
    grid = heads.get_by_test_id("stDataFrame")
    app.edit_cell(grid, 0, "rule", "k.pos ==")
    error = heads.get_by_test_id("stAlertContentError")
    notice = app.main.get_by_text("still shows the last good scenario")
    expect(error).to_contain_text("heads, row 1, rule")
    expect(notice).to_have_count(1)
    app.edit_cell(grid, 0, "rule", load_preset("seed").heads[0].rule)
    expect(error).to_have_count(0)
    expect(notice).to_have_count(0)
    with app.rerun():
        app.sidebar.get_by_test_id("stSidebarNavLink").filter(has_text="Prefill").click()
    expect(app.sidebar.get_by_test_id("stAlertContentError")).to_have_count(0)
    expect(app.main.get_by_text("still shows the last good scenario")).to_have_count(0)
    app.assert_no_exception()


def test_presenter_mode_folds_editors_and_enlarges_type(app):
    """Presenter mode hides the editors and enlarges the type; → steps decode; switching back restores."""
    app.open("/decode")
    root, text = app.page.locator("html"), app.main.locator("p")
    root_px, text_px = app.font_size_px(root), app.font_size_px(text)
    # the scenario editors' panels; the Class mode panel and the Copy link fold stay in presenter mode
    # (a teacher presents and shares)
    editors = app.sidebar.get_by_test_id("stExpander").filter(has_not_text="Class mode").filter(
        has_not_text="Copy link")
    expect(editors.first).to_be_visible()

    app.toggle("Presenter mode")
    expect(editors).to_have_count(0)
    expect(app.sidebar.get_by_role("textbox", name="Prompt", exact=True)).to_have_count(0)
    assert app.font_size_px(root) >= 1.25 * root_px
    assert app.font_size_px(text) >= 1.25 * text_px
    assert app.query.get("present") == "1"
    for label in ("Reset", "Back", "Step", "Run"):  # large type must not cut the step controls short
        assert not app.clipped(app.main.get_by_role("button", name=label)), label
    app.main.get_by_test_id("stAlertContentInfo").first.click()  # focus off the toggle: shortcuts skip focused widgets
    with app.rerun():
        app.page.keyboard.press("ArrowRight")
    assert app.query.get("step") == "1"
    narration = narrate_step(generate(load_preset("seed"), 2, "kv"), 1)
    expect(app.main.get_by_test_id("stAlertContentInfo").first).to_contain_text(narration)
    app.assert_no_exception()
    app.screenshot("frame-presenter-decode")

    # presenter mode folded the sidebar: a teacher opens it with » to leave presenter mode
    app.page.get_by_test_id("stExpandSidebarButton").click()
    expect(app.sidebar).to_have_attribute("data-collapsed", "false")
    app.toggle("Presenter mode")
    expect(editors.first).to_be_visible()
    assert app.font_size_px(root) == root_px
    assert app.font_size_px(text) == text_px
    assert "present" not in app.query


def test_shared_url_restores_the_view(app, new_app):
    """The address bar after an edit and two steps, opened by a fresh visitor, shows the same view."""
    app.open("/decode")
    app.prompt()
    app.type_text("Prompt", "Today's weather is so very")
    app.click_button("Step")
    app.click_button("Step")
    link = app.page.url
    assert app.query["step"] == "2"

    other = new_app().open_url(link)
    expect(other.prompt()).to_have_value(
        "Today's weather is so very")
    expect(token_column(other, 5)[4]).to_have_text("very")
    assert other.query == app.query
    scenario = decode_scenario(other.query["s"])
    narration = narrate_step(generate(scenario, 3, "kv"), 2)
    for visitor in (app, other):
        expect(visitor.main.get_by_test_id("stAlertContentInfo").first).to_contain_text(narration)
    assert other.main.inner_text() == app.main.inner_text()
    other.assert_no_exception()
    other.screenshot("frame-decode-restored-from-link")


def test_html_typed_into_the_prompt_stays_text(app):
    """'<img src=x onerror=alert(1)>' typed as the prompt shows literally and runs nothing."""
    app.open("/prefill")
    app.prompt()
    app.type_text("Prompt", HOSTILE)
    expect(app.sidebar.get_by_role("textbox", name="Prompt", exact=True)).to_have_value(HOSTILE)
    tokens = decode_scenario(app.query["s"]).tokens
    assert "onerror" in tokens and "<" in tokens
    for cell, token in zip(token_column(app, len(tokens)), tokens):
        expect(cell).to_have_text(token)
    expect(app.page.locator('img[src="x"]')).to_have_count(0)
    app.assert_no_exception()
    assert app.dialogs == []
    app.screenshot("frame-html-prompt")


def test_html_token_is_text_on_every_page(app, app_pages):
    """A share link whose token, head name and word are HTML: every page shows them as text, runs nothing."""
    seed = load_preset("seed").to_dict()
    seed["tokens"] = ["Today", HOSTILE, "is", "so"]
    seed["heads"][3]["name"] = "<b>bold</b>"
    seed["vocab"][0]["token"] = "<script>alert(2)</script>"
    params = encode_view(View(Scenario.from_dict({k: v for k, v in seed.items() if k != "prompt"})))
    for registered in app_pages:
        app.open(registered.url_path, **params)
        expect(app.page.locator('img[src="x"]')).to_have_count(0)
        expect(app.page.locator("b", has_text=re.compile(r"^bold$"))).to_have_count(0)
        expect(app.page.locator("script", has_text="alert(2)")).to_have_count(0)
        if registered.script == "pages/prefill.py":
            expect(app.main.get_by_text(HOSTILE).filter(visible=True).first).to_be_visible()
        app.assert_no_exception()
        app.screenshot(f"frame-html-token-{registered.name}")
    assert app.dialogs == []


def test_first_visit_to_a_deep_link_on_a_cold_server(new_app, start_server, app_pages):
    """A fresh server's very first visitor, arriving on a non-default page, gets the frame and no dialog."""
    cold = start_server()
    # Streamlit's legacy pages/ discovery runs before app.py on a cold server and knows pages by
    # file name, so a page served under another name is the hardest case; take it if there is one.
    deep = [page for page in app_pages if page.url_path != "/"]
    target = sorted(deep, key=lambda page: page.url_path.strip("/") == page.name)[0]
    visitor = new_app(cold).open(target.url_path)
    expect(visitor.switch("Presenter mode", visitor.sidebar)).to_be_visible()
    current = visitor.sidebar.locator('[data-testid="stSidebarNavLink"][aria-current="page"]')
    expect(current).to_contain_text(target.title)
    expect(visitor.page.get_by_role("dialog")).to_have_count(0)
    visitor.assert_no_exception()
    visitor.screenshot(f"frame-cold-first-visit-{target.name}")


def test_a_share_link_is_drawn_by_the_visitors_first_run(new_app, start_server):
    """A share link opens at / and names its page; the visitor's first run goes there with
    st.switch_page (two runs on the socket: the frame at /, then the page), and the address bar
    then holds the page's own address with the view. On a cold server: the class's first student."""
    app = new_app(start_server())
    view = encode_view(View(load_preset("seed"), step=2))
    received: list[bytes] = []
    app.page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(payload)))
    app.open("/", page="decode", **view)
    expect(app.main.get_by_role("heading", level=1)).to_contain_text("Decode")
    kinds = [kind(message) for message in map(parse, received) if message is not None]
    assert kinds.count("new_session") == 2, kinds
    assert app.page.url.split("?")[0].endswith("/decode") and app.query == view
    app.assert_no_exception()
