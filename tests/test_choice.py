"""Tier 2 (AppTest): the one-of-N and on/off controls (Streamlit's segmented controls, pills and
toggles): what each shows, the value the app decided, and the callbacks a change runs."""

from __future__ import annotations

from apptest_helpers import by_label, choice_data, flip, label_beside, pick, rerun, widget
from viz.ui import sidebar, state

HEAD, MODE, RUN, WHOLE = "decode_head", "decode_mode_picker", "decode_run_n", "decode_whole_switch"


def test_each_control_shows_its_label_options_value_and_help(decode):
    """Each control has its label, its options as the visitor reads them, the value in force and help
    (the head picker's in the label at its left)."""
    head = choice_data(decode, HEAD)
    assert head["label"] == "Head" and head["options"] == list(decode.session_state[state.SCENARIO].head_names)
    assert head["value"] == decode.session_state[state.HEAD] == 0 and label_beside(decode, HEAD)["help"]
    assert choice_data(decode, MODE)["options"] == ["recompute", "re-encode", "KV cache"]
    assert choice_data(decode, MODE)["value"] == decode.session_state[state.MODE] == "kv"
    whole = choice_data(decode, WHOLE)
    assert whole["label"] == "Whole" and whole["value"] is False
    presenter = choice_data(decode, state.PRESENTER_TOGGLE)
    assert presenter["label"] == "Presenter mode" and presenter["value"] is False


def test_a_pick_runs_the_callback_and_the_rerun_shows_it(decode):
    """Picking an option calls back before the rerun, which draws the new value."""
    pick(decode, HEAD, 2)
    assert decode.session_state[state.HEAD] == 2 and choice_data(decode, HEAD)["value"] == 2
    pick(decode, MODE, "reencode")
    assert decode.session_state[state.MODE] == "reencode" and choice_data(decode, MODE)["value"] == "reencode"
    pick(decode, RUN, 32)
    assert any(b.label == "Run 32" for b in decode.button)


def test_a_flip_runs_the_callback(decode):
    """A flip turns the toggle on (and off again)."""
    by_label(decode.button, "Run 8").click().run()  # 12 tokens: more than a window holds, Whole matters
    flip(decode, WHOLE, True)
    assert choice_data(decode, WHOLE)["value"] is True and decode.session_state["decode_whole"] is True
    flip(decode, state.PRESENTER_TOGGLE, True)
    assert decode.session_state[state.PRESENTER]
    flip(decode, state.PRESENTER_TOGGLE, False)
    assert not decode.session_state[state.PRESENTER]


def test_a_switch_that_would_change_nothing_is_off_limits_and_says_why(decode):
    """On the seed's 4 tokens every row and key shows already, so Whole is off limits, its help saying
    when it matters (a student flipped it and nothing changed); past 8 tokens it is offered."""
    from viz.core.lessons.lesson import WHOLE_ALL_SHOWN

    assert widget(decode, WHOLE).disabled and choice_data(decode, WHOLE)["help"] == WHOLE_ALL_SHOWN
    by_label(decode.button, "Run 8").click().run()
    assert not widget(decode, WHOLE).disabled and choice_data(decode, WHOLE)["help"] != WHOLE_ALL_SHOWN


def test_a_control_shows_the_value_the_app_decided(decode):
    """A value changed elsewhere (a share link, another page, a scenario with fewer heads) is what
    the control shows on the next run, not what the widget last held."""
    pick(decode, HEAD, 3)
    decode.session_state[state.HEAD] = 1  # as another page's head picker would leave it
    rerun(decode)
    assert choice_data(decode, HEAD)["value"] == 1
    decode.session_state[state.MODE] = "recompute"
    rerun(decode)
    assert choice_data(decode, MODE)["value"] == "recompute"


def test_the_scenario_pills_load_a_preset_and_none_is_chosen_once_edited(decode):
    """A pill loads its scenario (the decode step back at 0); an edited scenario chooses no pill."""
    names = choice_data(decode, sidebar.PRESET)["options"]
    assert choice_data(decode, sidebar.PRESET)["value"] == "seed" and "sliding-window" in names
    pick(decode, sidebar.PRESET, "sliding-window")
    assert decode.session_state[state.SCENARIO].title != "" and choice_data(decode, sidebar.PRESET)["value"] == "sliding-window"
    decode.session_state[state.SCENARIO] = decode.session_state[state.SCENARIO].with_prompt("an edited prompt")
    rerun(decode)
    assert choice_data(decode, sidebar.PRESET)["value"] is None
