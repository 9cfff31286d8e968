"""What each page teaches, in one sentence: the first line under a page's title, above its lesson
figure (issue 32: the picture first). Also the one line that says how presenter mode's folded
sidebar opens again, and the name of the fold that holds developer material.

Data only (no torch): :data:`PAGE_LEADS` maps a page's url path to its :class:`PageLead`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageLead:
    """A page's title and the one sentence it opens with (what the lesson figure below shows)."""

    title: str
    sentence: str


PAGE_LEADS: dict[str, PageLead] = {
    "memory": PageLead(
        "Memory", "A paged cache hands out blocks as tokens arrive and stores a shared prompt once: more "
                  "sequences fit."),
    "at_scale": PageLead(
        "At scale", "At a real model's size the KV cache, not the weights, decides how many requests fit "
                    "on a GPU."),
    "serving": PageLead(
        "Serving", "A server decodes many requests together, one iteration at a time; requests join and "
                   "leave between them."),
    "real_model": PageLead(
        "Real model", "A real transformer keeps the toy's cache: the same words as recomputing, at the "
                      "formula's size."),
    "cost": PageLead(
        "Cost", "Without a cache each new token recomputes the whole prefix; with one, it computes one "
                "new row."),
}

# Presenter mode folds the sidebar; this says how to open it again (at the right of the page's one
# sentence, on the same line at 1280 px: short). The sidebar's switch ends presenter mode.
# true whether the sidebar is folded or not: Streamlit keeps a sidebar the visitor opened by hand open,
# in presenter mode too (its browser remembers the choice), so the hint says how to fold it as well
PRESENTER_HINT = "Sidebar: » opens, « folds"

DEVELOPERS = "For developers"  # the fold that holds commands, folders and allocator notes
