"""Tier 1: the Serving page's narration and comparisons state the engine's own numbers."""

from __future__ import annotations

import re
from dataclasses import replace

from viz import load_preset
from viz.core.serving.flash import flash_attention
from viz.core.engine.presets import sequence
from viz.core.serving.scheduler import serve
from viz.core.serving.explain import (compare_policies, narrate_chunking, narrate_iteration, narrate_prefix,
                                      narrate_round, narrate_visit)
from viz.core.serving.speculative import DraftSpec, speculate
from viz.core.serving.workload import ServingConfig, workload_preset
from serving_fixtures import one_thread  # noqa: F401  (autouse: one torch thread)

SCENARIO = load_preset("cache-safe")


def test_every_iteration_is_narrated_with_its_ticks_blocks_and_requests():
    """Each line names the iteration, its ticks and cost, every request that computed, and the blocks in use."""
    workload = workload_preset(SCENARIO, "a steady trickle")
    run = serve(SCENARIO, workload, ServingConfig(num_blocks=32))
    for it in run.iterations:
        text = narrate_iteration(run, it.index)
        assert text.startswith(f"Iteration {it.index + 1}, ticks {it.start}–{it.end} "
                               f"({run.config.overhead} ticks of fixed cost + {it.tokens} tokens)")
        for request, state in zip(workload.requests, it.states):
            if state.fed:
                assert request.name in text
        assert f"{it.reserved_slots // 4} of 32 blocks in use" in text


def test_waiting_requests_are_grouped_by_their_reason():
    """In a prefill-only iteration the running requests are said to pause; waiting ones say why."""
    run = serve(SCENARIO, workload_preset(SCENARIO, "a burst"), ServingConfig(num_blocks=32))
    first = narrate_iteration(run, 0)
    assert "R5 and R6: every batch slot is taken" in first
    paused = [narrate_iteration(run, it.index) for it in run.iterations
              if any(s.reason == "paused while new prompts are prefilled" for s in it.states)]
    assert paused and all("paused while new prompts are prefilled" in t for t in paused)


def test_comparisons_quote_the_runs():
    """The policy comparison, the chunking trade and the prefix saving quote the runs' own numbers."""
    workload = workload_preset(SCENARIO, "one long prompt, four short")
    continuous = serve(SCENARIO, workload, ServingConfig(num_blocks=32))
    static = serve(SCENARIO, workload, ServingConfig(num_blocks=32, policy="static"))
    comparison = compare_policies(continuous, static)
    assert comparison.makespan == (continuous.makespan, static.makespan)
    assert f"in {continuous.makespan} ticks" in comparison.text and f"{static.padding} padding rows" in comparison.text
    chunked = serve(SCENARIO, workload, ServingConfig(num_blocks=32, chunk_size=8))
    text = narrate_chunking(continuous, chunked, 3)
    assert f"after {chunked.outcomes[3].ttft} ticks instead of {continuous.outcomes[3].ttft}" in text
    shared = workload_preset(SCENARIO, "a shared system prompt")
    off = serve(SCENARIO, shared, ServingConfig(num_blocks=32))
    on = serve(SCENARIO, shared, ServingConfig(num_blocks=32, prefix_caching=True))
    text = narrate_prefix(off, on, 4)
    assert text.startswith(f"{on.prefix_hits} prompt tokens") and f"{4 * on.prefix_hits} fewer keys" in text
    assert "nothing to reuse" in narrate_prefix(continuous, continuous, 4)


def test_rounds_are_narrated_with_the_rule_that_decided_them():
    """Greedy rounds say which guess was the target's choice; sampled rounds give p, q and the draw."""
    greedy = speculate(load_preset("previous-token"), 16, 3, DraftSpec("fewer heads", heads=1))
    for rnd in greedy.rounds:
        text = narrate_round(rnd, True)
        if not rnd.guesses:  # the last word: a plain step
            assert "a plain decode step" in text
            continue
        assert f"from {rnd.cache_before} to {rnd.cache_verified}" in text
        if rnd.bonus:  # every guess kept: nothing to cut (it said "cut back to 15" after growing to 15)
            assert f"Nothing is cut: the cache keeps all {rnd.cache_after} entries" in text and "cut back" not in text
        else:
            assert f"cut back to {rnd.cache_after}, dropping " in text
    assert any(r.bonus for r in greedy.rounds) and any(r.guesses and not r.bonus for r in greedy.rounds)
    scenario = load_preset("cache-safe")
    sampled = replace(scenario, sampling=replace(scenario.sampling, strategy="sample", temperature=2.0, seed=3))
    run = speculate(sampled, 16, 3, DraftSpec("fewer heads", heads=2))
    rejected = [r for r in run.rounds if r.accepted < len(r.guesses)]
    assert rejected
    text = narrate_round(rejected[0], False)
    assert "rejected (p = " in text and "min(1, p/q)" in text
    # p and q are said before they are used (a first-year student meets them here first)
    assert text.index("p is the target's probability of a guess, q the draft's") < text.index("(p = ")


def test_a_round_that_keeps_every_guess_counts_them_in_words_and_names_the_passs_last_position():
    """'all 2 kept' read wrong to a teacher: one guess is 'the one guess', two are 'both', 'all N' only from
    3 on; and the bonus comes from the target pass's last position (it said 'the last row', where the
    rounds figure's rows are rounds)."""
    greedy = speculate(load_preset("previous-token"), 16, 3, DraftSpec("fewer heads", heads=1))
    bonus = next(r for r in greedy.rounds if r.guesses)
    said = {1: "the one guess kept", 2: "both kept", 3: "all 3 kept", 4: "all 4 kept"}
    for n, words in said.items():
        rnd = replace(bonus, guesses=("hot",) * n, p_guess=(1.0,) * n, q_guess=(1.0,) * n, draws=(-1.0,) * n,
                      accepted=n, bonus=True)
        text = narrate_round(rnd, True)
        assert f"; {words}, and the target pass's last position gives '{rnd.new_word}' for free" in text, text
        assert "last row" not in text and (n >= 3 or f"all {n} kept" not in text), text


def test_tiles_are_narrated_with_their_running_max_and_final_context():
    """A tile that raises the maximum gives the rescale factor; a row's last tile gives out / sum = context."""
    tokens, values = sequence(SCENARIO, 12)
    run = flash_attention(SCENARIO, 4, 2, tokens=tokens, values=values)
    texts = [narrate_visit(run, i, 1) for i in range(len(run.visits))]  # 'self': its match is on the diagonal
    assert any("so the old sum and output are multiplied by exp(" in t for t in texts)
    for visit, text in zip(run.visits, texts):
        if visit.last_for_rows:
            match = re.search(r"= ([-\d.]+), written once", text)
            assert match and abs(float(match.group(1)) - float(run.contexts[1, visit.rows[1] - 1])) < 1e-3


def test_a_chunked_prompts_first_chunk_is_a_chunk_not_a_recompute():
    """The first chunk of a long prompt starts from an empty cache, as a recompute does: it is
    narrated as so many tokens of the prompt now cached, never as computing them all again."""
    workload = workload_preset(SCENARIO, "one long prompt, four short")
    run = serve(SCENARIO, workload, ServingConfig(num_blocks=32, chunk_size=4))
    long = max(range(len(workload.requests)), key=lambda i: len(workload.requests[i].tokens))
    name, length = workload.requests[long].name, len(workload.requests[long].tokens)
    first = next(it for it in run.iterations if it.states[long].fed)
    assert first.states[long].fed == 4 < length
    text = narrate_iteration(run, first.index)
    assert f"{name} computes 4 tokens (4 of {length} now cached)" in text and "again" not in text
