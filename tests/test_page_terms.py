"""The picture first (issue 32): each lesson page opens with its one sentence from the core, and
the glossary's definitions of the terms its figures use sit under them in a folded "Terms", each
term once a page and not doubled; a control, a metric or a caption that names a term a first-year
student would not know (d_k, MHA, TTFT, ticks, …) defines it in its hover."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from viz.core.lessons.glossary import UNFAMILIAR, hover, lookup, terms_in
from viz.core.lessons.leads import PAGE_LEADS
from viz.ui.common import md_escape

PAGES = ("memory", "serving", "at_scale", "cost")  # Real model loads its models: its own tests cover it


@pytest.mark.parametrize("page", PAGES)
def test_a_page_opens_with_its_sentence_and_defines_its_figures_terms(page):
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["page"] = page
    at.run()
    assert not at.exception
    assert at.caption[0].value == PAGE_LEADS[page].sentence
    lines = [line for box in at.expander if box.label == "Terms" for m in box.markdown
             for line in m.value.split("  \n")]
    assert lines, f"{page}: no Terms under its figures"
    terms = [line.split("\\:")[0].replace("\\", "") for line in lines]  # md_escape undone
    assert len(terms) == len(set(terms)), f"{page}: a term defined twice: {terms}"
    assert all(line == md_escape(hover(term)) for line, term in zip(lines, terms))


HOVERED = ("slider", "select_slider", "selectbox", "number_input", "toggle", "button_group", "radio", "checkbox",
           "text_input", "button", "metric", "caption")
VIEWS = [(page, {}) for page in ("prefill", "decode", "memory", "serving", "at_scale", "cost", "tour")]
VIEWS += [("serving", {"serving_section": section}) for section in
          ("Chunked prefill", "Prefix caching", "Speculative decoding", "FlashAttention")]
VIEWS += [("memory", {"memory_tab": "Eviction and quantisation"})]


def _undefined(at) -> list[tuple[str, str, str]]:
    """(kind, unfamiliar term, label) for each control, metric or caption whose label or text names a
    term of glossary.UNFAMILIAR without that term's definition in its help."""
    missing = []
    for kind in HOVERED:
        for element in getattr(at, kind):
            text = str(getattr(element, "label", None) or getattr(element, "value", "")).replace("\\", "")
            help_ = str(getattr(element.proto, "help", "") or "").replace("\\", "")
            missing += [(kind, t.term, text[:80]) for t in terms_in(text)
                        if t.term in UNFAMILIAR and t.short not in help_]
    return missing


@pytest.mark.parametrize("page, opened", VIEWS, ids=[" ".join([page, *opened.values()]) for page, opened in VIEWS])
def test_every_unfamiliar_term_a_control_metric_or_caption_names_is_defined_in_its_hover(page, opened):
    """d_k, √d_k, MHA, GQA, TTFT, TPOT, ticks, the ridge point, FLOPs per byte (glossary.UNFAMILIAR):
    wherever a page's control label, metric or caption uses one (each Serving section and Memory tab
    opened too), its help holds the definition."""
    assert {"d_k", "√d_k", "MHA", "GQA", "TTFT", "TPOT", "tick", "ridge point", "FLOPs per byte"} <= UNFAMILIAR
    assert all(lookup(term) is not None and lookup(term).term == term for term in UNFAMILIAR)
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["page"] = page
    at.run()
    for key, value in opened.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    assert not _undefined(at), _undefined(at)


def test_the_lesson_screens_names_are_defined_where_they_are_read():
    """Decode's Fix (n → q.pos) says what n and q.pos are; the tour's pool says what cache-safe means; At
    scale's model line (MHA, GQA, …) defines its attention kind in its hover; Real model's head picker
    says what 'L0H1' is and its rules go by the toy's names; Decode's newest query and Prefill's query in
    focus (one orange outline) are one glossary term."""
    from viz.core.lessons import tour, words_decode
    from viz.core.lessons.glossary import defined
    from viz.core.real import words as real_words
    from viz.core.real.rules_match import TOY_RULES
    assert lookup("n").short in words_decode.FIX_HELP and lookup("q.pos").short in words_decode.FIX_HELP
    assert "q.pos" in words_decode.FIX_LABEL and {"cache-safe", "q.pos"} <= UNFAMILIAR
    assert lookup("cache-safe").short in defined(tour.POOL_INTRO) and "(none reads n)" in tour.POOL_INTRO
    assert "layer 0, head 1" in real_words.HEAD_PICK_HELP and "everything" not in {r.name for r in TOY_RULES}
    import torch
    from viz.figures import real
    grid = real.attention_grid(torch.rand(1, 2, 3, 3).softmax(-1), [0])  # subplots L0H0, L0H1: its title says so
    assert "L1H2: layer 1, head 2" in grid.layout.meta["title"]
    from viz.figures.meanings import FOCUS_NEWEST, FOCUS_POSITION  # the one orange outline's two names: one term
    assert all("query in focus" in {t.term for t in terms_in(words)} for words in (FOCUS_NEWEST, FOCUS_POSITION))
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["page"] = "at_scale"
    at.run()
    assert not at.exception
    line = next(m for m in at.markdown if " · " in m.value and "layers" in m.value and "query heads" in m.value)
    kind = next(t for t in terms_in(line.value) if t.term in {"MHA", "GQA", "MLA"})
    assert kind.short in str(line.proto.help).replace("\\", "")
