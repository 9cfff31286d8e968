"""Helpers for AppTest tests: find widgets by label and read the shared state."""

from __future__ import annotations

from viz.ui import state


def scenario(at):
    return at.session_state[state.SCENARIO]


def widget_key(at, name: str) -> str:
    """The current key of a sidebar editor (keys renew with the scenario version)."""
    return f"kv_w_{name}_{at.session_state[state.VERSION]}"


def edit_table(at, name: str, edited_rows=None, added_rows=(), deleted_rows=()):
    """Apply an edit to a sidebar data editor, as a person typing into its cells would."""
    at.session_state[widget_key(at, name)] = {"edited_rows": edited_rows or {},
                                              "added_rows": list(added_rows),
                                              "deleted_rows": list(deleted_rows)}
    return at.run()


def by_label(widgets, label: str):
    matches = [w for w in widgets if w.label == label]
    assert matches, f"no widget labelled {label!r}; have {[w.label for w in widgets]}"
    return matches[0]


def errors(at) -> list[str]:
    return [e.value for e in at.error]
