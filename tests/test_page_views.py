"""Tier 1: Home, Prefill, Cost and At scale each get every number and sentence they show from one core
view (their prose from one words module per lesson), checked here against values worked out by hand."""

from __future__ import annotations

import re

from viz import generate, load_preset


def marked(text: str) -> str:
    """A stand-in for the page's escaping function: visitor text comes back in ‹…›, so a test sees it passed."""
    return f"‹{text}›"


def test_the_home_view_holds_its_text_and_the_article_link():
    """Home's title, introduction (with the article's link in it), three cards and closing line."""
    from viz.core.lessons.home import home_view

    view = home_view("[the article](https://example.org)")
    assert view.title == "kvlab: from prompt to prediction"
    assert "It follows the worked example of the article [the article](https://example.org): the same" in view.intro
    assert view.intro.count("\n\n") == 1  # two paragraphs, one element
    assert [card.splitlines()[0] for card in (view.tour, view.present, view.explore)] == [
        "### Take the tour", "### Present in class", "### Explore"]
    assert view.pages.startswith("The pages, in lesson order: the guided tour;")


def test_the_at_scale_view_holds_its_sentences_and_stats():
    """Llama-2-7B, fp16, 4,096 tokens, a batch of 100 on one H100: 32 layers × K and V × 4,096 numbers × 2 B =
    512 KiB a token, × 4,096 = 2 GiB a sequence, 200 GiB a batch; 29 sequences fit (the page test's figure),
    so the batch is refused with a warning; the roofline's points are decode at 100 and 1, then prefill."""
    from viz.core.scale.gpus import GPU_BY_NAME
    from viz.core.scale.model_config import preset
    from viz.core.scale.view import ScaleInputs, scale_view
    from viz.core.scale import words

    llama, h100 = preset("Llama-2-7B"), GPU_BY_NAME["H100 SXM"]
    toy = generate(load_preset("seed"), 1, "kv").cache
    view = scale_view(ScaleInputs(llama, 4096, "fp16/bf16", 100, h100, 1, "fp16/bf16", 0.92, 1.0), toy)
    cache = {s.label: (s.value, s.help) for s in view.cache_stats}
    assert cache["Per token"][0] == "512 KiB" and cache["Per sequence"] == ("2 GiB", "4,096 tokens of context.")
    assert cache["Per batch"] == ("200 GiB", "100 sequences.") and "Fixed state" not in cache
    fit = {s.label: s.value for s in view.fit_stats}
    assert fit["Sequences that fit"] == 29 and list(fit)[0] == "Weights"  # one GPU: not "per GPU"
    assert view.fit_alert == ("warning", "A batch of 100 does not fit: at most 29 sequences of 4,096 tokens.")
    assert view.parallel_text == "" and view.every_gpu == "**Every GPU** (1 × each, weights in fp16/bf16)"
    assert view.checks[0] == ("- Llama-2-7B, fp16, 4,096 tokens: **2 GiB** (2,147,483,648 bytes) — published: "
                              "2 GiB per sequence (the articles' 'several gigabytes')")
    assert [label for label, _ in view.points(2048)] == ["decode, batch 100", "decode, batch 1", "prefill, 2,048 tokens"]
    assert view.points(2048)[0][1] == view.decode and view.points(2048)[2][1] == view.prefill(2048)
    roof = {s.label: s for s in view.roof_stats}
    assert roof["FLOPs per step"].value == "1.54 TFLOP" and roof["Time per token"].value == "68 ms"
    assert roof["Time per token"].delta == f"{view.decode.bound}-bound" and roof["Time per token"].good is None
    assert view.beyond_context_text(marked).startswith("4,096 tokens is longer than the 4,096 tokens ‹Llama-2-7B›")
    assert "Sources: ‹" in view.gpu_caption(marked) and "Sources: ‹" in view.roof_sources(marked)
    assert not re.search(r"#\d|docs/|Sources", words.ROOF_INTRO)  # the lesson's sentence cites nothing (a caption does)
    assert view.model_summary == "MHA · 32 layers · 32 query heads · 32 K/V heads × 128 dims · 6.74 B parameters"
    assert "Source: ‹" in view.source_caption(marked) and view.model_line(marked) == f"**‹Llama-2-7B›** · {view.model_summary}"
    assert view.formula == "bytes = 2 · 32 layers · 32 K/V heads · 128 dims · 4,096 tokens · 100 sequences · 2 bytes"
    assert view.toy_sentence.endswith("One token of Llama-2-7B takes 512 KiB: 128 times as much.")
    reading = view.roof_reading(2048)  # the decode step at 100, a 2,048-token prefill, what fits first
    assert reading[0].startswith("**Decode reads everything once per step.** A step over a batch of 100 reads 12.3 GiB "
                                 "of weights and 200 GiB of KV cache")
    assert reading[1].startswith("**Prefill reuses every weight for every prompt token.** Reading a 2,048-token prompt")
    assert "outweighs the weights from a batch of 7" in reading[2]
    assert reading[-1].startswith("**Memory comes first.**") and "only 29 sequences of 4,096 tokens fit" in reading[-1]


def test_the_at_scale_opening_figures_each_say_something_different():
    """The cache tab's opening figures never repeat a number (issue 32: at batch 1 'Per sequence',
    'Per batch' and 'With plain MHA' all read 2 GiB for Llama-2-7B): for every preset, at batch 1 and
    8, in two cache dtypes, every value differs; the default shows the cache per token and per sequence,
    the weights and the sequences that fit on the GPU; a batch adds its figure, a GQA model a note
    with plain MHA's (Llama-2-70B's 8 × less at batch 8 read 10 GiB twice as two figures)."""
    from viz.core.scale.gpus import GPU_BY_NAME
    from viz.core.scale.model_config import preset, preset_names
    from viz.core.scale.view import ScaleInputs, scale_view

    h100 = GPU_BY_NAME["H100 SXM"]
    toy = generate(load_preset("seed"), 1, "kv").cache
    for name in preset_names():
        config = preset(name)
        for batch in (1, 8):
            for dtype in ("fp16/bf16", "int8"):
                view = scale_view(ScaleInputs(config, config.max_context, dtype, batch, h100, 1,
                                              config.weights_dtype, 0.92, 1.0), toy)
                values = [str(s.value) for s in view.cache_stats]
                assert len(set(values)) == len(values), (name, batch, dtype, view.cache_stats)
                labels = [s.label for s in view.cache_stats]
                assert ("Per batch" in labels) == (batch > 1) and labels[-2:] == ["Weights", "Sequences that fit"]
    llama = preset("Llama-2-7B")
    default = scale_view(ScaleInputs(llama, 4096, "fp16/bf16", 1, h100, 1, "fp16/bf16", 0.92, 1.0), toy)
    assert [(s.label, str(s.value)) for s in default.cache_stats] == [
        ("Per token", "512 KiB"), ("Per sequence", "2 GiB"), ("Weights", "12.6 GiB"), ("Sequences that fit", "29")]
    assert "H100 SXM" in default.cache_stats[-1].help
    gqa = scale_view(ScaleInputs(preset("Llama-3-8B"), 8192, "fp16/bf16", 1, h100, 1, "fp16/bf16", 0.92, 1.0), toy)
    assert gqa.cache_stats[1].delta == "4 GiB with plain MHA" and default.cache_stats[1].delta is None  # 32 heads, not 8


def test_the_at_scale_view_says_when_the_weights_do_not_fit_and_how_two_gpus_split_the_cache():
    """fp32 weights of Llama-2-7B (6.7 B parameters × 4 B = 27 GB) with a 70 GiB reserve leave nothing on an
    H100: an error; two GPUs split the cache by its KV heads and say how many sequences fit."""
    from viz.core.scale.gpus import GPU_BY_NAME
    from viz.core.scale.model_config import preset
    from viz.core.scale.view import ScaleInputs, scale_view

    llama, h100 = preset("Llama-2-7B"), GPU_BY_NAME["H100 SXM"]
    toy = generate(load_preset("seed"), 1, "kv").cache
    full = scale_view(ScaleInputs(llama, 4096, "fp16/bf16", 1, h100, 1, "fp32", 0.92, 70.0), toy)
    assert full.fit_alert is not None and full.fit_alert[0] == "error"
    assert full.fit_alert[1].startswith("The weights (") and "add GPUs or store the weights in fewer bits." in full.fit_alert[1]
    two = scale_view(ScaleInputs(llama, 4096, "fp16/bf16", 1, h100, 2, "fp16/bf16", 0.92, 1.0), toy)
    assert two.parallel_text.startswith("Under tensor parallelism ")
    assert f"{two.fit.sequences:,} sequences fit" in two.parallel_text
    assert [s.label for s in two.fit_stats][:2] == ["Weights per GPU", "Cache budget per GPU"]


def test_the_prefill_view_holds_the_narration_the_frames_and_every_tabs_sentences():
    """The seed (Today 10, weather 20, is 1, so 5; heads even, last, first, all) at position 2, head even:
    weather sees Today and weather, even matches key 2 → 20; the last position's contexts are even
    (20 + 5) / 2 = 12.5, last 5, first 10, all (10 + 20 + 1 + 5) / 4 = 9; greedy picks 'nice' at 0.750."""
    from viz.core.lessons.lesson import prefill_frame
    from viz.core.lessons.prefill import prefill_view

    trace = generate(load_preset("seed"), 1, "kv")
    view = prefill_view(trace, 2, 0, False, marked)
    assert view.narration == "**‹weather›** (position 2) sees ‹Today, weather›. ‹even: weather (value 20) → 20›"
    assert view.every_head.startswith("**‹weather›** (position 2) sees ‹Today, weather›:\n\n- ‹even: weather")
    assert view.every_head.count("\n- ") == 4  # one line per head
    assert view.head_rule == "Head **‹even›**, rule ‹k.pos % 2 == 0› · keys can be cached" and not view.qk_by_rule
    assert view.last_context == ("The context of the last position, ‹so›, is [12.5, 5, 10, 9]; multiplied by W_vocab "
                                 "it gives one logit per word.")
    assert view.sampled == ("Sampling: greedy, temperature 1, top-k off, top-p off → **‹nice›** (p = 0.750). "
                            "The Decode page appends it and goes on.")
    assert view.index == 1 and view.frame.caption == prefill_frame(trace, 2, 0).caption  # frames hold tensors
    assert view.ahead.caption.startswith("Query 'is' (position 3)") and view.behind.caption.startswith("Query 'Today'")
    assert [f.window for f in view.frames()] == [view.frame.window] * 4
    # nothing matches for even at Today, and for last before the end: 1 key gets 1, 2 keys 0.5, 3 keys 0.3333
    assert len(view.no_match) == 4 and view.no_match_more == ""
    assert view.no_match[2].endswith("so the 2 visible keys get 0.5 each → context 15")
    assert "(head ‹even› at '‹Today›'), but the computation spreads the weight evenly and gives 10." in view.no_match_why
    assert prefill_view(trace, 1, 0, False, marked).behind is None and prefill_view(trace, 4, 0, False, marked).ahead is None


def test_prefill_words_count_the_rows_not_listed_and_name_a_rule_that_reads_q():
    """Ten rows where nothing matches list eight and say two more; a rule reading q has no Q and K rows."""
    from viz.core.engine.explain import no_match_rows
    from viz.core.lessons import words_prefill as words
    from viz.core.lessons.prefill import prefill_view

    rows = no_match_rows(generate(load_preset("seed"), 1, "kv"))
    lines, more, _ = words.no_match((rows * 3)[:10], marked)
    assert len(lines) == 8 and more == "… and 2 more rows like these."
    self_rule = prefill_view(generate(load_preset("cache-safe"), 1, "kv"), 2, 1, False, marked)
    assert self_rule.qk_by_rule and self_rule.head_rule.startswith("Head **‹self›**, rule ‹k.pos == q.pos›")
    assert words.position_labels(("a", "b")) == {1: "1 · a", 2: "2 · b"}


def test_the_cost_view_says_what_was_measured_and_what_measure_times():
    """A made-up sweep on cpu, 2 threads, 1.5 s, prefill left out: measured at n = 10 and 40 both ways, so a
    summary (40 recompute steps of 0.03 s against kv's 0.001 s: 30×); the arrival's quick sweep says so."""
    from viz.core.engine.cost import Bandwidth, CostMeasurement, DecodePoint, LiveConfig, bench_scenario
    from viz.core.engine.model import WorkCounts
    from viz.core.lessons.cost import cost_view
    from viz.core.lessons import words_cost as words
    from viz.core.timing import Timing, TimingPlan

    def point(n: int, mode: str, seconds: float) -> DecodePoint:
        return DecodePoint(n, mode, Timing(seconds, seconds, seconds, 3), WorkCounts(multiply_adds=n * 65), n * 1040)

    decode = tuple(point(n, mode, s) for n in (10, 40) for mode, s in (("recompute", 0.00075 * n), ("kv", 0.001)))
    measurement = CostMeasurement("cpu", 2, decode, (), Bandwidth(10**9, Timing(0.1, 0.1, 0.1, 3)), 3.0, 1.5,
                                  ("prefill",))
    sweep = LiveConfig(decode_sizes=(16, 32, 64), recompute_max=32, prefill_sizes=(8, 16),
                       plan=TimingPlan(warmup=1, min_repeats=2, max_repeats=2, target_s=0.0),
                       copy_bytes=2**20, budget_s=2.5, decode_share=0.6)
    model = bench_scenario()
    view = cost_view(measurement, sweep, sweep, model, marked, device_type="cpu")
    assert view.summary is not None and view.summary.speedup_large.median == 30.0 and not view.cut_short
    assert view.measured == ("Measured on cpu (2 CPU threads) in 1.5 s. Left out to stay within 3 s: prefill. "
                             + words.RUNS)
    assert view.notice == "A quick first measurement (decode up to n = 64, about 2.5 s). Press **Measure** for the full sweep."
    assert view.how.startswith("Times one decode step at n = 16 … 64 keys (recompute up to 32) and a whole prompt "
                               f"of 8 … 16 tokens, with the {len(model.heads)} heads of the '‹{model.title}›' preset")
    assert view.decode_reading[0].startswith("**Where the cache wins.** At n = 40 the engine counts ")
    assert "Timed here, the step took 30× as long without the cache" in view.decode_reading[0]
    assert "kernel launch" not in " ".join(view.decode_reading) and view.prefill_reading == ()  # no prefill measured
    on_gpu = cost_view(measurement, sweep, sweep, model, marked, device_type="cuda")
    assert "kernel launch" in on_gpu.decode_reading[1]  # a GPU's fixed price: launches
    assert cost_view(measurement, None, sweep, model, marked, device_type="cpu").notice == ""  # measured by Measure: no note
    nothing = cost_view(None, None, sweep, model, marked, device_type="cpu")
    assert nothing.notice == words.PLAIN and nothing.decode_reading == nothing.prefill_reading == ()
    cut = cost_view(CostMeasurement("cpu", 1, decode[1:2], (), measurement.bandwidth, 3.0, 0.5, ()), None, sweep,
                    model, marked, device_type="cpu")
    assert cut.cut_short and cut.summary is None and cut.measured == ""  # kv alone at n = 10: nothing to compare
    assert cut.decode_reading == cut.prefill_reading == ()


def test_transformers_count_reads_against_the_formula():
    """transformers' figures beside the formula's never repeat its size when they differ from it (all four
    read '2 GiB' for Llama-2-7B, though the prefill's storage is one token short): equal byte for byte
    reads '= the formula', a size that reads differently stands as it is, else the gap is given."""
    from viz.core.scale.memory import GIB, KIB
    from viz.core.scale.words import SAME_AS_FORMULA, against_formula

    formula = 2 * GIB
    assert against_formula(formula, formula) == SAME_AS_FORMULA
    assert against_formula(formula - 512 * KIB, formula) == "formula − 512 KiB"
    assert against_formula(formula + 2 * KIB, formula) == "formula + 2 KiB"
    assert against_formula(formula // 2, formula) == "1 GiB"
