"""Tier 2 (AppTest): visitor text is never rendered, and uploads are checked like links.

A scenario whose every string is a Markdown link, an image, HTML, LaTeX or a Streamlit directive
goes through every page (from a share link, at a decode step past the prompt); every
Markdown-rendering field of every element (bodies, labels, help, options, tab labels, column
help) must carry it escaped, and every figure must carry it HTML-escaped."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from hostile_text import (HOSTILE, HTML_IMAGE, LINK, SCENARIO, element_protos, link_for, markdown_strings,
                          problems_in, record)
from viz import load_preset
from viz.core.engine.share import View, encode_view
from viz.ui.common import md_escape

from apptest_helpers import ALL_PAGES, by_label, choice_data, pick, edit_table, errors, move_range, range_data, scenario, shown

PAGES = ALL_PAGES


def rendered(at) -> list[tuple[str, str]]:
    return [item for proto in element_protos(at) for item in markdown_strings(proto)]


def assert_nothing_rendered(at, page: str, outcome: str = "ran") -> list[tuple[str, str]]:
    """No exception; no Markdown field and no figure turns visitor text into markup."""
    category = "Visitor text as Markdown, HTML, LaTeX, directives: every page, messages (AppTest)"
    if at.exception:
        record(category, "traceback")
    assert not at.exception, (page, [e.value for e in at.exception])
    record(category, outcome)
    texts = rendered(at)
    bad = [(where, problem, text[:120]) for where, text in texts for problem in problems_in(text)]
    assert not bad, (page, bad)
    for chart in at.get("plotly_chart"):
        spec = chart.proto.spec
        assert "<img" not in spec and "<a " not in spec and "<b>" not in spec, page
    return texts


@pytest.fixture(scope="module")
def hostile_app():
    """The app opened from a share link holding the hostile scenario, three tokens into decode."""
    at = AppTest.from_file("../app.py", default_timeout=180)
    for key, value in encode_view(View(SCENARIO, step=3)).items():
        at.query_params[key] = value
    at.query_params["mode"] = "recompute"
    at.run()
    assert scenario(at) == SCENARIO
    return at


@pytest.mark.parametrize("page", PAGES)
def test_no_page_renders_visitor_text(hostile_app, page):
    """Each page draws the hostile scenario with every string escaped."""
    hostile_app.switch_page(page).run()
    texts = assert_nothing_rendered(hostile_app, page)
    if page in ("pages/prefill.py", "pages/decode.py", "pages/memory.py"):  # the test does see user text
        joined = "\n".join(text for _, text in texts)
        assert md_escape(HTML_IMAGE) in joined and md_escape(LINK) in joined, page
    if page == "pages/prefill.py":  # its fourth head divides by zero at query 3: the page says where
        assert any("divides by zero in k\\.pos \\/\\/ \\(q\\.pos \\- 3\\)" in w.value and "query 3" in w.value
                   for w in hostile_app.warning)


def test_range_labels_carry_visitor_text_as_data(hostile_app):
    """Prefill's position slider names each position with its token, escaped (Streamlit renders a
    slider's options as Markdown); a move still works with such labels, and no element renders them."""
    hostile_app.switch_page("pages/prefill.py").run()
    data = range_data(hostile_app, "prefill_position_range")
    assert data["labels"] == [shown(md_escape(f"{i} · {token}")) for i, token in enumerate(SCENARIO.tokens, 1)]
    move_range(hostile_app, "prefill_position_range", 3)
    assert range_data(hostile_app, "prefill_position_range")["value"] == 3
    assert md_escape(HOSTILE[2]) in hostile_app.info[0].value  # the narration quotes token 3, escaped
    assert_nothing_rendered(hostile_app, "prefill after a move")


def test_choice_options_carry_visitor_text_as_data(hostile_app):
    """Decode's head control names each head, escaped (Streamlit renders options as Markdown); a
    pick still works with such names, and no element renders them."""
    hostile_app.switch_page("pages/decode.py").run()
    assert choice_data(hostile_app, "decode_head")["options"] == [shown(md_escape(n)) for n in SCENARIO.head_names]
    pick(hostile_app, "decode_head", 1)
    assert choice_data(hostile_app, "decode_head")["value"] == 1
    assert_nothing_rendered(hostile_app, "decode after a pick")


def test_messages_that_quote_visitor_text_are_escaped(app, monkeypatch):
    """Refusals and notices that repeat what was typed (a rule, an unknown field, a folder, a prompt)
    carry it escaped."""
    edit_table(app, "heads", edited_rows={0: {"rule": f"{LINK} == {HTML_IMAGE}"}})
    edit_table(app, "heads", edited_rows={0: {"rule": "k.token == [win](https://example.org)"}})
    assert errors(app) and assert_nothing_rendered(app, "sidebar", "refused")
    link = AppTest.from_file("../app.py", default_timeout=180)
    data = SCENARIO.to_dict()
    data[f"{LINK} {HTML_IMAGE}"] = 1
    link.query_params["s"] = link_for(json.dumps(data))
    link.run()
    assert any("unknown field" in w.value for w in link.warning)
    assert_nothing_rendered(link, "share-link notice", "refused")

    monkeypatch.setenv("KVLAB_MODEL_FOLDERS", "1")  # the operator's switch: the field exists only then
    app.switch_page("pages/real_model.py").run()
    by_label(app.text_input, "Model directory").input(f"{LINK} {HTML_IMAGE}").run()
    by_label(app.text_area, "Prompt").input(" ".join(HOSTILE)).run()
    by_label(app.text_input, "Also try your own rule (optional)").input(f"k.token == '{LINK}' or {HTML_IMAGE}").run()
    assert len(errors(app)) >= 2
    assert_nothing_rendered(app, "real model", "refused")

    app.switch_page("pages/memory.py").run()
    box = next(t for t in app.text_input if t.label.startswith("Prompt "))
    box.input(f"{LINK} {HTML_IMAGE} " + "x" * 30_000).run()
    assert_nothing_rendered(app, "memory prompt", "refused")


@pytest.mark.parametrize("payload, message", [
    (b'{"tokens": ["\\ud800"], "heads": [{"rule": "True"}], "vocab": [{"token": "a", "weights": [1]}]}',
     "tokens, row 1: character 1 is U+D800, a lone surrogate"),
    (b'{"prompt": "a\\uffffb", "heads": [{"rule": "True"}], "vocab": [{"token": "a", "weights": [1]}]}',
     "prompt: character 2 is U+FFFF, a Unicode non-character"),
    ('{"prompt": "café"}'.encode("latin-1"), "not UTF-8 text"),
    (b"\xef\xbb\xbf" + SCENARIO.to_json().encode("utf-8"), None),  # a byte-order mark is fine
])
def test_uploads_with_characters_that_are_not_text_are_refused(app, payload, message):
    """An uploaded file with a lone surrogate, a non-character or bytes that are not UTF-8 is refused
    with the field named; the scenario stays as it was. A valid file with a BOM loads."""
    app.get("file_uploader")[0].upload("s.json", payload, "application/json").run()
    assert not app.exception
    if message is None:
        assert scenario(app) == SCENARIO
        assert_nothing_rendered(app, "after upload")
        record("Uploaded scenario files with bad bytes or characters (AppTest)", "ran")
    else:
        assert any(message in shown(e) for e in errors(app)), errors(app)
        if scenario(app) != load_preset("seed"):
            record("Uploaded scenario files with bad bytes or characters (AppTest)", "state lost")
        assert scenario(app) == load_preset("seed")
        record("Uploaded scenario files with bad bytes or characters (AppTest)", "refused")


@pytest.mark.parametrize("typed", ["https://example.org/u", "www.example.org", "mail me: a.b+c@d.org now",
                                   "[win](https://example.org)", "x `http://a`b` y", "WWW.EXAMPLE.ORG"])
def test_autolinks_go_into_code_spans_with_no_character_added(typed):
    """Issue 29.4: a URL or e-mail address in visitor text is kept from GFM's autolinks by a code span,
    not by an invisible joiner, so the text a visitor copies is the text that was typed."""
    escaped = md_escape(typed)
    assert "\u2060" not in escaped and "\u200d" not in escaped
    spans = re.findall(r"(?<!\\)(`+) ?(.*?) ?\1(?!`)", escaped)
    assert spans, escaped
    for _, inside in spans:  # each span holds a run of the typed text verbatim
        assert inside in typed and ("://" in inside or "www." in inside.lower() or "@" in inside)
    outside = re.sub(r"(?<!\\)(`+) ?(.*?) ?\1(?!`)", "", escaped)
    assert not re.search(r"(?i)https?://|www\.|\w@\w", outside.replace("\\", ""))  # nothing left to autolink
