"""Tier 1 and 2: the lesson board's Python side (viz.ui.board), without a browser: the data its
script is sent (README.md's contract) and what a lesson page sends it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apptest_helpers import boards, on_page
from viz.ui import board as board_ui

README = Path(board_ui.__file__).with_name("README.md").read_text(encoding="utf-8")
SPEC = {"kind": "bars", "title": "Next word", "bars": [], "axis": "probability", "legend": [], "label": "x"}


def test_board_data_is_the_spec_with_presenter_turns_and_draw_as_one_item():
    """The script gets a list of one object: the spec's fields, presenter mode, the turns, the draw number."""
    turn = {"selector": board_ui.button_selector("decode_step"), "spec": SPEC}
    data = board_ui.board_data(SPEC, presenter=True, turns=[turn], draw=7)
    assert isinstance(data, list) and len(data) == 1
    assert data[0] == {**SPEC, "presenter": True, "turns": [turn], "draw": 7}
    assert turn["selector"] == ".st-key-decode_step button"


@pytest.mark.parametrize("turn", [{"selector": "x"}, {"selector": "x", "key": "ArrowRight", "spec": {}}])
def test_a_turn_without_its_two_fields_is_refused(turn):
    """A turn is exactly selector and spec (a key presses the button, it names no turn): anything
    else is a mistake of the page, not sent."""
    with pytest.raises(ValueError, match="selector and spec"):
        board_ui.board_data(SPEC, presenter=False, turns=[turn], draw=1)


def test_a_step_bar_is_back_then_step_each_pressing_the_pages_own_button():
    """A phone's step bar (board_data's "steps") is ← Back then Step →, each naming the selector of
    the page's button it presses, Back off at the first step and Step off at the last; a board sent
    without one carries no "steps" field, and a malformed button is refused."""
    bar = board_ui.step_bar("decode_step", "decode_back", ("Back", "Step"), at_start=True, at_end=False)
    assert bar == [{"label": "← Back", "selector": ".st-key-decode_back button", "disabled": True, "primary": False},
                   {"label": "Step →", "selector": ".st-key-decode_step button", "disabled": False, "primary": True}]
    assert board_ui.board_data(SPEC, presenter=False, turns=[], draw=0, steps=bar)[0]["steps"] == bar
    assert "steps" not in board_ui.board_data(SPEC, presenter=False, turns=[], draw=0)[0]
    with pytest.raises(ValueError, match="step bar"):
        board_ui.board_data(SPEC, presenter=False, turns=[], draw=0, steps=[{"label": "Step", "selector": "x"}])


def test_the_readme_documents_every_field_the_script_reads():
    """Every field board_data adds, and every field the script reads off a turn, is in README.md."""
    script = Path(board_ui.__file__).with_name("board.js").read_text(encoding="utf-8")
    for field in ("presenter", "turns", "draw", "selector", "spec", "kind", "keys", "steps", "fold",
                  *board_ui.STEP_FIELDS):
        assert f'"{field}"' in README, field
    assert set(re.findall(r"turn\.(\w+)", script)) <= {"selector", "spec"}
    assert set(re.findall(r"step\.(\w+)", script)) == board_ui.STEP_FIELDS
    assert set(re.findall(r"data\.(\w+)", script)) <= {"presenter", "turns", "label", "title", "legend", "kind", "keys",
                                                       "steps", "fold"}
    entry = set(re.findall(r"item\.(\w+)", script))  # a legend entry's fields (the cache board's scales: "wide")
    assert entry == {"label", "color", "fill", "wide"} and all(f'"{field}"' in README for field in entry)


def test_the_keys_map_every_lesson_key_to_its_button():
    """The keys-only form is sent, for each lesson key, the selector of the button it presses: →,
    PageDown and Space press Step, ← and PageUp press Back; the help texts name exactly these keys."""
    data = board_ui.keys_data("decode_step", "decode_back")
    assert data == [{"kind": "keys", "presenter": False, "keys": {"ArrowRight": ".st-key-decode_step button",
                                              "PageDown": ".st-key-decode_step button",
                                              " ": ".st-key-decode_step button",
                                              "ArrowLeft": ".st-key-decode_back button",
                                              "PageUp": ".st-key-decode_back button"}}]
    assert board_ui.keys_data("decode_step", "decode_back", presenter=True)[0]["presenter"] is True
    names = {"ArrowRight": "→", "PageDown": "PageDown", " ": "Space", "ArrowLeft": "←", "PageUp": "PageUp"}
    assert board_ui.STEP_KEYS_HELP == ", ".join(names[k] for k in board_ui.STEP_KEYS)
    assert board_ui.BACK_KEYS_HELP == ", ".join(names[k] for k in board_ui.BACK_KEYS)


def test_every_step_control_has_the_lesson_keys_and_says_so(app):
    """Decode's Step and Back and a stepper's arrows (Prefill's position) carry no Streamlit shortcut
    (the keys-only board presses them, once a key) and their help names the keys."""
    decode = on_page(app, "pages/decode.py")
    buttons = {b.key: b for b in decode.button}
    assert "PageDown, Space" in buttons["decode_step"].help and "PageUp" in buttons["decode_back"].help
    assert not any(b.proto.shortcut for b in decode.button)
    keys = [sent for sent in _sent(decode) if sent.get("kind") == "keys"]
    assert [k["keys"]["PageDown"] for k in keys] == [".st-key-decode_step button"]
    prefill = on_page(app, "pages/prefill.py")
    assert not any(b.proto.shortcut for b in prefill.button)
    keys = [sent for sent in _sent(prefill) if sent.get("kind") == "keys"]
    assert [k["keys"]["ArrowLeft"] for k in keys] == [".st-key-prefill_position_back button"]


def _sent(at) -> list[dict]:
    """What every kvlab_board element of the last run was sent (its one item)."""
    from apptest_helpers import sent_data
    return [sent_data(element) for element in at.get("bidi_component")]


def test_a_lesson_page_draws_its_boards_each_with_a_new_draw_number(app):
    """Decode's three boards (the attention window, the cache, the next word) are kvlab_board
    components; every render carries a number no earlier render had, so the browser redraws."""
    decode = on_page(app, "pages/decode.py")
    first = boards(decode)
    assert [b["kind"] for b in first] == ["matrix", "matrix", "bars"]
    decode.run()
    again = boards(decode)
    assert min(b["draw"] for b in again) > max(b["draw"] for b in first)
    assert len({b["draw"] for b in first + again}) == 6
    assert all(b["turns"] for b in first + again)


def test_decodes_attention_board_alone_carries_the_phones_step_bar(app):
    """On Decode the attention board (the first) carries the step bar a phone shows over it, pressing
    the page's own Back and Step; at step 0 its Back is off like the page's; the cache and the next
    word carry none, and neither does Prefill (its stepper stands right over the board)."""
    decode = on_page(app, "pages/decode.py")
    sent = boards(decode)
    assert [[b["label"] for b in spec.get("steps", [])] for spec in sent] == [["← Back", "Step →"], [], []]
    buttons = {b.key: b for b in decode.button}
    assert [b["disabled"] for b in sent[0]["steps"]] == [buttons["decode_back"].disabled,
                                                          buttons["decode_step"].disabled] == [True, False]
    assert [b["selector"] for b in sent[0]["steps"]] == [".st-key-decode_back button", ".st-key-decode_step button"]
    decode.button(key="decode_step").click().run()
    assert not boards(decode)[0]["steps"][0]["disabled"]
    assert not any("steps" in spec for spec in boards(on_page(app, "pages/prefill.py")))


def test_a_board_without_turns_keeps_its_draw_number_so_unchanged_data_is_not_redrawn(app):
    """Prefill's "Every head" boards have no turns (no click draws them): each render sends 0, so the
    data of an unchanged board is the same and the script keeps what is on screen."""
    prefill = on_page(app, "pages/prefill.py")
    first = [b for b in boards(prefill) if not b["turns"]]
    prefill.run()
    again = [b for b in boards(prefill) if not b["turns"]]
    assert first and {b["draw"] for b in first + again} == {0} and again == first


def test_presenter_mode_turning_sends_the_sidebar_form_once(app):
    """Streamlit's initial state folds the sidebar only where the visitor never moved it by hand, so
    the run where presenter mode turns on sends the sidebar form (fold), the run where it turns off
    sends it again (unfold the one it folded), and the runs between send none."""
    from apptest_helpers import flip, on_page
    decode = on_page(app, "pages/decode.py")

    def forms() -> list[dict]:
        return [sent for sent in _sent(decode) if sent.get("kind") == "sidebar"]

    assert forms() == []
    assert board_ui.sidebar_data(True) == [{"kind": "sidebar", "fold": True}]
    flip(decode, "kv_w_presenter", True)
    assert forms() == board_ui.sidebar_data(True)
    decode.run()
    assert forms() == []
    flip(decode, "kv_w_presenter", False)
    assert forms() == board_ui.sidebar_data(False)
