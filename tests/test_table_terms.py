"""Tier 2: an unfamiliar term a small table names (TTFT, √d_k, FLOPs per byte, …: glossary.UNFAMILIAR) is
defined on the same screen: a table has no hover, so a caption's or a metric's hover or the page's
"Terms" fold holds its definition (issue 32's review: Serving's requests table said TTFT, TPOT and ticks,
At scale's roofline steps FLOPs per byte and the ridge point, with nothing to hover over)."""

from __future__ import annotations

import pytest
from apptest_helpers import plain_tables
from streamlit.testing.v1 import AppTest

from viz.core.lessons.glossary import UNFAMILIAR, terms_in

VIEWS = [("serving", {"serving_section": section}) for section in
         ("Continuous batching", "Chunked prefill", "Prefix caching", "Speculative decoding", "FlashAttention")]
VIEWS += [("at_scale", {}), ("memory", {}), ("memory", {"memory_tab": "Eviction and quantisation"})]


def _definitions(at) -> str:
    """Every hover and every line of the "Terms" folds the page shows."""
    helps = [str(getattr(e.proto, "help", "") or "") for kind in ("caption", "metric", "markdown")
             for e in getattr(at, kind)]
    folds = [m.value for box in at.expander if box.label == "Terms" for m in box.markdown]
    return " ".join(helps + folds).replace("\\", "")


@pytest.mark.parametrize("page, opened", VIEWS, ids=[" ".join([page, *opened.values()]) for page, opened in VIEWS])
def test_every_unfamiliar_term_of_a_table_is_defined_on_its_page(page, opened):
    at = AppTest.from_file("../app.py", default_timeout=180)
    at.query_params["page"] = page
    for key, value in opened.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    defined = _definitions(at)
    missing = {(table["label"][:40], term.term) for table in plain_tables(at)
               for term in terms_in(" ".join(table["columns"] + [cell for row in table["rows"] for cell in row]))
               if term.term in UNFAMILIAR and term.short not in defined}
    assert not missing, missing
