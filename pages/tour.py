"""Guided tour: the article's walkthrough, one step at a time, with predict-then-reveal questions."""

from typing import Callable

import streamlit as st

from viz.figures import serving, toy
from viz.core.lessons import tour as words
from viz.core.lessons.tour import Question, option_label, revealed_options, tour_footer, tour_score, tour_view
from viz.ui import article, class_votes, classroom, state
from viz.ui.common import defined_markdown, held_step, lesson_header, md_escape, plot, stepper
from viz.ui.widgets import table

state.require_frame()
PENDING = "tour_pending"  # {question index: the option picked, not revealed yet}: kept while the tour steps
BATCHING_COLUMNS, BATCHING_SHARE = (3, 2), 0.6  # the last step: the timelines' column, three fifths of the main one
# a class's teacher: half each, so the question's options, Reveal and the class's live count (a bar per
# option) keep one row each and the whole vote screen fits a 1280 × 720 projector (the count ran to 795 px)
COUNTING_COLUMNS, COUNTING_SHARE = (1, 1), 0.5

view = tour_view()  # every run and question of the tour, worked out before a step is drawn
seed, prefill = view.scenario, view.prefill


def ask(index: int, question: Question) -> bool:
    """Ask, let the student (or the class) commit to an answer, then reveal the engine's number.

    Returns whether this question is revealed: a step draws whatever gives the answer away (its
    figures, its numbers) only then. The options sit side by side (a segmented control: the lesson's
    keys step the tour and never move the choice); the choice is kept while the tour steps, recorded
    at Reveal and counts for the score; once revealed the options are text in full contrast (a disabled
    control is grey), the right one marked ✓ and bold, the pick named."""
    presenter = state.presenter()
    lettered = presenter or classroom.seat() is not None  # the projector and every phone of a class
    chosen = state.tour_choices()
    revealed = index in chosen
    pending = st.session_state.setdefault(PENDING, {})

    def label(option: str) -> str:
        return md_escape(option_label(question, option, lettered=lettered, revealed=False))

    with st.container(border=True, key=f"tour_question_{index}"):
        prompt = md_escape(question.prompt)
        defined_markdown(words.ask_line(prompt, presenter=presenter, revealed=revealed))
        if not revealed:
            # the options and Reveal on one row (it wraps on a phone), a class's live count in one row
            # under them (the teacher's screen): a long question still fits a 720 px projector
            with st.container(horizontal=True, vertical_alignment="bottom"):
                choice = st.segmented_control(
                    "The class's answer (optional)" if presenter else "Your answer", question.options,
                    format_func=label, label_visibility="visible" if presenter else "collapsed",
                    **state.bound(f"tour_answer_{index}", pending.get(index),
                                  lambda picked: pending.__setitem__(index, picked)))
                if class_votes.may_reveal() and st.button(
                        "Reveal", key=f"tour_reveal_button_{index}", icon=":material/visibility:",
                        type="primary" if presenter else "secondary"):
                    state.reveal(index, choice)
                    class_votes.revealed(index)  # in a class: on every student's screen
                    st.rerun()
            class_votes.vote(index, question.prompt, question.options, choice)  # in a class: votes and counts
            return False
        # options are engine numbers and the seed's words
        st.markdown(" · ".join(f"**{md_escape(text)}**" if right else md_escape(text) for text, right in
                               revealed_options(question, chosen[index], lettered=lettered, class_pick=presenter)))
        right, picked = question.options[question.answer], chosen[index]
        kind, text = words.verdict(md_escape(right), None if picked is None else md_escape(picked),
                                   md_escape(question.explanation), class_pick=presenter)
        {"info": st.info, "success": st.success, "error": st.error}[kind](text)
        class_votes.counted(index, question.options)  # in a class, the teacher's screen: the final count
    return True


MATERIAL_SHARE = 0.5  # a step's material: half the main column, the question in the other half (:func:`step`)


def projecting() -> bool:
    """Whether this screen is a projector's: presenter mode outside a class, a class's teacher's."""
    here = classroom.seat()
    return here.teacher if here is not None else state.presenter()


def material_and_question(widths: tuple[int, int]) -> tuple:
    """A step's two columns, ``widths`` for the material's and the question's: the question first, as a
    phone stacks them (the question, then the step's text and table: in a class the vote the student
    came for, with "Your vote is in" under it, lay below the first screen under them, and so did a
    visitor's question); a projector's (presenter mode outside a class, a class's teacher's) keeps the material first, at
    the left, the question beside it. Side by side both start at the top, so the order moves nothing
    down at a desk."""
    if projecting():
        material, question = st.columns(widths, gap="medium")
        return material, question
    question, material = st.columns(widths[::-1], gap="medium")
    return material, question


def step(intro: Callable[[], None], index: int, answer: Callable[[float], None],
         more: Callable[[], None] | None = None) -> None:
    """A step with question ``index``: its material (``intro``) with the question beside it. Once revealed,
    ``answer`` draws the one figure (or table, or line) that holds the answer, alone at the top of the
    material's column (for :data:`MATERIAL_SHARE` of the main column), so it is whole in view beside the
    marked option on a projector and at a desk alike (at 1440 × 900 under the question it started at
    809 px; step 3's contexts, drawn under two other things, at 927 px of 720). On a projector ``more``
    (what else the answer shows) goes under the question, where a 1920 × 1080 projector had an empty half
    column, so it pushes neither the answer nor the step's text down; elsewhere it follows the answer, as
    a phone stacks the columns (:func:`material_and_question`): the question, then the answer, near the
    step control."""
    beside = projecting() and more is not None
    material, asked = material_and_question((1, 1))
    with asked:
        revealed = ask(index, view.questions[index])
        if revealed and beside:
            more()
    with material:
        if revealed:
            answer(MATERIAL_SHARE)
            if more is not None and not beside:
                more()
        intro()


def step_prompt(_: None) -> None:
    """The prompt's values and the four heads side by side (a phone stacks them): both tables whole in a
    projector's first screen (the heads' ran past 720 px under the values')."""
    values, heads = st.columns(2, gap="medium")
    with values:
        defined_markdown(words.PROMPT_VALUES)
        table({"token": prefill.prefill.tokens, "value": list(seed.values)}, "The prompt's tokens and their values",
              key="tour_tokens")
    with heads:
        defined_markdown(words.PROMPT_HEADS)
        table({"head": seed.head_names, "rule": [h.rule for h in seed.heads], "in words": words.HEAD_RULES_IN_WORDS},
              "The four heads and their rules", key="tour_heads")


def step_mask(asked: int) -> None:
    step(lambda: defined_markdown(words.MASK_INTRO), asked, lambda share: plot(toy.causal_mask_figure(prefill), key="tour_mask", share=share))


def step_contexts(asked: int) -> None:
    def intro() -> None:
        defined_markdown(words.CONTEXTS_INTRO)
        table(toy.positions_table(prefill), toy.POSITIONS_LABEL, key="tour_positions")

    def more() -> None:
        plot(toy.small_multiples(prefill), key="tour_multiples", share=MATERIAL_SHARE)
        defined_markdown(words.LAST_POSITION)
        for row in view.last_position:
            st.markdown(f"- {md_escape(row.text)}")

    # the contexts hold the answer (the 'even' head's at 'so'); every head's weights and choice explain it
    step(intro, asked, lambda share: plot(toy.contexts_figure(prefill), key="tour_contexts", share=share), more)


def step_nothing(asked: int) -> None:
    step(lambda: defined_markdown(words.NOTHING_INTRO), asked,
         lambda share: plot(toy.stage_figure(prefill, 0, "weights", 0), key="tour_nothing", share=share))


def step_logits(asked: int) -> None:
    def intro() -> None:
        defined_markdown(words.LOGITS_INTRO)
        table(toy.vocab_table(prefill), toy.VOCAB_LABEL, key="tour_vocab")

    step(intro, asked,
         lambda share: plot(toy.prediction_figure(prefill), key="tour_prediction", share=share))


def step_no_cache(asked: int) -> None:
    step(lambda: defined_markdown(words.NO_CACHE_INTRO), asked,
         lambda share: st.info(md_escape(view.keys_answer)))


WORK_HEIGHT = 220  # px as built: the work chart beside the cache figure, both whole in a projector's first screen


def step_cache(_: None) -> None:
    """The cache and the work it saves side by side (a phone stacks them): stacked, the work chart
    started below a 1280 × 720 projector's fold, with nothing on screen saying it was there. On a
    projector the intro follows the pair (the lead says what to show first): above it, the pair, fitted
    to its real half of the screen (530 px: a legend row more than the 590 px once guessed), ran past 720."""
    presenter = state.presenter()
    if not presenter:
        defined_markdown(words.CACHE_INTRO)
    cache, work = st.columns(2, gap="medium")
    with cache:
        plot(toy.cache_figure(view.cache_run), key="tour_cache", share=MATERIAL_SHARE)
    with work:
        plot(toy.work_figure(view.runs, cumulative=True, height=WORK_HEIGHT, title=view.work_title), key="tour_work",
             share=MATERIAL_SHARE)
    if presenter:
        defined_markdown(words.CACHE_INTRO)
    st.caption(words.CACHE_NOTE)


def step_bug(asked: int) -> None:
    step(lambda: defined_markdown(words.BUG_INTRO), asked,
         lambda share: table(toy.comparison_table(view.cache_check), toy.COMPARISON_LABEL, key="tour_compare"),
         lambda: defined_markdown(words.BUG_FIX))


def step_pool(asked: int) -> None:
    """Once revealed, the epilogue's note moves under the pool figure (on a projector under the question:
    above the step's text, under the pool figure, it pushed that text to 628 px of a 720 px projector)."""
    revealed = asked in state.tour_choices()

    def intro() -> None:
        if not revealed:
            st.caption(words.EPILOGUE_NOTE)
        defined_markdown(words.POOL_INTRO)

    def answer(share: float) -> None:
        plot(serving.pool_figure(view.continuous, view.shared_iteration), key="tour_pool", share=share)

    step(intro, asked, answer, lambda: st.caption(words.EPILOGUE_NOTE))


def step_batching(asked: int) -> None:
    """The last question beside static batching's timeline (the timeline wider than in :func:`step`: its
    legend stands beside it on a projector; a phone stacks them). Once revealed, continuous
    batching's timeline joins it under the same time axis, so the answer is read off beside the marked
    option, below the timeline the question is about, and neither moves."""
    runs = [(words.STATIC_TITLE, view.static)]
    if asked in state.tour_choices():  # revealed
        runs.append((words.CONTINUOUS_TITLE, view.continuous))
    columns, share = (COUNTING_COLUMNS, COUNTING_SHARE) if class_votes.counting() else (BATCHING_COLUMNS, BATCHING_SHARE)
    material, beside = material_and_question(columns)
    with beside:
        if ask(asked, view.questions[asked]):  # under the answer (on a phone too, where the columns stack)
            defined_markdown(words.SERVERS_NOTE)
            st.page_link("pages/serving.py", label="Open the Serving page", icon=":material/dns:")
    with material:
        plot(serving.timelines_figure(runs, words.BATCHING_TITLE, legend_beside=state.presenter(),
                                      large_type=state.presenter()), key="tour_batching", share=share)
        defined_markdown(words.BATCHING_INTRO)


def score() -> None:
    """The tally of the revealed questions, and a way to start the questions again."""
    asked = list(view.questions)
    if len(asked) - 1 not in state.tour_choices():
        st.caption(words.CLASS_SCORE_LATER if state.presenter() else words.SCORE_LATER)
        return
    tally = tour_score(asked, state.tour_choices())
    st.markdown(words.score_line(tally, class_pick=state.presenter()))
    if st.button("Start the questions again", icon=":material/restart_alt:", key="tour_again"):
        state.forget_choices()
        st.session_state.pop(PENDING, None)
        st.rerun()


# each step as the core describes it (title, question, presenter lead) and what draws it, given its question
STEPS = list(zip(view.steps, [step_prompt, step_mask, step_contexts, step_nothing, step_logits,
                              step_no_cache, step_cache, step_bug, step_pool, step_batching], strict=True))

# the stepper keeps the tour's step itself (a link's step on the first run, kept while other pages show);
# read before the header, whose presenter lead says what the teacher does on this step
held = held_step(state.TOUR_STEP, len(STEPS))
if state.presenter():  # the room goes to the question, its options large (the frame's style)
    lesson_header(words.TOUR_TITLE, STEPS[held - 1][0].lead)  # with the hint that says how the sidebar opens
else:
    st.title(words.TOUR_TITLE)
    if held == 1:  # the opening paragraph on the first step only: on every step it pushed a phone's question
        st.markdown(words.tour_intro(article.link()))  # below its first screen (at 785 px of 844 on step 5)
index = stepper(state.TOUR_STEP, len(STEPS), "Step", format_label=lambda i: f"{i}. {STEPS[i - 1][0].title}") - 1
here, render = STEPS[index]
st.subheader(f"{index + 1}. {here.title}")
render(here.question)
if index == len(STEPS) - 1:
    score()
st.caption(tour_footer(index, len(STEPS)))
