"""Tier 2 (AppTest): the Real model page loads the shipped model, steps its real cache, compares cache
and no cache, matches heads to rules and loads a rule into the toy."""

from __future__ import annotations

import shutil

import pytest

from apptest_helpers import array, by_label, errors, figure, figures, plain_table, scenario, stat_value
from viz.core.real.model import LLAMA_NAME, SHIPPED_DIR, SHIPPED_NAME, encode, load_model

PAGE = "pages/real_model.py"
SHIPPED = ["GPT-2: every query head has its own K/V head", "Llama: 8 query heads share 2 K/V heads (GQA)"]


@pytest.fixture
def page(app):
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


def _button(at, label_start: str):
    return next(b for b in at.button if b.label.startswith(label_start))


def _markdown(at) -> str:
    """All markdown on the page with the escaping backslashes removed, as a reader sees it."""
    return "\n".join(m.value.replace("\\", "") for m in at.markdown)


def _table(at, column: str):
    """The small table (st.table) with ``column``, as a reader sees it: every cell and name unescaped text."""
    plain = lambda text: str(text).replace("\\", "")  # noqa: E731
    frame = next(t.value for t in at.table if column in map(plain, t.value.columns))
    return frame.rename(columns=plain).map(plain)


def _pieces(at):
    return plain_table(at, "piece")  # one row per position: a phone's width holds its three columns


def test_page_shows_the_shipped_model_with_every_section(page):
    """The page names the shipped model and draws the grid, the detail view and the top-k bars."""
    assert not errors(page)
    assert SHIPPED_NAME in _markdown(page)
    figure(page, "Attention of every head")
    figure(page, "Layer 0, head 0")
    figure(page, "most likely next tokens")
    figure(page, "cached keys")
    figure(page, "Every head against every rule")


def test_prompt_sets_the_pieces_and_heatmap_size(page):
    """A new prompt is tokenized by the real tokenizer; the pieces and the detail heatmap follow it."""
    by_label(page.text_area, "Prompt").input("def f(x): return x").run()
    assert not page.exception
    expected = encode(load_model(None), "def f(x): return x")
    table = _pieces(page)
    assert table["piece"] == list(expected.pieces) and table["position"] == [str(p) for p in range(1, len(expected) + 1)]
    assert table["token id"] == [str(i) for i in expected.ids]
    detail = figure(page, "Layer 0, head 0")
    assert len(array(detail["data"][0]["z"])) == len(expected)


def test_empty_prompt_is_refused_and_the_last_one_kept(page):
    """An empty prompt shows a message; the page keeps drawing the last prompt that worked."""
    before = _pieces(page)["piece"]
    by_label(page.text_area, "Prompt").input("   ").run()
    assert not page.exception
    assert any("empty" in e for e in errors(page))
    assert _pieces(page)["piece"] == before


@pytest.fixture
def folders_on(monkeypatch):
    """The operator turned loading a model from a local folder on."""
    monkeypatch.setenv("KVLAB_MODEL_FOLDERS", "1")


def test_bad_model_directory_keeps_the_shipped_model(page, folders_on):
    """A path that is not a model shows one clear error and the page goes on with the last model."""
    page.run()
    by_label(page.text_input, "Model directory").input("/no/such/model").run()
    assert not page.exception
    assert any("not a directory" in e for e in errors(page))
    assert SHIPPED_NAME in _markdown(page)


def test_local_model_directory_loads_by_path(page, tmp_path, folders_on):
    """A local model directory typed into the field is loaded and named after its folder."""
    page.run()
    folder = tmp_path / "copied-model"
    shutil.copytree(SHIPPED_DIR, folder)
    by_label(page.text_input, "Model directory").input(str(folder)).run()
    assert not page.exception and not errors(page)
    assert "copied-model" in _markdown(page) and SHIPPED_NAME not in _markdown(page)


def test_layer_and_head_pick_the_detail_view(page):
    """Choosing layer 2 and head 1 redraws the detail view for that head and outlines it in the grid."""
    by_label(page.selectbox, "Layer").set_value(2).run()
    by_label(page.selectbox, "Head").set_value(1).run()
    assert not page.exception
    figure(page, "Layer 2, head 1")
    grid = figure(page, "Attention of every head")
    assert len(grid["layout"]["shapes"]) == 1


def test_decode_steps_grow_the_real_cache(page):
    """Step adds one entry to every layer's cache (the picture outlines it as new, none before), 10
    tokens ten more, Back takes one off, Reset all; the bytes equal the formula."""
    prompt_len = int(stat_value(page, "Tokens in the cache"))
    names = lambda: [trace.get("name") for trace in figure(page, "cached keys")["data"]]  # noqa: E731
    assert "new entry" not in names()  # after the prefill no row is the one a step appended
    _button(page, "Step").click().run()
    assert stat_value(page, "Tokens generated") == "1" and "new entry" in names()
    assert int(stat_value(page, "Tokens in the cache")) == prompt_len + 1
    _button(page, "10 tokens").click().run()
    assert int(stat_value(page, "Tokens in the cache")) == prompt_len + 11
    assert stat_value(page, "Cache bytes (measured)") == stat_value(page, "Formula")
    table = _table(page, "K shape")
    assert all(shape.endswith(f", {prompt_len + 11}, 32]") for shape in table["K shape"])
    _button(page, "Back").click().run()
    assert int(stat_value(page, "Tokens in the cache")) == prompt_len + 10
    assert stat_value(page, "Tokens generated") == "10"
    _button(page, "Reset to the prompt").click().run()
    assert stat_value(page, "Tokens generated") == "0"


def test_measured_vs_formula_opens_as_a_line_of_live_measurements(page):
    """Before any step the growth chart already compares: the cache measured after several shorter
    prompts and the whole one (bytes rising with the tokens), each on the formula's line; a step adds
    a point."""
    prompt_len = int(stat_value(page, "Tokens in the cache"))
    growth = figure(page, "Cache bytes: measured vs the formula")
    formula, measured = (next(t for t in growth["data"] if t["name"] == name) for name in ("formula", "measured"))
    tokens, sizes = list(measured["x"]), list(measured["y"])
    assert len(tokens) >= 4 and tokens == sorted(set(tokens)) and tokens[-1] == prompt_len
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1] and sizes == list(formula["y"])
    assert "tokens in the cache" in growth["layout"]["xaxis"]["title"]["text"]
    _button(page, "Step").click().run()
    after = figure(page, "Cache bytes: measured vs the formula")
    assert list(next(t for t in after["data"] if t["name"] == "measured")["x"]) == tokens + [prompt_len + 1]


def test_a_step_shows_in_every_tab_and_the_buttons_at_once(page):
    """The buttons move the session before the view is worked out: after Step the K/V heads tab's
    cache per token reads the same cache as the decode tab, Back is enabled in that run, and after Back to
    the prompt it is disabled in that run (not one click later)."""
    assert _button(page, "Back").disabled
    _button(page, "Step").click().run()
    assert not page.exception and not _button(page, "Back").disabled
    tokens = int(stat_value(page, "Tokens in the cache"))
    nbytes = int(stat_value(page, "Cache bytes (measured)").replace(",", ""))
    assert stat_value(page, "Cache per token (measured)") == f"{nbytes / tokens:,.0f} B"
    _button(page, "Back").click().run()
    assert stat_value(page, "Tokens generated") == "0" and _button(page, "Back").disabled


def test_sampling_settings_drive_the_steps(page):
    """With sampling chosen the step still appends one token, drawn with the seeded generator."""
    by_label(page.selectbox, "Strategy").set_value("sample").run()
    _button(page, "Step").click().run()
    assert not page.exception
    assert stat_value(page, "Tokens generated") == "1"


def test_cache_vs_no_cache_agree_and_are_timed(page):
    """Running both ways shows identical tokens, a tiny logit difference and a speed plot."""
    by_label(page.slider, "Tokens to generate").set_value(12).run()
    _button(page, "Run both ways").click().run()
    assert not page.exception
    assert stat_value(page, "Same tokens") == "yes"
    assert float(stat_value(page, "max |logit difference|")) < 1e-4
    speed = figure(page, "Measured speed of each decode step")
    assert len(speed["data"]) == 2 and len(array(speed["data"][0]["y"])) == 11


def test_one_click_loads_the_matched_rule_into_the_toy(page):
    """The add button appends the matched rule as a new toy head and says so."""
    before = scenario(page)
    assert by_label(page.selectbox, "Real head").value is not None
    add = _button(page, "Add '")
    add.click().run()
    assert not page.exception
    after = scenario(page)
    assert len(after.heads) == len(before.heads) + 1
    assert after.heads[-1].rule in add.label.replace("\\", "")
    assert page.success and "to the toy scenario" in page.success[0].value


def test_your_own_rule_is_scored_or_refused(page):
    """A valid rule of your own becomes a column of the scores; an invalid one shows the rule error."""
    field = by_label(page.text_input, "Also try your own rule (optional)")
    field.input("q.pos - k.pos < 3").run()
    scores = figure(page, "Every head against every rule")
    assert "your<br>rule" in scores["data"][0]["x"]
    by_label(page.text_input, "Also try your own rule (optional)").input("__import__('os')").run()
    assert not page.exception
    assert any(e.startswith("Your rule:") and "not allowed" in e for e in errors(page))


def test_token_text_is_shown_not_interpreted(page):
    """A prompt with HTML reaches the figures escaped."""
    by_label(page.text_area, "Prompt").input("<b>bold</b> text").run()
    assert not page.exception
    detail = figure(page, "Layer 0, head 0")
    labels = detail["data"][0]["x"]
    assert any("&lt;" in label for label in labels) and not any("<b>" in label for label in labels)
    assert all("<b>" not in str(spec) for spec in figures(page))


def test_a_server_started_plainly_offers_no_model_directory(app, monkeypatch):
    """Safe by default: without the operator's KVLAB_MODEL_FOLDERS=1 there is no Model directory field."""
    monkeypatch.delenv("KVLAB_MODEL_FOLDERS", raising=False)
    monkeypatch.delenv("KVLAB_PUBLIC", raising=False)
    app.switch_page(PAGE).run()
    assert not app.exception
    assert all(w.label != "Model directory" for w in app.text_input)
    monkeypatch.setenv("KVLAB_MODEL_FOLDERS", "1")
    app.run()
    assert any(w.label == "Model directory" for w in app.text_input)


def test_public_host_offers_no_model_directory(app, monkeypatch):
    """With KVLAB_PUBLIC=1 visitors cannot name folders on the server: only the shipped model."""
    monkeypatch.setenv("KVLAB_PUBLIC", "1")
    monkeypatch.setenv("KVLAB_MODEL_FOLDERS", "1")  # public wins over the operator's switch
    app.switch_page(PAGE).run()
    assert not app.exception
    assert all(w.label != "Model directory" for w in app.text_input)
    assert SHIPPED_NAME in _markdown(app)


def test_switching_to_the_llama_shows_grouped_heads_and_a_quarter_cache(page):
    """Choosing the Llama names it, draws 8 query heads over 2 K/V heads, and measures 1,024 bytes per token
    against 4,096 with a K/V head per query head: 4× smaller; the GPT-2 measures 4,096 on the same prompt."""
    page.segmented_control(key="real_choice").set_value(list(SHIPPED)[1]).run()
    assert not page.exception and not errors(page)
    assert LLAMA_NAME in _markdown(page)
    figure(page, "8 query heads share 2 K/V heads: 4 per group")
    assert stat_value(page, "Cache per token (measured)") == "1,024 B"
    assert stat_value(page, "With a K/V head per query head") == "4,096 B"
    assert stat_value(page, "Smaller by") == "4×"
    table = _table(page, "").set_index("")  # a column per model, a row per fact
    assert list(table.loc["cache per token (measured)"]) == ["4,096 B", "1,024 B"]
    assert list(table.loc["K/V heads"]) == ["4", "2"]


def test_llama_decodes_on_its_grouped_cache(page):
    """The Llama steps like the GPT-2: one more token in every layer, K shapes with 2 K/V heads of 16, and
    the measured storage equal to the formula."""
    page.segmented_control(key="real_choice").set_value(list(SHIPPED)[1]).run()
    prompt_len = int(stat_value(page, "Tokens in the cache"))
    _button(page, "Step").click().run()
    assert not page.exception
    assert int(stat_value(page, "Tokens in the cache")) == prompt_len + 1
    assert stat_value(page, "Cache bytes (measured)") == stat_value(page, "Formula")
    table = _table(page, "K shape")
    assert all(shape == f"[1, 2, {prompt_len + 1}, 16]" for shape in table["K shape"])


def test_rules_tab_compares_heads_with_chance(page):
    """The rules tab says how many heads beat chance (or that none does) and shows the chance row, its
    label as short as the heads' (a 38-character one left a phone's figure 64 px of plot, 181 now)."""
    text = _markdown(page) + " ".join(i.value for i in page.info)
    assert "beat chance" in text
    scores = figure(page, "Every head against every rule")
    assert scores["data"][0]["y"][-1] == "chance"
    assert max(len(label) for label in scores["data"][0]["y"]) <= len("chance")
    title = scores["data"][0]["colorbar"]["title"]
    assert (title["text"], title["side"]) == ("score", "top")  # level above the bar, not on end
    table = plain_table(page, "beats chance")
    assert set(table["beats chance"]) <= {"yes", "no"} and all(float(chance) > 0 for chance in table["chance"])


def test_the_decode_step_is_narrated_and_has_the_lesson_keys(page):
    """Like Decode's Step: the narration above the transcript says what the step picked and what the cache
    now covers; Step and Back carry the lesson's keys (the keys-only board presses them) and say so."""
    from apptest_helpers import sent_data

    said = [i.value.replace("\\", "") for i in page.info if "After the prefill" in i.value]
    assert len(said) == 1 and "filled the cache of each of the 4 layers" in said[0]
    prompt_len = int(stat_value(page, "Tokens in the cache"))
    _button(page, "Step").click().run()
    said = [text for text in (i.value.replace("\\", "") for i in page.info)
            if text.startswith("Step 1: the model picked")]
    assert len(said) == 1 and f"now covers {prompt_len + 1} tokens" in said[0]
    buttons = {b.key: b for b in page.button}
    assert "PageDown" in buttons["real_next_token"].help and "PageUp" in buttons["real_back_token"].help
    keys = [sent_data(el) for el in page.get("bidi_component") if sent_data(el).get("kind") == "keys"]
    assert [k["keys"]["PageDown"] for k in keys] == [".st-key-real_next_token button"]
    assert [k["keys"]["ArrowLeft"] for k in keys] == [".st-key-real_back_token button"]


def test_the_unfamiliar_terms_its_controls_metrics_and_captions_name_are_defined_in_their_hovers(page):
    """As on the other pages (tests/test_page_terms.py): GQA, CUDA graphs, d_k … in a label, a metric or a
    caption come with their glossary definition in its help."""
    from test_page_terms import _undefined

    assert not _undefined(page), _undefined(page)


def test_a_head_too_dense_for_a_phone_offers_its_numbers_as_a_table(page):
    """The 16-token prompt's one-head weights hold their numbers at a desk, but Plotly would shrink them to
    3 px on a phone: an "As a table" fold under the figure has them on every screen; a three-token prompt
    keeps them legible everywhere and has no fold. No style aims at Streamlit's key classes to hide them."""
    assert "real_detail_table" in [e.key for e in page.expander if e.key]
    assert not [h for h in page.get("html") if "st-key-" in h.proto.body]
    by_label(page.text_area, "Prompt").input("a b c").run()
    assert not page.exception and len(_pieces(page)["piece"]) <= 4
    assert "real_detail_table" not in [e.key for e in page.expander if e.key]
