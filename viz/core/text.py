"""Short, safe texts from errors and visitor input, for one-line messages."""

from __future__ import annotations


def first_line(err: BaseException) -> str:
    """An error's message in one line (torch's can run to many), or its type if it has none."""
    return (str(err).splitlines() or [type(err).__name__])[0]


def clip(text: object, limit: int = 60) -> str:
    """At most ``limit`` characters, an ellipsis marking a cut."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."
