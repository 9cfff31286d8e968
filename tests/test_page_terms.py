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
