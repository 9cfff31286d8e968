"""Tier 2 (AppTest): the guided tour walks its steps and reveals the engine's answers."""

from __future__ import annotations

import json
import re

import pytest

from viz import generate, load_preset
from viz.core.lessons.tour import RIGHT_MARK, question_even, question_no_match
from viz.ui import state
from viz.ui.common import md_escape
from apptest_helpers import flip, move_range, pick, plain_table, plain_tables, range_data, shown, widget


@pytest.fixture
def tour(app):
    app.switch_page("pages/tour.py").run()
    assert not app.exception
    return app


def _forward(at):
    next(b for b in at.button if b.key == f"{state.TOUR_STEP}_forward").click().run()
    assert not at.exception


def _back(at):
    next(b for b in at.button if b.key == f"{state.TOUR_STEP}_back").click().run()
    assert not at.exception


def _answers(at) -> list:
    """The tour's answer controls drawn in the last run (segmented controls keyed tour_answer_<i>)."""
    return [g for g in at.button_group if (g.key or "").startswith("tour_answer")]


def _options_line(at) -> list[str]:
    """A revealed question's options as the visitor reads them (text, not a grey disabled control):
    each option's Markdown, bold where it is the right one."""
    return next(shown(m.value) for m in at.markdown if RIGHT_MARK in m.value).split(" · ")


def test_every_step_renders(tour):
    """All ten steps render without an exception; the last two are the server epilogue."""
    titles = []
    for _ in range(9):
        _forward(tour)
        titles.append(tour.subheader[0].value)
    assert titles[-3:] == ["8. The cache bug in the article", "9. Epilogue: many caches, one pool of blocks",
                           "10. Epilogue: who computes in each iteration"]
    assert next(b for b in tour.button if b.key == f"{state.TOUR_STEP}_forward").disabled


def test_the_step_range_jumps_to_any_step_and_back(tour):
    """The tour's range names every step ("i. title", a long one cut: its subheader says it whole) and
    jumps straight to one, back as well; the subheader and the link follow."""
    data = range_data(tour, f"{state.TOUR_STEP}_range")
    assert (data["min"], data["max"]) == (1, 10) and data["labels"][9] == "10. Epilogue: who computes in each…"
    for step in (10, 2, 9):
        move_range(tour, f"{state.TOUR_STEP}_range", step)
        assert tour.subheader[0].value.startswith(data["labels"][step - 1].removesuffix("…"))
        assert tour.subheader[0].value.startswith(f"{step}. ")
        assert tour.query_params.get("tour") in (str(step), [str(step)])


def test_reveal_checks_the_answer_against_the_engine(tour):
    """Choosing the engine's number and revealing says it is right; a wrong pick says not quite."""
    _forward(tour)
    _forward(tour)  # scores, weights and contexts
    question = question_even(generate(load_preset("seed"), 1))
    assert question.options[question.answer] == "12.5"
    pick(tour, "tour_answer_1", "12.5")
    next(b for b in tour.button if b.label == "Reveal").click().run()
    assert "Right" in tour.success[0].value
    assert not _answers(tour) and tour.session_state[state.TOUR_CHOICES] == {1: "12.5"}  # no control once revealed
    assert f"**12.5 {RIGHT_MARK} (your pick)**" in _options_line(tour)
    _forward(tour)  # when nothing matches
    wrong = next(o for o in question_no_match_options() if o != "10")
    pick(tour, "tour_answer_2", wrong)
    next(b for b in tour.button if b.label == "Reveal").click().run()
    assert "Not quite" in tour.error[0].value and "you chose" in tour.error[0].value


def test_score_counts_the_recorded_choices(tour):
    """The last step scores the choices made before Reveal; starting again clears them."""
    _forward(tour)  # the mask: the right answer is "no"
    pick(tour, "tour_answer_0", "no")
    next(b for b in tour.button if b.label == "Reveal").click().run()
    _go_to(tour, 9)
    next(b for b in tour.button if b.key == "tour_reveal_button_6").click().run()
    _go_to(tour, 10)
    assert not any("Your score:" in m.value for m in tour.markdown)  # not before the last question
    next(b for b in tour.button if b.key == "tour_reveal_button_7").click().run()
    score = next(m.value for m in tour.markdown if "Your score" in m.value)
    assert "1 of 8" in score and "2 revealed without a vote, 5 not revealed yet" in score
    next(b for b in tour.button if b.key == "tour_again").click().run()
    assert tour.session_state[state.TOUR_CHOICES] == {}
    assert not any("Your score:" in m.value for m in tour.markdown)
    assert [g.proto.disabled for g in _answers(tour)] == [False]


def test_cache_bug_step_shows_six_and_seven(tour):
    """Once revealed, the cache-bug step compares the cached 6 with the recomputed 7 for the 'last' head."""
    for _ in range(7):
        _forward(tour)
    assert not plain_tables(tour)  # the comparison gives the answer away: only after Reveal
    next(b for b in tour.button if b.key == "tour_reveal_button_5").click().run()
    table = plain_table(tour, "|difference|")
    assert (table["head"][1], table["KV cache"][1], table["recompute"][1]) == ("last", "6", "7")


def test_closing_chapter_asks_about_the_server_with_the_engines_answers(tour):
    """The two epilogue steps serve three requests: their answers are the scheduler's prefix hits and time
    to first token, one question per step."""
    from dataclasses import replace

    from viz.core.serving.scheduler import serve
    from viz.core.lessons.tour import TOUR_SERVER, question_join, question_prefix, tour_workload

    for _ in range(8):
        _forward(tour)
    served = load_preset("seed").cache_safe()
    continuous = serve(served, tour_workload(served), TOUR_SERVER)
    static = serve(served, tour_workload(served), replace(TOUR_SERVER, policy="static"))
    join, prefix = question_join(continuous, static, 2), question_prefix(continuous, 2)
    assert continuous.outcomes[2].ttft < static.outcomes[2].ttft and continuous.outcomes[2].prefix_hits == 2
    questions = _answers(tour)
    assert [list(g.options) for g in questions] == [prefix.options]  # one at a time
    pick(tour, "tour_answer_6", prefix.options[prefix.answer])
    next(b for b in tour.button if b.key == "tour_reveal_button_6").click().run()
    assert "Right: **2**" in tour.success[0].value
    _forward(tour)
    assert [list(g.options) for g in _answers(tour)] == [join.options]


STEP_OF_QUESTION = {0: 2, 1: 3, 2: 4, 3: 5, 4: 6, 5: 8, 6: 9, 7: 10}  # question index -> tour step


def _tour_questions():
    """The tour's questions as the page asks them, from the engine."""
    from viz.core.lessons import tour as core_tour
    seed = load_preset("seed")
    prefill = generate(seed, 1)
    full, kv = generate(seed, 9, "recompute"), generate(seed, 9, "kv")
    last_head = next(h for h, ok in enumerate(kv.cacheable) if not ok)
    from dataclasses import replace

    from viz.core.serving.scheduler import serve
    served = seed.cache_safe()
    continuous = serve(served, core_tour.tour_workload(served), core_tour.TOUR_SERVER)
    static = serve(served, core_tour.tour_workload(served), replace(core_tour.TOUR_SERVER, policy="static"))
    return [core_tour.question_mask(prefill), question_even(prefill), core_tour.question_no_match(prefill),
            core_tour.question_winner(prefill), core_tour.question_keys(full, kv),
            core_tour.question_stale(full, kv, last_head), core_tour.question_prefix(continuous, 2),
            core_tour.question_join(continuous, static, 2)]


def _texts_outside_questions(at, questions) -> list[str]:
    """Every text the step shows (markdown, alerts, tables, figure titles, labels and hover text)
    but the questions' own prompts and options."""
    from apptest_helpers import figures, shown
    asked = [shown(md_escape(q.prompt)) for q in questions]
    texts = []
    for kind in ("markdown", "caption", "info", "success", "error", "warning", "subheader", "title"):
        for element in at.get(kind):
            text = shown(str(element.value))
            if any(prompt in text for prompt in asked):
                continue
            texts.append(text)
    for frame in at.dataframe:
        texts.append(frame.value.to_csv())
    for spec in plain_tables(at):
        texts.append(json.dumps(spec, ensure_ascii=False))
    for spec in figures(at):
        # what a figure writes (not its sizes and paddings, which are numbers too)
        texts.append(spec["layout"].get("title", {}).get("text", ""))
        texts.extend(note.get("text", "") for note in spec["layout"].get("annotations", []))
        for trace in spec["data"]:
            texts.append(json.dumps({k: trace.get(k) for k in ("text", "hovertext", "customdata", "z", "name")}))
    return texts


def _answer_pattern(answer: str) -> re.Pattern:
    """The answer as a whole word or number (12.5 does not match 112.5 or 12.55)."""
    return re.compile(rf"(?<![\w.]){re.escape(answer)}(?![\w]|\.\d)")


def _go_to(at, step: int) -> None:
    while at.session_state[state.TOUR_STEP] < step:
        _forward(at)


@pytest.mark.parametrize("presenter", [False, True], ids=["student", "presenter"])
def test_nothing_gives_an_answer_away_before_reveal(tour, presenter):
    """Before Reveal, no text, table or figure of a step holds its answer; after Reveal it is shown."""
    if presenter:
        flip(tour, state.PRESENTER_TOGGLE, True)
    questions = _tour_questions()
    for index, question in enumerate(questions):  # in order, as a class goes through the tour
        _go_to(tour, STEP_OF_QUESTION[index])
        answers = widget(tour, f"tour_answer_{index}")
        letters = [f"{letter}. " for letter in "ABCDEFGH"[:len(question.options)]] if presenter else [""] * 9
        assert [shown(o) for o in answers.options] == [f"{letter}{o}" for letter, o in zip(letters, question.options)]
        answer = question.options[question.answer]
        others = [_answer_pattern(o) for o in question.options if o != answer]
        # a text that names the answer gives it away unless it names every other option as well
        # (the vocabulary table lists every word; it does not say which one wins)
        leaks = [t for t in _texts_outside_questions(tour, questions)
                 if _answer_pattern(answer).search(t) and not all(o.search(t) for o in others)]
        assert not leaks, f"question {index + 1} shows its answer {answer!r} before Reveal: {leaks[:2]}"
        next(b for b in tour.button if b.key == f"tour_reveal_button_{index}").click().run()
        assert not tour.exception
        assert any(_answer_pattern(answer).search(t) for t in _texts_outside_questions(tour, questions)), index
        # once revealed the options are text: the right option, and only it, is marked in words and bold
        options = _options_line(tour)
        marked = [o.strip("*") for o in options]
        assert [o for o in marked if RIGHT_MARK in o] == [f"{letters[question.answer]}{answer} {RIGHT_MARK}"]
        assert [o.startswith("**") for o in options] == [i == question.answer for i in range(len(question.options))]


def question_no_match_options() -> list[str]:
    return question_no_match(generate(load_preset("seed"), 1)).options


def test_a_picked_answer_is_kept_while_the_tour_steps_and_recorded_at_reveal(tour):
    """An answer picked before Reveal stays picked when the tour steps on and back (a key press that
    steps never moves it); Reveal records it."""
    _go_to(tour, 3)
    pick(tour, "tour_answer_1", "20")
    _forward(tour)
    assert widget(tour, "tour_answer_2").value is None  # the next question starts unanswered
    _back(tour)
    assert widget(tour, "tour_answer_1").value == "20"
    next(b for b in tour.button if b.key == "tour_reveal_button_1").click().run()
    assert tour.session_state[state.TOUR_CHOICES] == {1: "20"} and "you chose 20" in tour.error[0].value


@pytest.mark.parametrize("presenter", [False, True], ids=["student", "presenter"])
def test_the_question_sits_beside_the_material_and_the_answer_goes_on_top(tour, presenter):
    """At a desk as in presenter mode a step with a question is two columns: the question in the second;
    once revealed, the answer's figure comes first in the first column, above the step's table (at a
    desk it came under the question, its top at 809 px of 900)."""
    def kinds(block) -> list[str]:  # the elements inside, in order, through containers
        return [kind for child in block.children.values()
                for kind in (kinds(child) if hasattr(child, "children") else [child.type])]

    if presenter:
        flip(tour, state.PRESENTER_TOGGLE, True)
    _go_to(tour, 3)
    material = [kinds(c) for c in tour.main.columns if "table" in kinds(c)]
    assert material == [["markdown", "table"]]  # the step's text and table, the question beside them
    next(b for b in tour.button if b.key == "tour_reveal_button_1").click().run()
    material = [kinds(c) for c in tour.main.columns if "table" in kinds(c)]
    assert len(material) == 1 and material[0][0] == "plotly_chart" and material[0][-2:] == ["markdown", "table"], material


@pytest.mark.parametrize("presenter", [False, True], ids=["student", "presenter"])
def test_the_last_step_adds_the_answers_timeline_under_the_one_asked_about(tour, presenter):
    """The last step draws static batching's timeline beside its question; once revealed, continuous
    batching's joins it in the same figure, under it, on the same time axis: the timeline the question
    is about stays first and in place (presenter mode put the answer's timeline first and pushed the
    static one to y = 960), and the question stays beside it."""
    from apptest_helpers import figure
    from viz.core.lessons.tour import BATCHING_TITLE, CONTINUOUS_TITLE, STATIC_TITLE

    def labels(spec: dict) -> list[str]:
        return [note["text"] for note in spec["layout"]["annotations"]]

    if presenter:
        flip(tour, state.PRESENTER_TOGGLE, True)
    _go_to(tour, 10)
    assert labels(figure(tour, BATCHING_TITLE)) == [STATIC_TITLE] and len(tour.get("plotly_chart")) == 1
    next(b for b in tour.button if b.key == "tour_reveal_button_7").click().run()
    assert not tour.exception and len(tour.get("plotly_chart")) == 1
    spec = figure(tour, BATCHING_TITLE)
    assert labels(spec) == [STATIC_TITLE, CONTINUOUS_TITLE]
    assert spec["layout"]["xaxis2"]["matches"] == "x"  # one time axis
    names = [trace["name"] for trace in spec["data"] if trace.get("showlegend", True)]
    assert len(names) == len(set(names))  # one legend entry per meaning
    columns = [c for c in tour.main.columns if c.children]
    assert len(columns) == 2  # the figure's column, the question's beside it


def test_the_first_step_lays_its_two_tables_side_by_side(tour):
    """Step 1's values and heads stand in two columns, a table each (a phone stacks them): one under the
    other, the heads' table ran past a 720-px projector's first screen."""
    def tables(block) -> int:
        return sum(tables(child) if hasattr(child, "children") else child.type == "table"
                   for child in block.children.values())

    assert [tables(column) for column in tour.main.columns if tables(column)] == [1, 1]


def test_every_paragraph_that_names_an_unfamiliar_term_defines_it_in_its_hover(tour):
    """Every step, its answers revealed: a paragraph naming a term a first-year student would not know
    (glossary.UNFAMILIAR: '√d_k' in step 3, 'ticks' in the epilogue) carries its definition in its hover
    (step 3 said '+√d_k = +8' and nowhere what d_k is)."""
    from viz.core.lessons.glossary import UNFAMILIAR, terms_in

    named = set()
    for step, question in [(step, None) for step in (1, 7)] + [(s, q) for q, s in STEP_OF_QUESTION.items()]:
        tour.session_state[state.TOUR_STEP] = step
        tour.run()
        if question is not None:
            next(b for b in tour.button if b.key == f"tour_reveal_button_{question}").click().run()
        assert not tour.exception
        for paragraph in tour.main.markdown:  # the tour's own (the sidebar's device badge names CUDA on a GPU)
            text, help_ = paragraph.value.replace("\\", ""), str(paragraph.proto.help or "").replace("\\", "")
            for term in (t for t in terms_in(text) if t.term in UNFAMILIAR):
                named.add(term.term)
                assert term.short in help_, (step, term.term, text[:60])
    assert {"d_k", "tick"} <= named  # the test saw the terms it is about


def test_the_presenter_lead_follows_the_step(tour):
    """In presenter mode the first line says what the teacher does on the step shown: the vote on a step
    with a question, the step's own task on one without (it said "press Reveal" on every step), also
    when the step changes by the → button (the lead is drawn before the step control)."""
    import html

    from viz.core.lessons.tour import tour_view

    flip(tour, state.PRESENTER_TOGGLE, True)
    steps = tour_view().steps
    for number, step in enumerate(steps, start=1):
        if number > 1:
            _forward(tour)
        lines = [e.proto.body for e in tour.get("html") if not e.proto.body.startswith("<style>")]
        assert len(lines) == 1 and html.escape(step.lead) in lines[0], (number, lines)
        others = {s.lead for s in steps} - {step.lead}
        assert not any(html.escape(lead) in lines[0] for lead in others)


def test_the_cache_step_lays_the_cache_and_its_work_side_by_side(tour):
    """Step 7's cache figure and work chart stand in two columns (a phone stacks them): one under the
    other, the work chart started below a 1280 × 720 projector's fold."""
    def charts(block) -> int:
        return sum(charts(child) if hasattr(child, "children") else child.type == "plotly_chart"
                   for child in block.children.values())

    _go_to(tour, 7)
    assert [charts(column) for column in tour.main.columns if charts(column)] == [1, 1]


def test_the_tours_opening_paragraph_shows_on_its_first_step_only(tour):
    """The paragraph that says what the tour is opens step 1; later steps start with the step itself
    (said again on every step, it pushed a phone's question below its first screen)."""
    def opening() -> bool:
        return any("worked example of the article" in m.value for m in tour.markdown)

    assert opening() and tour.title[0].value == "Guided tour"
    _forward(tour)
    assert not opening() and tour.title[0].value == "Guided tour"
    _back(tour)
    assert opening()


def test_on_the_projector_the_score_is_the_classs(tour):
    """In presenter mode the answers recorded are the class's picks, so the last step's tally is the
    class's ("Your score" on a projector spoke to the teacher)."""
    from viz.core.lessons.tour import CLASS_SCORE_LATER

    flip(tour, state.PRESENTER_TOGGLE, True)
    _go_to(tour, 10)
    assert CLASS_SCORE_LATER in [c.value for c in tour.caption]
    next(b for b in tour.button if b.key == "tour_reveal_button_7").click().run()
    assert any(m.value.startswith("**The class's score: 0 of 8**") for m in tour.markdown)
    assert not any("Your score" in m.value for m in tour.markdown)


def _kinds(block) -> list[str]:
    return [kind for child in block.children.values()
            for kind in (_kinds(child) if hasattr(child, "children") else [child.type])]


def order(at) -> list[str]:
    """The columns holding the question (its options) and the material (its table), left to right (a
    phone stacks them in this order)."""
    shown = [_kinds(column) for column in at.main.columns]
    return ["question" if "button_group" in k else "material" for k in shown if "button_group" in k or "table" in k]


def test_a_visitors_screen_puts_the_question_before_the_material(tour):
    """Outside a class the question comes first too (a phone stacks the columns: it lay under the
    step's text and table); presenter mode, the projector, keeps the material first beside it."""
    _go_to(tour, 3)  # a question beside the positions' table
    assert order(tour) == ["question", "material"]
    flip(tour, state.PRESENTER_TOGGLE, True)
    assert order(tour) == ["material", "question"]


def test_a_class_students_screen_puts_the_question_before_the_material(tmp_path, monkeypatch):
    """In a class, a student's screen shows the question first (a phone stacks the columns: under the
    step's text and table, the vote and "Your vote is in" lay below the first screen); the teacher's
    keeps the material first."""
    monkeypatch.setenv("KVLAB_STORE", f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    from test_page_class import forward, student, teacher

    at, seat = teacher()
    pupil = student(seat.code)
    at.switch_page("pages/tour.py").run()
    forward(forward(at))  # step 3: a question beside the positions' table
    pupil.run()
    assert pupil.session_state[state.TOUR_STEP] == 3 and not pupil.exception
    assert order(pupil) == ["question", "material"]
    assert order(at) == ["material", "question"]


def test_the_step_controls_names_fit_a_phones_slider(tour):
    """Every step's name over the slider's thumb is at most VALUE_CHARS long (a phone's slider holds
    about 40 characters; the tour's 44-character epilogue titles ran past its left end, over the ←
    button), cut after a whole word; the step's title under it stays whole."""
    from viz.ui.common import VALUE_CHARS

    _go_to(tour, 10)
    names = [name.replace("\\", "") for name in next(s for s in tour.select_slider if s.key.startswith(state.TOUR_STEP)).options]
    assert len(names) == 10 and all(len(name) <= VALUE_CHARS for name in names), names
    assert names[0] == "1. The prompt, its values and four heads"  # a name that fits is whole
    assert names[9] == "10. Epilogue: who computes in each…"
    assert any(h.value == "10. Epilogue: who computes in each iteration" for h in tour.subheader)
