"""Tier 2 (AppTest): kvlab's choice and switch (viz.ui.components): what they send to the browser,
the callbacks they run, and browser payloads that are not a pick or a flip, ignored."""

from __future__ import annotations

import pytest

from apptest_helpers import choice_data, fire, flip, on_page, pick
from viz.ui import state

HEAD, MODE, RUN, WHOLE = "decode_head", "decode_mode_picker", "decode_run_n", "decode_whole_switch"


@pytest.fixture
def decode(app):
    return on_page(app, "pages/decode.py")


def test_the_data_sent_names_each_control(decode):
    """Each control gets its label, options as plain text, value, help and presenter mode."""
    head = choice_data(decode, HEAD)
    assert head["kind"] == "choice" and head["label"] == "Head" and not head["label_visible"]
    assert head["options"] == list(decode.session_state[state.SCENARIO].head_names)
    assert head["value"] == decode.session_state[state.HEAD] and head["help"] and not head["presenter"]
    assert choice_data(decode, MODE)["options"] == ["recompute", "re-encode", "KV cache"]
    whole = choice_data(decode, WHOLE)
    assert whole["kind"] == "switch" and whole["label"] == "Whole" and whole["value"] is False
    presenter = choice_data(decode, state.PRESENTER_TOGGLE)
    assert presenter["label"] == "Presenter mode" and presenter["value"] is False
    # one mark per session, the same on every control and run: a page kept open across a new
    # session (a reconnect) sees it change and counts its picks from that session's number again
    marks = {choice_data(decode, key)["session"] for key in (HEAD, MODE, RUN, WHOLE, state.PRESENTER_TOGGLE)}
    pick(decode, HEAD, 1)
    assert marks == {choice_data(decode, HEAD)["session"]} and len(next(iter(marks))) == 16


def test_a_pick_runs_the_callback_with_its_index(decode):
    """Picking an option calls back with its index before the rerun, which draws the new value."""
    pick(decode, HEAD, 2)
    assert decode.session_state[state.HEAD] == 2 and choice_data(decode, HEAD)["value"] == 2
    pick(decode, MODE, 1)
    assert decode.session_state[state.MODE] == "reencode" and choice_data(decode, MODE)["value"] == 1
    pick(decode, RUN, 4)
    assert any(b.label == "Run 32" for b in decode.button)


def test_a_flip_runs_the_callback_and_presenter_data_follows(decode):
    """A flip turns the switch on (and off again); in presenter mode every control says so."""
    flip(decode, WHOLE, True)
    assert choice_data(decode, WHOLE)["value"] is True
    flip(decode, state.PRESENTER_TOGGLE, True)
    assert decode.session_state[state.PRESENTER]
    assert all(choice_data(decode, key)["presenter"] for key in (HEAD, MODE, RUN, WHOLE, state.PRESENTER_TOGGLE))
    flip(decode, state.PRESENTER_TOGGLE, False)
    assert not decode.session_state[state.PRESENTER]


@pytest.mark.parametrize("payload", [
    "2", 2, None, [2], {"index": "2", "seq": 1}, {"index": True, "seq": 1}, {"index": 2.0, "seq": 1},
    {"index": 99, "seq": 1}, {"index": -1, "seq": 1}, {"index": 2}, {"index": 2, "seq": "1"},
    {"index": 2, "seq": True}, {"on": True, "seq": 1}])
def test_hostile_picks_are_ignored(decode, payload):
    """A pick that is not a whole index in range with a whole seq changes nothing and raises nothing."""
    before = (decode.session_state[state.HEAD], decode.session_state[state.MODE])
    fire(decode, HEAD, "picked", payload)
    fire(decode, MODE, "picked", payload)
    assert not decode.exception, [e.value for e in decode.exception]
    assert (decode.session_state[state.HEAD], decode.session_state[state.MODE]) == before


@pytest.mark.parametrize("payload", [
    "on", 1, None, {"on": 1, "seq": 1}, {"on": "true", "seq": 1}, {"on": True}, {"on": True, "seq": 1.5},
    {"index": 1, "seq": 1}])
def test_hostile_flips_are_ignored(decode, payload):
    """A flip that is not a bool with a whole seq leaves presenter mode and Whole as they were."""
    fire(decode, state.PRESENTER_TOGGLE, "flipped", payload)
    fire(decode, WHOLE, "flipped", payload)
    assert not decode.exception, [e.value for e in decode.exception]
    assert not decode.session_state[state.PRESENTER] and choice_data(decode, WHOLE)["value"] is False


def test_the_choice_shows_the_servers_value_once_it_has_seen_the_pick(decode):
    """Each pick's number is counted as seen, so the browser shows the server's value again."""
    pick(decode, HEAD, 1)
    pick(decode, HEAD, 0)
    assert choice_data(decode, HEAD)["seen"] == 2 and choice_data(decode, HEAD)["value"] == 0
