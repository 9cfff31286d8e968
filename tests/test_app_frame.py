"""Tier 2 (AppTest): the shared frame: sidebar editors, errors that keep the last good state,
presets, presenter mode and share links."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from viz import Scenario, load_preset
from viz.core.engine.presets import preset_names
from viz.core.limits import MAX_PROMPT_CHARS
from viz.core.engine.share import View, encode_view
from viz.tools.loadtest import CLASS_LINK
from viz.ui import state, widgets
from viz.ui.sidebar import LINK_OPEN, PRESET

from apptest_helpers import (by_label, choice_data, flip, pick, edit_table, errors, has_prompt_box, prompt_shown, scenario, send_prompt,
                             shown, widget, widget_key)


def test_app_opens_with_the_seed(app):
    """The default view is the seed scenario at step 0."""
    assert scenario(app) == load_preset("seed")
    assert app.session_state[state.STEP] == 0
    assert prompt_shown(app) == "Today's weather is so …"


def test_prompt_edit_retokenises_and_keeps_values(app):
    """Typing a new prompt retokenises; unchanged tokens keep their values."""
    send_prompt(app, "Today's weather is so very")
    s = scenario(app)
    assert s.tokens == ("Today", "weather", "is", "so", "very") and s.values[:4] == (10, 20, 1, 5)
    assert not errors(app)


def test_empty_prompt_shows_error_and_keeps_scenario(app):
    """An empty prompt is refused next to the field; the seed stays in force."""
    send_prompt(app, "   ")
    assert any("no tokens" in e for e in errors(app))
    assert scenario(app) == load_preset("seed")


def test_a_refused_prompt_stays_in_the_box_until_an_edit_applies(app):
    """The refused text stays in the prompt box with its message, over later runs too; the prompt in
    force sent back clears the message; a good prompt then applies."""
    send_prompt(app, "   ")
    assert prompt_shown(app) == "   " and any("no tokens" in e for e in errors(app))
    app.run()
    assert any("no tokens" in e for e in errors(app)) and prompt_shown(app) == "   "
    send_prompt(app, "Today's weather is so …")
    assert not errors(app) and prompt_shown(app) == "Today's weather is so …"
    send_prompt(app, "a b")
    assert scenario(app).tokens == ("a", "b") and prompt_shown(app) == "a b" and not errors(app)


def test_a_prompt_over_the_limit_is_refused_and_not_kept(app):
    """A prompt longer than the field allows (Streamlit's max_chars: typed or sent by hand) never
    applies; the box shows the prompt in force and the session keeps no copy of the long text."""
    assert widget(app, widget_key(app, "prompt")).proto.max_chars == MAX_PROMPT_CHARS
    send_prompt(app, "a " * MAX_PROMPT_CHARS)
    assert prompt_shown(app) == "Today's weather is so …"
    assert state.PROMPT_REFUSED not in app.session_state and scenario(app) == load_preset("seed")


def test_a_fault_in_an_edit_is_a_message_not_a_traceback(app, monkeypatch, caplog):
    """An edit that fails with kvlab's own fault (the prompt runs as a callback, before the frame's
    guard) is refused with a plain message; the traceback goes to the server log."""
    monkeypatch.setattr(Scenario, "with_prompt", lambda self, prompt: 1 / 0)
    with caplog.at_level(logging.ERROR, logger="kvlab.app"):
        send_prompt(app, "a b")
    assert not app.exception and state.EDIT_FAILED in [shown(e) for e in errors(app)]
    assert scenario(app) == load_preset("seed")
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)


def test_token_value_edit_changes_the_scenario(app):
    """Editing a value in the token table changes that token's value."""
    edit_table(app, "tokens", edited_rows={1: {"value": 30.0}})
    assert scenario(app).values == (10, 30, 1, 5)


def test_bad_rule_shows_error_and_keeps_old_rules(app):
    """A hostile rule in the head table is refused with its message; the rules stay as they were."""
    edit_table(app, "heads", edited_rows={0: {"rule": "__import__('os').system('x')"}})
    assert any("heads, row 1, rule" in e and "not allowed" in e for e in errors(app))
    assert scenario(app).heads == load_preset("seed").heads


def test_heads_can_be_added_removed_and_keep_their_weights(app):
    """Deleting a head drops its W_vocab column; an added head gets weight 0."""
    edit_table(app, "heads", deleted_rows=[0], added_rows=[{"name": "self", "rule": "k.pos == q.pos"}])
    s = scenario(app)
    assert s.head_names == ["last", "first", "all", "self"]
    assert s.vocab[0].weights == (0.5, 0.1, 0.2, 0.0)


def test_library_head_and_reorder(app):
    """'Add a head' appends a library rule; the arrows move a head with its weights."""
    by_label(app.selectbox, "Add a head").set_value("self").run()
    next(b for b in app.button if b.label == "Add").click().run()
    assert scenario(app).heads[-1].rule == "k.pos == q.pos"
    by_label(app.selectbox, "Reorder").set_value(1).run()
    next(b for b in app.button if b.proto.help == "Move up").click().run()
    s = scenario(app)
    assert s.head_names[:2] == ["last", "even"] and s.vocab[0].weights[:2] == (0.5, 0.8)


def test_vocab_edit_and_missing_weight(app):
    """A weight edit changes W_vocab; an emptied cell is refused with the row named."""
    edit_table(app, "vocab", edited_rows={0: {"w·even": 0.9}})
    assert scenario(app).vocab[0].weights[0] == 0.9
    edit_table(app, "vocab", edited_rows={1: {"value": None}})
    assert any("vocab" in e and "row 2" in e for e in errors(app))
    assert scenario(app).vocab[1].value == 6


def test_sampling_controls(app):
    """Strategy, temperature and d_k widgets update the scenario."""
    by_label(app.radio, "Choose the next word by").set_value("sample").run()
    by_label(app.slider, "Temperature").set_value(2.0).run()
    by_label(app.number_input, "d_k (key width)").set_value(16).run()
    s = scenario(app)
    assert (s.sampling.strategy, s.sampling.temperature, s.d_k) == ("sample", 2.0, 16)


def test_preset_picker_loads_a_preset(app):
    """Choosing a preset replaces the scenario and resets the step."""
    app.session_state[state.STEP] = 3
    names = preset_names()
    pick(app, PRESET, "sliding-window")
    assert scenario(app) == load_preset("sliding-window") and app.session_state[state.STEP] == 0
    shown = choice_data(app, PRESET)  # the new pills, in the same run
    assert shown["options"] == names and shown["value"] == "sliding-window" and shown["label"] == "Scenario"
    app.session_state[state.STEP] = 2
    pick(app, PRESET, "seed")  # the same key after the scenario changed: focus stays in the row
    assert scenario(app) == load_preset("seed") and app.session_state[state.STEP] == 0


def test_cache_safe_button(app):
    """The cache-safe button rewrites heads that read n."""
    next(b for b in app.button if b.label.startswith("Make every head cache-safe")).click().run()
    assert scenario(app).heads[1].rule == "k.pos == q.pos"


def test_presenter_modes_large_type_follows_the_toggle_in_the_same_run(app):
    """Presenter mode's one style element (the root font size, no selector of Streamlit's own) is
    drawn from the run the toggle starts to the run that switches it off, and only then."""
    def styles() -> list[str]:
        return [element.proto.body for element in app.get("html") if element.proto.body.startswith("<style>")]

    assert styles() == []
    flip(app, state.PRESENTER_TOGGLE, True)
    assert styles() == [f"<style>{widgets.PRESENTER_CSS}</style>"] and "clamp(" in widgets.PRESENTER_CSS
    flip(app, state.PRESENTER_TOGGLE, False)
    assert styles() == []


def test_presenter_mode_folds_editors_away(app):
    """Presenter mode hides the editors and goes into the URL."""
    flip(app, state.PRESENTER_TOGGLE, True)
    assert not app.data_editor and not has_prompt_box(app)
    assert app.query_params.get("present") in ("1", ["1"])


def test_url_always_encodes_the_view(app):
    """After an edit, the query parameters decode to the same scenario."""
    send_prompt(app, "a b c")
    params = {k: (v[0] if isinstance(v, list) else v) for k, v in app.query_params.items()}
    from viz.core.engine.share import decode_view
    view, problems = decode_view(params, load_preset("seed"))
    assert not problems and view.scenario == scenario(app)


def test_share_link_restores_scenario_and_step():
    """Opening a link (query params) restores exactly that scenario and step."""
    custom = load_preset("content").with_prompt("Today's weather is so very very")
    params = encode_view(View(custom, step=3, mode="recompute"))
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert scenario(at) == custom
    assert at.session_state[state.STEP] == 3 and at.session_state[state.MODE] == "recompute"


def test_share_link_restores_the_head_and_prefill_position():
    """The selected head and the Prefill position travel in the link and come back."""
    seed = load_preset("seed")
    params = encode_view(View(seed, step=2, head=1, position=3))
    assert params["head"] == "2" and params["pos"] == "3"
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert at.session_state[state.HEAD] == 1 and at.session_state[state.POSITION] == 3
    shown = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert shown == params


@pytest.mark.parametrize("params, message", [
    ({"head": "9"}, "head"),
    ({"pos": "0"}, "prompt position"),
    ({"s": "garbage"}, "damaged"),
    ({"s": "9.abc"}, "another kvlab"),
    ({"s": "1.!!!!"}, "damaged"),
    ({"step": "-4"}, "step"),
])
def test_bad_share_links_open_the_seed_with_a_warning(params, message):
    """A damaged link still opens the app, on the seed, with the reason shown."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert scenario(at) == load_preset("seed")
    assert any(message in w.value for w in at.warning)


def test_upload_applies_a_scenario_file_once(app):
    """Uploading scenario JSON loads it; a bad file shows an error and keeps the scenario."""
    uploader = app.get("file_uploader")[0]
    uploader.upload("s.json", load_preset("previous-token").to_json().encode(), "application/json").run()
    assert scenario(app) == load_preset("previous-token")
    app.get("file_uploader")[0].upload("bad.json", b'{"version": 9}', "application/json").run()
    assert any("unsupported scenario version 9" in e for e in errors(app))
    assert scenario(app) == load_preset("previous-token")


def test_home_is_the_default_page_with_three_paths_and_the_article():
    """/ opens Home on the seed: three ways in, the source article linked, no view in the address."""
    from viz.ui import article
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.run()
    assert not at.exception
    assert scenario(at) == load_preset("seed")
    assert at.title[0].value.startswith("kvlab")
    assert any(article.URL in m.value and article.TITLE in m.value for m in at.markdown)
    headed = {m.value.split("\n")[0] for m in at.markdown}  # each card's heading opens its text
    assert {"### Take the tour", "### Present in class", "### Explore"} <= headed
    assert not at.data_editor and not has_prompt_box(at)  # Home does not use the editors
    assert dict(at.query_params) == {}


def test_present_in_class_turns_presenter_mode_on_and_opens_decode():
    """Home's "Present Decode" turns presenter mode on (the toggle shows it) and opens Decode."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.run()
    next(b for b in at.button if b.key == "home_present_decode").click().run()
    assert not at.exception
    assert at.session_state[state.PRESENTER] and choice_data(at, state.PRESENTER_TOGGLE)["value"]
    assert not at.title and any(">Decode</h1>" in e.proto.body for e in at.get("html"))  # for screen readers only
    assert at.query_params.get("present") in ("1", ["1"])


def test_an_old_link_at_the_root_opens_prefill():
    """A link made when / was Prefill (a view in the query, no path) opens Prefill with that view."""
    params = encode_view(View(load_preset("seed"), position=3))
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert at.title[0].value.startswith("Prefill") and at.session_state[state.POSITION] == 3
    shown = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert shown == params


def _open(params: dict[str, str]) -> AppTest:
    """A new visitor's first run of a link with these query parameters, at /."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


@pytest.mark.parametrize("page", ["decode", "memory", "tour"])
def test_a_share_link_opens_at_the_root_and_goes_to_its_page(page):
    """The Copy link box's link opens at / and names its page: that page opens with the view, and
    the address bar then holds the page's own form of the link (/decode?… without ``page``)."""
    view = encode_view(View(load_preset("content"), step=3, mode="recompute", position=2))
    at = AppTest.from_file("../app.py", default_timeout=120)
    for key, value in view.items():
        at.query_params[key] = value
    at.switch_page(f"pages/{page}.py").run()
    title = at.title[0].value
    link = share_link(at)
    params = dict(parse_qsl(urlsplit(link).query))
    assert urlsplit(link).path == "/" and params == {"page": page, **view}

    other = _open(params)
    assert not other.exception and not [w.value for w in other.warning]
    assert other.title[0].value == title
    assert scenario(other) == load_preset("content") and other.session_state[state.STEP] == 3
    assert other.session_state[state.MODE] == "recompute" and other.session_state[state.POSITION] == 2
    shown = {k: (v[0] if isinstance(v, list) else v) for k, v in other.query_params.items()}
    assert shown == view


def _switches(monkeypatch) -> list:
    """Record app.py's calls of st.switch_page (each one ends the run and starts another)."""
    import streamlit

    calls: list = []
    real = streamlit.switch_page
    monkeypatch.setattr(streamlit, "switch_page", lambda page: (calls.append(page), real(page)))
    return calls


@pytest.mark.parametrize("params", [{"page": "decode", "step": "2"}, {"step": "2"}],
                         ids=["names its page", "an old link: Prefill"])
def test_a_link_at_the_root_switches_to_its_page_once(monkeypatch, params):
    """The page a link at / asks for is reached with one st.switch_page after st.navigation (the
    documented way), and the view it carries is in force there."""
    calls = _switches(monkeypatch)
    at = _open(params)
    assert not at.exception and len(calls) == 1
    assert at.title[0].value.startswith("Decode" if "page" in params else "Prefill")
    assert at.session_state[state.STEP] == 2


def share_link(at) -> str:
    """The link the sidebar's Copy link box (st.code, with its copy button) holds, its fold opened
    (a rerun, as the visitor's click on it starts)."""
    if not at.sidebar.code:
        at.session_state[LINK_OPEN] = True
        at.run()
    return at.sidebar.code[0].value


@pytest.mark.parametrize("params", [{}, {"page": "decode", "step": "2"}], ids=["Home", "a Decode link"])
def test_a_first_view_builds_no_copy_link_box_until_its_fold_opens(params):
    """A new visitor's first view has the Copy link fold closed and no st.code in the sidebar (it
    would bring Streamlit's syntax highlighter to the first view); opening the fold shows the link to
    the view on screen."""
    at = _open(params)
    assert not at.exception and not at.sidebar.code
    assert [e.label for e in at.sidebar.expander if e.label == "Copy link"] == ["Copy link"]
    link = urlsplit(share_link(at))
    assert link.path == "/" and dict(parse_qsl(link.query)).get("page") == params.get("page")
    assert dict(parse_qsl(link.query)).get("step") == params.get("step")


def test_the_load_tests_class_link_is_the_copy_link_of_a_fresh_decode():
    """The link the load test's students open is the one a teacher's Copy link box gives on Decode
    with the seed scenario as it opens."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.switch_page("pages/decode.py").run()
    link = urlsplit(share_link(at))
    assert link.path == "/" and parse_qs(link.query) == parse_qs(CLASS_LINK)


def test_a_link_naming_no_page_opens_home_and_says_so():
    """A link at / naming a page kvlab does not have opens Home with the reason in the sidebar."""
    at = _open({"page": "nowhere", "step": "2"})
    assert not at.exception
    assert at.title[0].value.startswith("kvlab")
    assert any("names no page of kvlab" in w.value for w in at.sidebar.warning)


def test_a_page_name_typed_by_hand_counts_in_any_case():
    """``page=Decode`` (capitalised, spaces around) opens Decode as ``page=decode`` does."""
    at = _open({"page": " Decode ", "step": "2"})
    assert not at.exception and not [w.value for w in at.sidebar.warning]  # no "names no page" notice
    assert at.title[0].value.startswith("Decode") and at.session_state[state.STEP] == 2


def test_the_home_page_link_is_the_bare_root():
    """Home's own link carries no view and no page: it is the app's address."""
    at = _open({})
    link = share_link(at)
    assert urlsplit(link).path == "/" and urlsplit(link).query == ""


def test_a_refused_rule_is_announced_on_the_page(app):
    """A rule that cannot be parsed gets a plain-words hint in the sidebar and a notice on the page."""
    edit_table(app, "heads", edited_rows={0: {"rule": "k.pos =="}})
    assert any("after `==` write a value, e.g. `k.pos == 1`" in shown(e) for e in errors(app))
    assert any("still shows the last good scenario" in w.value for w in app.warning)
    assert scenario(app).heads == load_preset("seed").heads


@pytest.mark.parametrize("table, bad, good", [
    ("heads", {0: {"rule": "k.pos =="}}, {0: {"rule": "k.pos % 2 == 0"}}),
    ("heads", {1: {"name": "even"}}, {1: {"name": "last"}}),
    ("tokens", {0: {"token": ""}}, {0: {"token": "Today"}})])
def test_a_refused_table_edit_put_back_is_refused_no_more(app, table, bad, good):
    """A refused cell holding the value in force again clears the sidebar's message and the page's
    notice (the table then equals the scenario, so there is nothing to apply), on this page and the next.
    (The browser drops an edit typed back to the cell's value instead: tests/browser/test_frame.py.)"""
    edit_table(app, table, edited_rows=bad)
    assert errors(app) and any("still shows the last good scenario" in w.value for w in app.warning)
    edit_table(app, table, edited_rows=good)
    assert not errors(app) and not any("still shows the last good scenario" in w.value for w in app.warning)
    assert scenario(app) == load_preset("seed")
    app.switch_page("pages/decode.py").run()
    assert not errors(app) and not app.warning


@pytest.mark.parametrize("page, editors", [("pages/tour.py", False), ("pages/cost.py", False),
                                           ("pages/memory.py", True), ("pages/decode.py", True)])
def test_editors_only_on_pages_that_use_the_scenario(app, page, editors):
    """The sidebar's scenario editors show where the page reads the scenario, and nowhere else."""
    app.switch_page(page).run()
    assert not app.exception
    assert has_prompt_box(app) == editors and bool(app.data_editor) == editors


# Element kinds a first view leaves out where a lighter drawing says the same (Plotly about 4.6 MB
# of script, the data grid about 1.5 MB).
HEAVY_KINDS = ("plotly_chart", "dataframe", "data_editor")


@pytest.mark.parametrize("page", ["pages/decode.py", "pages/prefill.py", "pages/home.py", "pages/tour.py"])
def test_a_first_view_has_no_plotly_chart_or_data_grid_and_one_custom_component(page):
    """A new visitor's first view of a link (Decode at step 3, with the timeline; Prefill; Home; the
    tour) has no Plotly chart or data grid, in the page or the sidebar; the lesson board is the only
    custom component any of them draws."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params.update(encode_view(View(load_preset("seed"), step=3)))
    at.switch_page(page).run()
    assert not at.exception
    found = {kind: len(at.get(kind)) for kind in HEAVY_KINDS}
    assert not any(found.values()), found
    assert components_drawn(at) <= {"kvlab_board"}
    if page == "pages/decode.py":
        assert components_drawn(at) == {"kvlab_board"} and len(at.slider) == 1  # the timeline


def test_a_first_view_builds_no_editor_until_its_panel_opens():
    """A new visitor's Decode: no editor, no prompt box, no data grid and no stats row is sent (each
    widget kind brings its own script to the first view that shows one: the data editors about 1.5 MB,
    st.metric Arrow's, the text box a dozen files); opening a panel builds its editor, which edits as
    before, and folding it away keeps the edit; the prompt's fold holds the prompt in force."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.run()
    at.switch_page("pages/decode.py").run()
    assert not at.exception
    assert not at.text_input and not at.metric and not at.data_editor and not at.dataframe and not at.table
    assert "d_k (key width)" not in [w.label for w in at.number_input]
    at.session_state["kv_panel_prompt"] = True  # as a click on the fold would
    at.run()
    assert prompt_shown(at) == "Today's weather is so …" and len(at.sidebar.text_input) == 1
    at.session_state["kv_panel_tokens"] = True  # as a click on the panel would
    at.run()
    assert len(at.data_editor) == 1 and list(at.data_editor[0].value["token"]) == list(load_preset("seed").tokens)
    edit_table(at, "tokens", edited_rows={0: {"value": 11}})
    assert scenario(at).values[0] == 11
    at.session_state["kv_panel_tokens"] = False
    at.run()
    assert not at.data_editor and scenario(at).values[0] == 11


def test_open_panels_come_back_after_a_page_without_editors():
    """A panel the visitor opened is open again after a visit to a page without editors (Streamlit
    forgets widgets a run does not draw); one they closed stays closed."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.run()
    at.switch_page("pages/decode.py").run()
    at.session_state["kv_panel_heads"] = True  # opened, as a click would
    at.run()
    at.switch_page("pages/cost.py").run()
    at.switch_page("pages/decode.py").run()
    assert not at.exception
    assert len(at.sidebar.data_editor) == 1  # the heads table, and only it
    assert "rule" in at.sidebar.data_editor[0].value.columns


def test_a_refused_edit_keeps_its_panel_open_with_the_message(app):
    """While an edit is refused its panel stays open, with the message under the table, even after
    presenter mode folded every editor away and came back."""
    edit_table(app, "heads", edited_rows={0: {"rule": "k.pos ** 2"}})
    app.session_state["kv_panel_heads"] = False  # the visitor folds the panel
    app.run()
    assert any("not allowed" in e.value for e in app.sidebar.error)
    flip(app, state.PRESENTER_TOGGLE, True)
    flip(app, state.PRESENTER_TOGGLE, False)
    assert any("not allowed" in e.value for e in app.sidebar.error)
    assert any("rule" in d.value.columns for d in app.sidebar.data_editor)


def components_drawn(at) -> set[str]:
    """The names of kvlab's components drawn in the last run."""
    return {e.proto.component_name for e in at.get("bidi_component")}


def test_the_tab_icon_is_a_data_url_streamlit_passes_on_as_it_is():
    """The causal-mask icon is an SVG data URL: no PNG encoding and media file on every full rerun."""
    import base64

    from streamlit.commands.page_config import _get_favicon_string

    from viz.ui.common import favicon
    url = favicon()
    assert _get_favicon_string(url) == url
    svg = base64.b64decode(url.removeprefix("data:image/svg+xml;base64,")).decode()
    assert svg.count("<rect") == 16 and svg.count("#1f5fa8") == 10  # the lower triangle and diagonal


def test_the_pages_are_made_once_per_session_and_every_page_still_opens(app):
    """app.py makes its st.Page objects on a session's first run and reuses them (each resolves its file
    on the disk: a tenth of a class follower's rerun); navigating keeps working with the same objects."""
    made = app.session_state[state.PAGE_LIST]
    for path in ("pages/decode.py", "pages/prefill.py", "pages/home.py"):
        app.switch_page(path).run()
        assert not app.exception and app.session_state[state.PAGE_LIST] is made
    assert [page.url_path for page in made][:4] == ["", "tour", "prefill", "decode"]
