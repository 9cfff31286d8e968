"""Tier 1: the tour says it right (issue 32, point 9): a revealed answer does not repeat itself after
"Right: **answer**.", and the keys question counts tokens × heads with the number of heads."""

from __future__ import annotations

from dataclasses import replace

from viz import generate, load_preset
from viz.core.lessons import tour
from viz.core.serving.scheduler import serve

SEED = load_preset("seed")


def every_question() -> list[tour.Question]:
    prefill = generate(SEED, 1)
    full, kv = generate(SEED, 2, "recompute"), generate(SEED, 2, "kv")
    served = SEED.cache_safe()
    continuous = serve(served, tour.tour_workload(served), tour.TOUR_SERVER)
    static = serve(served, tour.tour_workload(served), replace(tour.TOUR_SERVER, policy="static"))
    return [tour.question_mask(prefill), tour.question_even(prefill), tour.question_no_match(prefill),
            tour.question_winner(prefill), tour.question_keys(full, kv), tour.question_stale(full, kv, 1),
            tour.question_prefix(continuous, 2), tour.question_join(continuous, static, 2)]


def test_no_explanation_opens_with_its_answer():
    """The page already says "Right: **answer**."; no explanation opens with the answer or a yes/no again."""
    for question in every_question():
        answer = question.options[question.answer].lower()
        opening = question.explanation.split(":")[0].split(".")[0].strip().lower()
        assert opening not in (answer, "yes", "no"), question.explanation
        assert not question.explanation.lower().startswith(answer), question.explanation


def test_the_keys_question_names_the_heads():
    """'20 keys (5 tokens × 4 heads)': the count of heads is said, not only the word."""
    question = tour.question_keys(generate(SEED, 2, "recompute"), generate(SEED, 2, "kv"))
    assert "encodes 20 keys (5 tokens × 4 heads)" in question.prompt
    assert question.options[question.answer] == "4"


def test_the_footer_counts_the_main_steps_and_not_the_epilogue():
    """Ten steps, the last two an epilogue: 'Step 4 of 8', then no number at all."""
    assert tour.tour_footer(3, 10).startswith("Step 4 of 8 (then an optional epilogue) ·")
    assert tour.tour_footer(8, 10).startswith("Optional epilogue ·")
    assert not any(ch.isdigit() for ch in tour.tour_footer(9, 10))


def test_revealed_options_mark_the_right_one_and_name_the_pick():
    """Once revealed every option reads as text: the right one with ✓ right, the pick named (the class's
    on the projector), nothing else marked."""
    question = tour.question_even(generate(SEED, 1))  # 5, 9, 12.5 (right), 20
    assert tour.revealed_options(question, "9", lettered=True, class_pick=False) == [
        ("A. 5", False), ("B. 9 (your pick)", False), (f"C. 12.5 {tour.RIGHT_MARK}", True), ("D. 20", False)]
    assert tour.revealed_options(question, "12.5", lettered=False, class_pick=True)[2] == \
        (f"12.5 {tour.RIGHT_MARK} (the class's pick)", True)
    assert [text for text, _ in tour.revealed_options(question, None, lettered=False, class_pick=False)] == \
        ["5", "9", f"12.5 {tour.RIGHT_MARK}", "20"]


def test_home_counts_the_tours_steps_and_its_epilogue():
    """Home's card names as many main steps as the tour has before its optional epilogue."""
    from viz.core.lessons import words_home
    from viz.core.lessons.tour import EPILOGUE, STEP_TITLES

    number = {6: "Six", 7: "Seven", 8: "Eight", 9: "Nine", 10: "Ten"}[len(STEP_TITLES) - EPILOGUE]
    assert f"{number} short steps" in words_home.TOUR
    assert all(title.startswith("Epilogue") for title in STEP_TITLES[-EPILOGUE:])
    assert "epilogue of two" in words_home.TOUR and EPILOGUE == 2


def test_every_steps_presenter_lead_says_what_the_teacher_does_there():
    """Presenter mode's lead fits the step shown: on a step with a question the vote and Reveal; on a
    step without one (the prompt, the cache) its own task and no Reveal to press (the vote's line showed
    on every step). Every question is asked by exactly one step, in order, and every lead holds one
    line beside the sidebar's hint."""
    view = tour.tour_view()
    assert [step.title for step in view.steps] == list(tour.STEP_TITLES)
    assert [step.question for step in view.steps if step.question is not None] == list(range(len(view.questions)))
    assert any(step.question is None for step in view.steps)
    for step in view.steps:
        # the tour's name opens the line (viz.ui.common.lesson_header): not the lead's words again
        assert not step.lead.startswith(tour.TOUR_TITLE) and step.lead[0].isupper() and step.lead.endswith(".")
        assert len(step.lead) <= tour.LEAD_CHARS, step.lead
        if step.question is None:
            assert "Reveal" not in step.lead and "vote by letter" not in step.lead and "no vote" in step.lead.lower()
        else:
            assert "Reveal" in step.lead and "vote" in step.lead
    no_vote = [step.lead for step in view.steps if step.question is None]
    assert len(set(no_vote)) == len(no_vote)  # each says its own step's task


def test_no_step_intro_points_at_what_only_reveal_shows():
    """A step's intro stands before its answer is shown and above it once shown: none ends in a colon
    (step 8 said "kvlab computes both:" over an empty column until Reveal)."""
    intros = [tour.PROMPT_VALUES, tour.PROMPT_HEADS, tour.MASK_INTRO, tour.CONTEXTS_INTRO, tour.NOTHING_INTRO,
              tour.LOGITS_INTRO, tour.NO_CACHE_INTRO, tour.CACHE_INTRO, tour.BUG_INTRO, tour.POOL_INTRO,
              tour.BATCHING_INTRO]
    assert not [text for text in intros if text.rstrip().endswith(":")]
