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
    turn = {"selector": board_ui.button_selector("decode_step"), "key": "ArrowRight", "spec": SPEC}
    data = board_ui.board_data(SPEC, presenter=True, turns=[turn], draw=7)
    assert isinstance(data, list) and len(data) == 1
    assert data[0] == {**SPEC, "presenter": True, "turns": [turn], "draw": 7}
    assert turn["selector"] == ".st-key-decode_step button"


@pytest.mark.parametrize("turn", [{"selector": "x", "key": "ArrowRight"}, {"selector": "x", "key": "k", "spec": {}, "extra": 1}])
def test_a_turn_without_its_three_fields_is_refused(turn):
    """A turn is exactly selector, key and spec: anything else is a mistake of the page, not sent."""
    with pytest.raises(ValueError, match="selector, key and spec"):
        board_ui.board_data(SPEC, presenter=False, turns=[turn], draw=1)


def test_the_readme_documents_every_field_the_script_reads():
    """Every field board_data adds, and every field the script reads off a turn, is in README.md."""
    script = Path(board_ui.__file__).with_name("board.js").read_text(encoding="utf-8")
    for field in ("presenter", "turns", "draw", "selector", "key", "spec"):
        assert f'"{field}"' in README, field
    assert set(re.findall(r"turn\.(\w+)", script)) <= {"selector", "key", "spec"}
    assert set(re.findall(r"data\.(\w+)", script)) <= {"presenter", "turns", "label", "title", "legend", "kind"}


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
