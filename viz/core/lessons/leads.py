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
        "Memory",
        "A paged cache hands out small blocks as tokens arrive and stores a shared prompt once, so the "
        "same memory holds more sequences than reserving room for the longest answer."),
    "at_scale": PageLead(
        "At scale",
        "The KV cache grows with every token, layer and request: at a real model's size it, not the "
        "weights, decides how many requests fit in a GPU's memory."),
    "serving": PageLead(
        "Serving",
        "A server decodes many requests together, one scheduler iteration at a time: requests join "
        "and leave between iterations, and their caches share the GPU's memory."),
    "real_model": PageLead(
        "Real model",
        "A real transformer keeps the same cache as the toy: decoding with it gives the same words "
        "as recomputing every step, and its size follows the formula."),
    "cost": PageLead(
        "Cost",
        "Without a cache every new token recomputes the whole prefix; with it, each step reads the "
        "stored keys and values and computes one new row."),
}

# Presenter mode folds the sidebar; this says how to open it again (and leave presenter mode).
PRESENTER_HINT = ("Presenter mode: the sidebar is folded away. Open it again with the » button at the "
                  "top left; its Presenter mode switch ends presenter mode.")

DEVELOPERS = "For developers"  # the fold that holds commands, folders and allocator notes
