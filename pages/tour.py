"""Guided tour: the article's walkthrough, one step at a time, with predict-then-reveal questions."""

from dataclasses import replace

import streamlit as st

from viz import generate, load_preset
from viz.core.engine import MODES
from viz.core.explain import check_cache, explain_position
from viz.figures import serving, toy
from viz.core.scheduler import serve
from viz.core.tour import (TOUR_SERVER, Question, question_even, question_join, question_keys, question_mask,
                           question_no_match, question_prefix, question_stale, question_winner, tour_workload)
from viz.ui import state
from viz.ui.common import header, md_escape, plot, stepper

state.require_frame()
STEP = "tour_step"
ANSWER = "tour_answer_{}"
REVEALED = "tour_revealed_{}"

seed = load_preset("seed")
prefill = generate(seed, 1)
runs = {mode: generate(seed, 9, mode) for mode in MODES}
kv, full = runs["kv"], runs["recompute"]
last_head = next(h for h, ok in enumerate(kv.cacheable) if not ok)


def ask(index: int, question: Question) -> None:
    """Ask, let the class commit to an answer, then reveal the engine's number."""
    with st.container(border=True):
        st.markdown(f"**Predict first:** {md_escape(question.prompt)}")
        choice = st.radio("Your answer", question.options, index=None, key=ANSWER.format(index),
                          horizontal=True, label_visibility="collapsed")
        if st.button("Reveal", key=f"tour_reveal_button_{index}", icon=":material/visibility:"):
            st.session_state[REVEALED.format(index)] = True
        if st.session_state.get(REVEALED.format(index)):
            right = question.options[question.answer]
            if choice is None:
                st.info(f"Answer: **{md_escape(right)}**. {md_escape(question.explanation)}")
            elif choice == right:
                st.success(f"Right: **{md_escape(right)}**. {md_escape(question.explanation)}")
            else:
                st.error(f"Not quite: it is **{md_escape(right)}**. {md_escape(question.explanation)}")


def step_prompt() -> None:
    st.markdown("The prompt is split into tokens, and each token gets one number, its **value**: the "
                "information it carries. 'Today' and 'weather' carry more than 'is' and 'so'.")
    st.dataframe({"token": prefill.prefill.tokens, "value": list(seed.values)},
                 hide_index=True)
    st.markdown("Four attention heads each follow one rule. Real heads learn their patterns; these are "
                "written by hand so every number can be checked.")
    st.dataframe({"head": seed.head_names, "rule": [h.rule for h in seed.heads],
                  "in words": ["tokens at even positions", "the last token", "the first token",
                               "every token"]}, hide_index=True)


def step_mask() -> None:
    st.markdown("Prefill handles every position of the prompt **in one pass**. To keep a token from "
                "looking ahead, a causal mask hides all later positions before the softmax.")
    plot(toy.causal_mask_figure(prefill), key="tour_mask")
    ask(0, question_mask(prefill))


def step_contexts() -> None:
    st.markdown("Each head scores every visible key: +√d_k = +8 where its rule holds, −8 where it does "
                "not. Softmax turns the scores into weights, and the context is the weighted sum of values.")
    plot(toy.small_multiples(prefill), key="tour_multiples")
    ask(1, question_even(prefill))
    st.markdown("At the last position, every head:")
    for row in explain_position(prefill, len(prefill.prefill.tokens) - 1):
        st.markdown(f"- {md_escape(row.text)}")
    plot(toy.contexts_figure(prefill), key="tour_contexts")


def step_nothing() -> None:
    st.markdown("What does a head do when its rule matches **no** visible key?")
    ask(2, question_no_match(prefill))
    plot(toy.stage_figure(prefill, 0, "weights", 0), key="tour_nothing")


def step_logits() -> None:
    st.markdown("The context of the last position, one number per head, is multiplied by W_vocab: one "
                "column per word, one row per head. The result is a logit per word.")
    st.dataframe(toy.vocab_table(prefill), hide_index=True)
    ask(3, question_winner(prefill))
    plot(toy.prediction_figure(prefill), key="tour_prediction")


def step_no_cache() -> None:
    st.markdown("The model appends 'nice' (value 7) and predicts again. Without a cache, **every** key "
                "and value is computed again for the longer sequence, though only one token is new.")
    st.info(md_escape(" ".join(f"{w}" for w in full.tokens[:5])) + " → "
            + md_escape(f"{full.steps[1].counts.keys_encoded} keys encoded, "
                        f"{full.steps[1].counts.scores} scores"))
    ask(4, question_keys(full, kv))


def step_cache() -> None:
    st.markdown("With a **KV cache**, prefill stores every key and value once. Each decode step computes "
                "only the new token's key and value, appends them, and lets the new query read the rest.")
    plot(toy.cache_figure(generate(seed, 2, "kv")), key="tour_cache")
    plot(toy.work_figure(runs, cumulative=True), key="tour_work")
    st.caption("Over 8 steps without a cache the keys encoded add up with n² (recomputing everything), "
               "with the cache they add up with n.")


def step_bug() -> None:
    st.markdown("The article prints the same decode context with and without the cache. kvlab computes "
                "both, and they differ in one head:")
    st.dataframe(toy.comparison_table(check_cache(kv, full, 1)), hide_index=True)
    ask(5, question_stale(full, kv, last_head))
    st.markdown("The cache-safe form of the rule reads the **query's** position instead of n: "
                "`k.pos == q.pos`, 'attend to self'. The *cache-safe* preset uses it; there the cache and "
                "recomputation agree at every step.")


def step_server() -> None:
    st.markdown("One sequence keeps one growing cache. A server keeps **many** at once, in fixed-size blocks "
                "of one pool, and decides at every iteration who computes: new prompts (prefill), one more "
                "token for each running request (decode), or nobody while memory is short. Here three "
                "requests send the seed's prompt, made cache-safe; two fit at once.")
    served = seed.cache_safe()
    workload = tour_workload(served)
    continuous = serve(served, workload, TOUR_SERVER)
    static = serve(served, workload, replace(TOUR_SERVER, policy="static"))
    plot(serving.timeline_figure(continuous, title="Continuous batching: C takes B's slot when B is done"),
         key="tour_continuous")
    plot(serving.timeline_figure(static, title="Static batching: C waits for the whole batch"), key="tour_static")
    ask(6, question_join(continuous, static, 2))
    shared = next(it.index for it in continuous.iterations if any(len(b.owners) > 1 for b in it.blocks))
    plot(serving.pool_figure(continuous, shared), key="tour_pool")
    ask(7, question_prefix(continuous, 2))
    st.markdown("The same ideas run real servers (vLLM, TGI, TensorRT-LLM): paged blocks, continuous "
                "batching, chunked prefill, prefix caching, speculative decoding and FlashAttention. The "
                "Serving page runs each of them on your scenario.")
    st.page_link("pages/serving.py", label="Open the Serving page", icon=":material/dns:")


STEPS = [
    ("The prompt, its values and four heads", step_prompt),
    ("Prefill and the causal mask", step_mask),
    ("Scores, weights and contexts", step_contexts),
    ("When nothing matches", step_nothing),
    ("From the context to the next word", step_logits),
    ("Decode without a cache", step_no_cache),
    ("Decode with the KV cache", step_cache),
    ("The cache bug in the article", step_bug),
    ("From one cache to a server", step_server),
]

header("Guided tour", "The article's example, step by step. Commit to an answer before you reveal it. "
                      "The tour always uses the seed scenario; the other pages use yours.")
index = stepper(STEP, len(STEPS), "Step", format_label=lambda i: f"{i}. {STEPS[i - 1][0]}") - 1
title, render = STEPS[index]
st.subheader(f"{index + 1}. {title}")
render()
st.caption(f"Step {index + 1} of {len(STEPS)} · ← and → move through the tour.")
