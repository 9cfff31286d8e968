"""Tier 1: the guided tour's view (viz.core.lessons.tour.tour_view) holds every run, question and
answer the page shows, checked against values worked out by hand on the seed scenario."""

from __future__ import annotations

from viz.core.lessons import tour


def test_the_tour_view_answers_every_question_from_the_seed():
    """Seed: Today 10, weather 20, is 1, so 5; heads even, last (k.pos == n), first, all; 4 heads.

    - prefill at 'so': even averages weather and so, (20 + 5) / 2 = 12.5; all averages the four,
      (10 + 20 + 1 + 5) / 4 = 9;
    - first decode step without a cache: 5 tokens × 4 heads = 20 keys, with it 1 × 4 = 4;
    - 'last' reads n, so it is the head that cannot be cached (index 1);
    - the epilogue: C sends the 4-token prompt; blocks of 2 and the last token always computed, so 2 hits
      and 4 − 2 = 2 tokens computed."""
    view = tour.tour_view()
    assert tuple(view.scenario.tokens) == ("Today", "weather", "is", "so")
    assert [float(v) for v in view.scenario.values] == [10.0, 20.0, 1.0, 5.0]
    assert [row.text.split(" → ")[-1] for row in view.last_position] == ["12.5", "5", "10", "9"]
    assert view.keys_answer == "Today weather is so nice → 20 keys encoded without a cache, 4 with it"
    assert view.last_head == 1 and view.kv is view.runs["kv"] and view.full is view.runs["recompute"]
    assert len(view.questions) == 8
    answers = [q.options[q.answer] for q in view.questions]
    assert answers == ["no", "12.5", "10", "nice", "4", "7", "2", "18"]
    assert view.continuous.outcomes[2].prefix_hits == 2
    assert (view.continuous.outcomes[2].ttft, view.static.outcomes[2].ttft) == (18, 56)
    assert view.shared_iteration == 2
    assert tour.tour_view() is view  # worked out once: every visitor's tour reads the same seed


def test_the_tour_words_build_the_verdict_and_the_score():
    """No vote: 'Answer:' (info); the right pick: 'Right:' (success); another: 'Not quite:' (error);
    5 of 8 right with 1 revealed without a vote and 2 not revealed says both counts."""
    assert tour.verdict("12.5", None, "Why.") == ("info", "Answer: **12.5**. Why.")
    assert tour.verdict("12.5", "12.5", "Why.") == ("success", "Right: **12.5**. Why.")
    assert tour.verdict("12.5", "9", "Why.") == ("error", "Not quite: you chose 9, it is **12.5**. Why.")
    # on the projector the pick was the class's (the options say "the class's pick"): so is the verdict
    assert tour.verdict("12.5", "9", "Why.", class_pick=True) == (
        "error", "Not quite: the class chose 9, it is **12.5**. Why.")
    assert tour.score_line(tour.Score(5, 8, 1, 2)) == (
        "**Your score: 5 of 8** right (1 revealed without a vote, 2 not revealed yet).")
    assert tour.score_line(tour.Score(8, 8, 0, 0)) == "**Your score: 8 of 8** right."
    # on the projector the answers recorded are the class's picks: the score is the class's
    assert tour.score_line(tour.Score(8, 8, 0, 0), class_pick=True) == "**The class's score: 8 of 8** right."
    assert len(tour.STEP_TITLES) == 10 and tour.tour_footer(9, len(tour.STEP_TITLES)).startswith("Optional")
    assert tour.ask_line("Q?", presenter=True) == "#### Vote first: Q?"
    assert tour.ask_line("Q?", presenter=True, revealed=True) == "**Vote:** Q?"  # body size: the answer fits
    assert tour.ask_line("Q?", presenter=False) == tour.ask_line("Q?", presenter=False, revealed=True) == \
        "**Predict first:** Q?"


def test_the_footer_says_an_epilogue_follows_and_names_every_key():
    """Step 3 of the 8 main steps says an epilogue follows (the slider runs on into it); every footer
    names the → button first (a phone has no keys) and every lesson key (a clicker's PageDown and Space too)."""
    steps = len(tour.STEP_TITLES)
    keys = "the → button above (or the keys →, PageDown, Space) goes on, ← (or PageUp) goes back."
    assert tour.tour_footer(2, steps) == f"Step 3 of 8 (then an optional epilogue) · {keys}"
    assert tour.tour_footer(8, steps) == f"Optional epilogue · {keys}"


def test_the_footer_offers_no_way_that_is_off():
    """A teacher read the last step's footer aloud: "→ goes on", with → off. The first step offers only
    → and the last only ←; a one-step tour offers neither."""
    steps = len(tour.STEP_TITLES)
    assert tour.tour_footer(0, steps) == ("Step 1 of 8 (then an optional epilogue) · the → button above (or the "
                                          "keys →, PageDown, Space) goes on.")
    assert tour.tour_footer(steps - 1, steps) == "Optional epilogue · ← (or PageUp) goes back."
    assert tour.tour_footer(0, 1) == "Optional epilogue."


def test_the_epilogues_timeline_titles_fit_a_phone():
    """Plotly titles do not wrap: the batching step's two titles fit one line of a phone's figure (the
    static one, 61 characters, ran past it)."""
    from viz.figures.base import PHONE_PX, title_chars

    for title in (tour.STATIC_TITLE, tour.CONTINUOUS_TITLE):
        assert len(title) <= title_chars(PHONE_PX)[1], title


def test_the_batching_figure_stacks_the_two_timelines_on_one_time_axis():
    """The epilogue's figure draws static batching's timeline over continuous batching's, each as its own
    timeline draws it, on one time axis (numbered at the foot), with one legend entry per meaning."""
    from viz.figures.serving import timeline_figure, timelines_figure

    view = tour.tour_view()
    fig = timelines_figure([(tour.STATIC_TITLE, view.static), (tour.CONTINUOUS_TITLE, view.continuous)],
                           tour.BATCHING_TITLE)
    assert [note.text for note in fig.layout.annotations] == [tour.STATIC_TITLE, tour.CONTINUOUS_TITLE]
    assert fig.layout.yaxis.domain[0] > fig.layout.yaxis2.domain[1]  # static above
    for run, axis in ((view.static, "x"), (view.continuous, "x2")):
        alone = [(t.name, t.x, t.y) for t in timeline_figure(run).data]
        assert [(t.name, t.x, t.y) for t in fig.data if t.xaxis == axis] == alone
    assert fig.layout.xaxis2.matches == "x" and fig.layout.xaxis.showticklabels is False
    listed = [t.name for t in fig.data if t.showlegend]
    assert sorted(listed) == sorted({t.name for t in fig.data})


def test_the_epilogues_waiting_bars_start_at_the_arrival_the_answer_counts_from():
    """In both timelines of step 10, every request's bars run from its arrival mark past its last token
    with no gap, so the late request's hatched waiting bar starts at its triangle (it arrives mid-
    iteration: the bar started at the next iteration, 6 ticks later, and the gap between them read as
    nothing at all); and the question's ticks are the figure's, from the triangle to the first token."""
    from viz.figures.serving import timelines_figure

    view = tour.tour_view()
    runs = ((tour.STATIC_TITLE, view.static), (tour.CONTINUOUS_TITLE, view.continuous))
    fig = timelines_figure(list(runs), tour.BATCHING_TITLE)
    question = view.questions[-1]
    late = view.continuous.workload.requests[-1].name
    ticks = {}
    for (_, run), axis in zip(runs, ("x", "x2")):
        traces = [t for t in fig.data if t.xaxis == axis]
        arrives = next(t for t in traces if t.name == "arrives")
        marks = next(t for t in traces if t.name == "a token is ready")
        for name, arrival in zip(arrives.y, arrives.x):
            bars = sorted((b, b + w) for t in traces if t.type == "bar"
                          for b, w, y in zip(t.base, t.x, t.y) if y == name)
            assert bars[0][0] == arrival, (run.config.policy, name, bars[0], arrival)
            assert all(a[1] == b[0] for a, b in zip(bars, bars[1:])), (run.config.policy, name, bars)
            assert bars[-1][1] >= max(x for x, y in zip(marks.x, marks.y) if y == name)  # static: idle after
        waiting = next(t for t in traces if t.name.startswith("waiting"))
        first_wait = min(b for b, y in zip(waiting.base, waiting.y) if y == late)
        arrival = next(x for x, y in zip(arrives.x, arrives.y) if y == late)
        assert first_wait == arrival
        ticks[run.config.policy] = min(x for x, y in zip(marks.x, marks.y) if y == late) - arrival
    assert f"first token comes {ticks['static']} ticks after it arrives" in question.prompt
    assert question.options[question.answer] == str(ticks["continuous"])


def test_every_tour_heatmap_says_what_its_colours_mean():
    """Each heatmap the tour draws says what its shades mean: numbers in its cells, or a colour bar in
    its figure; and grey cells with no word in them have a 'masked' legend entry (step 3's weights had
    neither: shades of blue and grey, unexplained)."""
    from viz.figures import serving, toy
    from viz.figures.base import masked_unsaid
    from viz.figures.meanings import MEANINGS

    view = tour.tour_view()
    matrices = [toy.causal_mask_figure(view.prefill), toy.small_multiples(view.prefill),
                toy.contexts_figure(view.prefill), toy.stage_figure(view.prefill, 0, "weights", 0),
                toy.cache_figure(view.cache_run)]
    pool = serving.pool_figure(view.continuous, view.shared_iteration)  # empty cells: free blocks, in its legend
    for fig in [*matrices, pool]:
        heatmaps = [t for t in fig.data if t.type == "heatmap"]
        scaled = any(t.showscale for t in heatmaps)
        legend = {t.name for t in fig.data if t.showlegend is not False and t.name}
        for trace in heatmaps:
            assert trace.texttemplate or scaled, fig.layout.title.text
            if fig is not pool and masked_unsaid(trace):
                assert MEANINGS["masked"].label in legend, fig.layout.title.text
