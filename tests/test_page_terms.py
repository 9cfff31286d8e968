"""The picture first (issue 32): each lesson page opens with its one sentence from the core, and
the glossary's definitions of the terms its figures use sit under them in a folded "Terms", each
term once a page and not doubled."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from viz.core.lessons.glossary import hover
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
