"""Tier 2 (AppTest): the Prefill page shows the engine's numbers and follows every edit."""

from __future__ import annotations

from apptest_helpers import array, flip, label_beside, pick, board, boards, cells, edit_table, figure, figures, move_range, range_data, shown


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_prefill_renders_the_seed_numbers(app):
    """The page renders without exception and shows the article's contexts and prediction."""
    contexts = cells(board(app, "Contexts"))
    assert contexts[0] == ["10", "20", "20", "12.5"]
    assert contexts[3] == ["10", "15", "10.33", "9"]
    app.session_state["prefill_tab"] = "From context to word"
    app.run()
    assert "**nice**" in _markdown(app)
    logits = array(figure(app, "Logits and probabilities")["data"][0]["y"])
    assert [round(v, 2) for v in logits] == [15.3, 14.2, 8.15]


def test_position_stepper_walks_the_prompt(app):
    """The → button moves to the next position and explains each head's choice there."""
    for _ in range(3):
        next(b for b in app.button if b.key == "prefill_position_forward").click().run()
    text = _markdown(app)
    assert "**so** (position 4)" in text
    assert "even\\: average\\(weather, so\\) → 12\\.5" in text
    assert "last\\: so \\(value 5\\) → 5" in text


def test_position_range_moves_the_position_and_back(app):
    """The position range offers each position as "i · token"; each move sets the position (also back
    to one seen before), and the narration, the range and the link follow."""
    data = range_data(app, "prefill_position_range")
    assert data["label"] == "Step · query position" and (data["min"], data["max"]) == (1, 4)
    assert data["labels"] == ["1 · Today", "2 · weather", "3 · is", "4 · so"]
    for position, token in ((4, "so"), (2, "weather"), (4, "so")):
        move_range(app, "prefill_position_range", position)
        assert range_data(app, "prefill_position_range")["value"] == position
        assert shown(app.info[0].value).startswith(f"**{token}** (position {position}) sees")
        assert app.query_params.get("pos") in (str(position), [str(position)])
    next(b for b in app.button if b.key == "prefill_position_back").click().run()
    assert range_data(app, "prefill_position_range")["value"] == 3


def test_value_edit_changes_the_contexts(app):
    """Editing a token value changes the contexts on the page."""
    edit_table(app, "tokens", edited_rows={1: {"value": 40.0}})
    contexts = cells(board(app, "Contexts"))
    assert contexts[0][1] == "40" and contexts[0][3] == "22.5"


def test_rule_edit_changes_the_weights(app):
    """Changing a rule changes that head's attention weights."""
    app.session_state["prefill_tab"] = "Stages of one head"
    edit_table(app, "heads", edited_rows={0: {"rule": "k.pos == 1"}})
    weights = array(figure(app, "Attention weights (softmax)")["data"][0]["z"])
    assert round(weights[3][0], 4) == 1.0


def test_bad_rule_keeps_the_old_weights(app):
    """A refused rule leaves the figures computed from the last good scenario."""
    before = cells(board(app, "Contexts"))
    edit_table(app, "heads", edited_rows={0: {"rule": "k.pos ** 2"}})
    assert any("not allowed" in e.value for e in app.error)
    assert cells(board(app, "Contexts")) == before


def test_head_selector_switches_the_stage_figures(app):
    """Choosing another head redraws the stages and the lesson heatmap for it, and the link keeps it."""
    app.session_state["prefill_tab"] = "Stages of one head"
    pick(app, "prefill_head", 2)
    assert "head 'first'" in board(app, "Attention · head")["title"]
    assert app.query_params.get("head") in ("3", ["3"])
    assert "head 'first'" in figure(app, "Raw scores")["layout"]["title"]["text"]


def test_no_match_rows_are_explained(app):
    """The page explains the rows where nothing matches, with this scenario's own numbers."""
    app.session_state["prefill_tab"] = "From context to word"
    app.run()
    assert "(head even at 'Today'), but the computation spreads the weight evenly and gives 10." in (
        _markdown(app).replace("\\", ""))
    assert "When nothing matches" in _markdown(app)
    assert "head **even** at **Today**" in _markdown(app)


def test_html_tokens_are_shown_as_text(app):
    """A token that looks like HTML is escaped everywhere it is shown."""
    edit_table(app, "tokens", edited_rows={0: {"token": "<img src=x onerror=alert(1)>"}})
    assert "<img" not in _markdown(app).replace("\\<img", "")
    # the board writes labels with textContent: the token travels verbatim and shows as typed
    assert board(app, "Contexts")["columns"][0] == "1 · <img src=x onerror=alert(1)>"
    # a prompt of 20 tokens: the board shows the 16 positions around the one in focus ...
    edit_table(app, "tokens", added_rows=[{"token": f"t{i}", "value": 1.0} for i in range(16)])
    spec = board(app, "Contexts")
    assert spec["columns"][0] == "1 · <img src=x onerror=alert(1)>" and len(spec["columns"]) == 16
    assert "(positions 1–16 of 20; Whole shows all)" in spec["title"]
    # ... and all 20 with Whole, too many for cell text: Plotly draws them, escaped
    flip(app, "prefill_whole_switch", True)
    spec = figure(app, "Contexts")
    assert all("<img" not in label for label in spec["data"][0]["x"])
    assert any("&lt;img" in label for label in spec["data"][0]["x"])


def test_description_only_for_an_unedited_preset(app):
    """A preset's description is shown (in its fold, built when opened: a first view sends none of it)
    until the scenario is edited; then it is called custom."""
    assert "The worked example from the article" not in _markdown(app).replace("\\", "")
    app.session_state["prefill_about_open"] = True  # pages/prefill.py ABOUT_FOLD, opened as a click would
    app.run()
    assert "The worked example from the article" in _markdown(app).replace("\\", "")
    edit_table(app, "tokens", edited_rows={0: {"value": 11.0}})
    assert "The worked example" not in _markdown(app)
    assert any("A custom scenario" in c.value for c in app.caption)


def test_the_position_sent_ahead_is_the_one_the_server_shows(app):
    """The boards hold the next and the previous position (drawn at the stepper's click, which a lesson
    key makes too); after
    the click's rerun the board shows exactly that spec."""
    def sent():  # the lesson screen's three boards, above the tabs (whose "Every head" has boards too)
        return boards(app)[:3]

    forward = ".st-key-prefill_position_forward button"
    next(b for b in app.button if b.key == "prefill_position_forward").click().run()
    ahead = [next(t["spec"] for t in s["turns"] if t["selector"] == forward) for s in sent()]
    assert [t["selector"] for t in sent()[0]["turns"]] == [forward, ".st-key-prefill_position_back button"]
    next(b for b in app.button if b.key == "prefill_position_forward").click().run()
    assert [{k: v for k, v in s.items() if k not in ("turns", "draw")} for s in sent()] == [
        {**a, "presenter": False} for a in ahead]
    assert ahead[0]["outlines"][0]["row"] == 2  # the gold row: the third query, position 3


def test_every_head_draws_one_board_per_head_and_the_contexts(app):
    """"Every head": one attention board per head (the article's weights at position 1), the contexts
    board with the position's column outlined, and both as tables once "As tables" opens."""
    heads = ["even", "last", "first", "all"]
    titles = [spec["title"] for spec in boards(app)]
    assert all(any(t.startswith(f"Attention · head '{h}'") for t in titles) for h in heads)
    assert cells(board(app, "head 'all'"))[3] == [".25", ".25", ".25", ".25"]
    assert {"group": 0, "row": None, "col": 0, "color": "#E69F00"} in board(app, "Contexts")["outlines"]
    assert not figures(app) and not app.main.dataframe  # nothing loads Plotly or the data grid
    app.session_state["every_head_tables"] = True
    app.run()
    assert len(app.main.dataframe) == 2


def test_every_head_of_a_long_prompt_is_boards_until_whole_asks_for_all(app):
    """A prompt longer than the board's cell text allows: the heads' windows and the contexts around
    the position are boards, so the tab loads no Plotly; Whole, all 20 positions, gives the small
    multiples (one heatmap per head) and the contexts in Plotly, which zooms and pans."""
    edit_table(app, "tokens", added_rows=[{"token": f"t{i}", "value": 1.0} for i in range(16)])
    assert not figures(app)
    assert len(boards(app)) == 3 + 4 + 1  # the lesson screen's, one per head, the contexts
    assert len(board(app, "Contexts")["columns"]) == 16
    flip(app, "prefill_whole_switch", True)
    assert figure(app, "Contexts")
    heatmaps = [[t for t in spec["data"] if t["type"] == "heatmap"] for spec in figures(app)]
    multiples = next(spec for spec, maps in zip(figures(app), heatmaps) if len(maps) == 4)  # the seed's four heads
    assert all(trace["type"] == "heatmap" or not trace.get("x", [None])[0] for trace in multiples["data"])
    # (besides the heatmaps only legend entries, drawn at no point)
    # no every-head board (at most the lesson screen's; its heatmaps turn Plotly too when whole)
    assert len(boards(app)) <= 3 and not any(b["title"].startswith("Contexts") for b in boards(app))


def test_the_head_picker_is_labelled_at_its_left_with_one_help_that_says_what_a_head_is(app):
    """As on Decode: "Head" right at the picker's left, its (?) defining a head; the picker's own label
    collapsed, with no second (?)."""
    from viz.core.lessons.lesson import HEAD_HELP

    assert label_beside(app, "prefill_head") == {"text": "Head", "help": HEAD_HELP, "label": "Head",
                                                 "collapsed": True, "picker help": ""}
