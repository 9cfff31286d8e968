"""The words of the charts that count the engine's work per decode step (Decode's work chart, the tour's
beside its cache figure): what each panel sums, and the note on a way of running whose line lies exactly
on another's."""

from __future__ import annotations


def work_panels(heads: int) -> tuple[str, str]:
    """The two panels' titles: the engine counts scores and keys for every head and sums them (5 tokens
    and 4 heads: 20 keys), so the titles say so, with the scenario's number of heads."""
    summed = f"all {heads} heads" if heads != 1 else "its one head"
    return f"Query-key scores ({summed})", f"Keys encoded ({summed})"


def same_as(other: str) -> str:
    """The hover note on a series whose every point is another's (the line drawn under it)."""
    return f"same as {other}: its line lies under this one"
