"""Guided tour: the article's walkthrough, one step at a time, with predict-then-reveal questions."""

from contextlib import nullcontext
from dataclasses import replace
from typing import Callable

import streamlit as st

from viz import generate, load_preset
from viz.core.engine.model import MODES
from viz.core.engine.explain import check_cache, explain_position
from viz.figures import serving, toy
from viz.core.serving.scheduler import serve
from viz.core.lessons.tour import (TOUR_SERVER, Question, option_label, tour_score, question_even, question_join,
                                   question_keys, question_mask, question_no_match, question_prefix, question_stale,
                                   question_winner, revealed_options, tour_footer, tour_workload)
from viz.ui import article, classroom, state
from viz.ui.common import md_escape, plot, stepper
from viz.ui.widgets import table

state.require_frame()
PENDING = "tour_pending"  # {question index: the option picked, not revealed yet}: kept while the tour steps

seed = load_preset("seed")
prefill = generate(seed, 1)
runs = {mode: generate(seed, 9, mode) for mode in MODES}
kv, full = runs["kv"], runs["recompute"]
last_head = next(h for h, ok in enumerate(kv.cacheable) if not ok)


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
        st.markdown(f"#### Vote first: {prompt}" if presenter else f"**Predict first:** {prompt}")
        # a class's live count (the teacher's screen) goes beside the options and Reveal, not under them
        pick, count = st.columns([3, 2]) if not revealed and classroom.counting() else (nullcontext(), nullcontext())
        with pick:
            if revealed:  # options are engine numbers and the seed's words
                st.markdown(" · ".join(f"**{md_escape(text)}**" if right else md_escape(text) for text, right in
                                       revealed_options(question, chosen[index], lettered=lettered,
                                                        class_pick=presenter)))
            else:
                choice = st.segmented_control(
                    "The class's answer (optional)" if presenter else "Your answer", question.options,
                    format_func=label, label_visibility="visible" if presenter else "collapsed",
                    **state.bound(f"tour_answer_{index}", pending.get(index),
                                  lambda picked: pending.__setitem__(index, picked)))
            if not revealed and classroom.may_reveal() and st.button(
                    "Reveal", key=f"tour_reveal_button_{index}", icon=":material/visibility:",
                    type="primary" if presenter else "secondary"):
                state.reveal(index, choice)
                classroom.revealed(index)  # in a class: on every student's screen
                st.rerun()
        if not revealed:
            with count:
                classroom.vote(index, question.prompt, question.options, choice)  # in a class: votes and counts
            return False
        right, picked = question.options[question.answer], chosen[index]
        if picked is None:
            st.info(f"Answer: **{md_escape(right)}**. {md_escape(question.explanation)}")
        elif picked == right:
            st.success(f"Right: **{md_escape(right)}**. {md_escape(question.explanation)}")
        else:
            st.error(f"Not quite: you chose {md_escape(picked)}, it is **{md_escape(right)}**. "
                     f"{md_escape(question.explanation)}")
        classroom.counted(index, question.options)  # in a class, the teacher's screen: the final count
    return True


def material_share() -> float:
    """The share of the main column a step's material takes: half in presenter mode, where the
    question sits beside it (:func:`step`), else all of it."""
    return 0.5 if state.presenter() else 1.0


def step(intro: Callable[[], None], index: int, question: Question, answer: Callable[[float], None]) -> None:
    """A step with a question: its material (``intro``), the question, and once revealed ``answer``
    (drawn for a share of the main column). In presenter mode the question sits beside the material,
    whole on a projector's screen, and once revealed the answer takes the top of the material's
    column, so the figure with the answer is in view beside the marked option."""
    if not state.presenter():
        intro()
        if ask(index, question):
            answer(material_share())
        return
    material, asked = st.columns(2, gap="medium")
    with asked:
        revealed = ask(index, question)
    with material:
        if revealed:
            answer(material_share())
        intro()


def step_prompt() -> None:
    st.markdown("The prompt is split into tokens, and each token gets one number, its **value**: the "
                "information it carries. 'Today' and 'weather' carry more than 'is' and 'so'.")
    table({"token": prefill.prefill.tokens, "value": list(seed.values)}, "The prompt's tokens and their values",
          key="tour_tokens")
    st.markdown("Four attention heads each follow one rule. Real heads learn their patterns; these are "
                "written by hand so every number can be checked.")
    table({"head": seed.head_names, "rule": [h.rule for h in seed.heads],
           "in words": ["tokens at even positions", "the last token", "the first token", "every token"]},
          "The four heads and their rules", key="tour_heads")


def step_mask() -> None:
    step(lambda: st.markdown("Prefill handles every position of the prompt **in one pass**. To keep a token from "
                             "looking ahead, a causal mask hides some positions before the softmax."),
         0, question_mask(prefill), lambda share: plot(toy.causal_mask_figure(prefill), key="tour_mask", share=share))


def step_contexts() -> None:
    def intro() -> None:
        st.markdown("Each head scores every visible key: +√d_k = +8 where its rule holds, −8 where it does "
                    "not. Softmax turns the scores into weights, and the context is the weighted sum of values.")
        table(toy.positions_table(prefill), toy.POSITIONS_LABEL, key="tour_positions")

    def answer(share: float) -> None:
        plot(toy.small_multiples(prefill), key="tour_multiples", share=share)
        st.markdown("At the last position, every head:")
        for row in explain_position(prefill, len(prefill.prefill.tokens) - 1):
            st.markdown(f"- {md_escape(row.text)}")
        plot(toy.contexts_figure(prefill), key="tour_contexts", share=share)

    step(intro, 1, question_even(prefill), answer)


def step_nothing() -> None:
    step(lambda: st.markdown("What does a head do when its rule matches **no** visible key?"),
         2, question_no_match(prefill),
         lambda share: plot(toy.stage_figure(prefill, 0, "weights", 0), key="tour_nothing", share=share))


def step_logits() -> None:
    def intro() -> None:
        st.markdown("The context of the last position, one number per head, is multiplied by W_vocab: one "
                    "column per word, one row per head. The result is a logit per word.")
        table(toy.vocab_table(prefill), toy.VOCAB_LABEL, key="tour_vocab")

    step(intro, 3, question_winner(prefill),
         lambda share: plot(toy.prediction_figure(prefill), key="tour_prediction", share=share))


def step_no_cache() -> None:
    step(lambda: st.markdown("The model appends the word it predicted and predicts again. Without a cache, **every** "
                             "key and value is computed again for the longer sequence, though only one token is new."),
         4, question_keys(full, kv),
         lambda share: st.info(md_escape(" ".join(f"{w}" for w in full.tokens[:5])) + " → "
                               + md_escape(f"{full.steps[1].counts.keys_encoded} keys encoded without a cache, "
                                           f"{kv.steps[1].counts.keys_encoded} with it")))


def step_cache() -> None:
    st.markdown("With a **KV cache**, prefill stores every key and value once. Each decode step computes "
                "only the new token's key and value, appends them, and lets the new query read the rest.")
    plot(toy.cache_figure(generate(seed, 2, "kv")), key="tour_cache")
    plot(toy.work_figure(runs, cumulative=True), key="tour_work")
    st.caption("Over 8 steps without a cache the keys encoded add up with n² (recomputing everything), "
               "with the cache they add up with n.")


def step_bug() -> None:
    def answer(share: float) -> None:
        table(toy.comparison_table(check_cache(kv, full, 1)), toy.COMPARISON_LABEL, key="tour_compare")
        st.markdown("The cache-safe form of the rule reads the **query's** position instead of n: "
                    "`k.pos == q.pos`, 'attend to self'. The *cache-safe* preset uses it; there the cache "
                    "and recomputation agree at every step.")

    step(lambda: st.markdown("The article prints the same decode context with and without the cache, and they "
                             "differ in one head. kvlab computes both:"),
         5, question_stale(full, kv, last_head), answer)


def served() -> tuple:
    """The epilogue's three requests served with continuous batching, then with static batching."""
    scenario = seed.cache_safe()
    workload = tour_workload(scenario)
    return serve(scenario, workload, TOUR_SERVER), serve(scenario, workload, replace(TOUR_SERVER, policy="static"))


def step_pool() -> None:
    def intro() -> None:
        st.caption("Optional epilogue, in two steps: what a server does with many caches at once.")
        st.markdown("One sequence keeps one growing cache. A server keeps **many** at once, cut into fixed-size "
                    "**blocks** of one pool. Here three requests send the seed's prompt, made cache-safe, and "
                    "**prefix caching** lets a request take the full blocks an earlier one already computed.")

    def answer(share: float) -> None:
        shared = next(it.index for it in continuous.iterations if any(len(b.owners) > 1 for b in it.blocks))
        plot(serving.pool_figure(continuous, shared), key="tour_pool", share=share)

    continuous, _ = served()
    step(intro, 6, question_prefix(continuous, 2), answer)


def step_batching() -> None:
    def intro() -> None:
        st.markdown("At every **iteration** the server decides who computes: new prompts (prefill), one more "
                    "token for each running request (decode), or nobody while memory is short. Time is counted in "
                    "**ticks**: one per token computed, plus a fixed cost per iteration. Two requests fit at once.")
        plot(serving.timeline_figure(static, title="Static batching: the third request waits for the whole batch"),
             key="tour_static", share=material_share())

    def answer(share: float) -> None:
        plot(serving.timeline_figure(continuous, title="Continuous batching: C takes B's slot when B is done"),
             key="tour_continuous", share=share)
        st.markdown("The same ideas run real servers (vLLM, TGI, TensorRT-LLM): paged blocks, continuous "
                    "batching, chunked prefill, prefix caching, speculative decoding and FlashAttention. The "
                    "Serving page runs each of them on your scenario.")
        st.page_link("pages/serving.py", label="Open the Serving page", icon=":material/dns:")

    continuous, static = served()
    step(intro, 7, question_join(continuous, static, 2), answer)


def questions() -> list[Question]:
    """Every question of the tour, in order (index = the question's number in ``ask``)."""
    continuous, static = served()
    return [question_mask(prefill), question_even(prefill), question_no_match(prefill),
            question_winner(prefill), question_keys(full, kv), question_stale(full, kv, last_head),
            question_prefix(continuous, 2), question_join(continuous, static, 2)]


def score() -> None:
    """The tally of the revealed questions, and a way to start the questions again."""
    asked = questions()
    if len(asked) - 1 not in state.tour_choices():
        st.caption("Your score appears here once the last question is revealed.")
        return
    tally = tour_score(asked, state.tour_choices())
    st.markdown(f"**Your score: {tally.right} of {tally.total}** right"
                + (f" ({tally.unanswered} revealed without a vote, {tally.unrevealed} not revealed yet)."
                   if tally.unanswered or tally.unrevealed else "."))
    if st.button("Start the questions again", icon=":material/restart_alt:", key="tour_again"):
        state.forget_choices()
        st.session_state.pop(PENDING, None)
        st.rerun()


STEPS = [
    ("The prompt, its values and four heads", step_prompt),
    ("Prefill and the causal mask", step_mask),
    ("Scores, weights and contexts", step_contexts),
    ("When nothing matches", step_nothing),
    ("From the context to the next word", step_logits),
    ("Decode without a cache", step_no_cache),
    ("Decode with the KV cache", step_cache),
    ("The cache bug in the article", step_bug),
    ("Epilogue: many caches, one pool of blocks", step_pool),
    ("Epilogue: who computes in each iteration", step_batching),
]

if state.presenter():  # the room goes to the question, its options large (the frame's style)
    st.caption("Guided tour · read the question aloud, let the class vote by letter, then press Reveal.")
else:
    st.title("Guided tour")
    st.markdown(f"The worked example of the article {article.link()}, step by step. Commit to an answer before "
               "you reveal it; your score is on the last step. The tour always uses the seed scenario; the other "
               "pages use yours.")
# the stepper keeps the tour's step itself (a link's step on the first run, kept while other pages show)
index = stepper(state.TOUR_STEP, len(STEPS), "Step", format_label=lambda i: f"{i}. {STEPS[i - 1][0]}") - 1
title, render = STEPS[index]
st.subheader(f"{index + 1}. {title}")
render()
if index == len(STEPS) - 1:
    score()
st.caption(tour_footer(index, len(STEPS)))
