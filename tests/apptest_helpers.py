"""Helpers for AppTest tests: find widgets by label and read the shared state."""

from __future__ import annotations

from pathlib import Path

from viz.ui import sidebar, state

# Every page script, as AppTest's switch_page names them (Prefill first: old links open there).
ALL_PAGES = sorted((f"pages/{p.name}" for p in (Path(__file__).resolve().parents[1] / "pages").glob("*.py")),
                   key=lambda page: (page != "pages/prefill.py", page))


def scenario(at):
    return at.session_state[state.SCENARIO]


def widget_key(at, name: str) -> str:
    """The current key of a sidebar editor (keys renew with the scenario version)."""
    return f"kv_w_{name}_{at.session_state[state.VERSION]}"


def open_panels(at):
    """Open every sidebar editor panel (their widgets exist only while open), as clicking them would."""
    for key, *_ in sidebar.PANELS:
        at.session_state[key] = True
    return at


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


def figures(at) -> list[dict]:
    """Every plotly figure on the page, as the JSON spec sent to the browser."""
    import json
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def figure(at, title_part: str) -> dict:
    for spec in figures(at):
        if title_part in spec["layout"].get("title", {}).get("text", ""):
            return spec
    raise AssertionError(f"no figure titled {title_part!r}")


def sent_data(element) -> dict:
    """What one of kvlab's components was sent (the payload, the one item of its data list)."""
    import json
    return json.loads(element.proto.json)[0]


def boards(at) -> list[dict]:
    """Every lesson board on the page (viz.ui.components), as the spec sent to the browser."""
    return [sent_data(el) for el in at.get("bidi_component") if el.proto.component_name == "kvlab_board"]


def board(at, title_part: str) -> dict:
    for spec in boards(at):
        if title_part in spec["title"]:
            return spec
    raise AssertionError(f"no board titled {title_part!r}; have {[b['title'] for b in boards(at)]}")


def cells(spec: dict, group: int = 0) -> list[list[str]]:
    """A matrix board's cell texts, row by row (one group of rows: the matrix, or the keys of a cache)."""
    return [[cell["text"] for cell in row["cells"]] for row in spec["groups"][group]["rows"]]


def _plain_specs(at) -> list[dict]:
    """Every plain table and stats row on the page (one component draws both), as sent to the browser."""
    return [sent_data(el) for el in at.get("bidi_component") if el.proto.component_name == "kvlab_table"]


def plain_tables(at) -> list[dict]:
    """Every plain table on the page (viz.ui.components.table), as the spec sent to the browser."""
    return [spec for spec in _plain_specs(at) if spec.get("layout") != "stats"]


def stats_rows(at) -> list[dict]:
    """Every stats row on the page (viz.ui.components.stats), as the spec sent to the browser."""
    return [spec for spec in _plain_specs(at) if spec.get("layout") == "stats"]


def stat_labels(at) -> list[str]:
    """The label of every figure in the page's stats rows, in order."""
    return [item["label"] for row in stats_rows(at) for item in row["stats"]]


def stat(at, label: str) -> dict:
    """The stat labelled ``label`` in a stats row: {"label", "value", "delta", "help"} as sent."""
    for row in stats_rows(at):
        for item in row["stats"]:
            if item["label"] == label:
                return item
    raise AssertionError(f"no stat labelled {label!r}; have {stat_labels(at)}")


def stat_value(at, label: str) -> str:
    """The value a stats row shows under ``label``, as text."""
    return stat(at, label)["value"]


def plain_table(at, column: str) -> dict[str, list[str]]:
    """The plain table that has ``column``, as {column: its cells' text}."""
    for spec in plain_tables(at):
        if column in spec["columns"]:
            return {name: [row[i] for row in spec["rows"]] for i, name in enumerate(spec["columns"])}
    raise AssertionError(f"no plain table with a column {column!r}")


def array(value):
    """A trace field as nested lists: plotly sends numpy arrays as typed base64 ('bdata')."""
    import base64

    import numpy as np
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = tuple(int(n) for n in str(value.get("shape", len(data))).split(","))
        return data.reshape(shape).tolist()
    return value


def shown(markdown: str) -> str:
    """What a visitor reads in a Markdown body: backslash escapes (viz.ui.common.md_escape) removed."""
    import re
    return re.sub(r"\\(.)", r"\1", markdown)


def rerun(at):
    """Run again and check nothing raised."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def on_page(app, page: str):
    """The app, switched to ``page`` (a script under pages/), checked that nothing raised."""
    return rerun(app.switch_page(page))



def component(at, key: str):
    """The custom component (viz.ui.components) drawn under ``key``."""
    found = [e for e in at.get("bidi_component") if e.proto.id.endswith(f"-{key}")]
    assert found, f"no component with key {key!r}"
    return found[0]


def component_data(at, key: str) -> dict:
    """The data a custom component was sent in the last run."""
    return sent_data(component(at, key))


def fire(at, key: str, event: str, value):
    """Send a custom component's trigger as the browser does (``setTriggerValue(event, value)``),
    with every other widget as it stands, and run. AppTest cannot drive a custom component, so this
    uses its private ``_tree`` and ``_run`` and Streamlit's trigger id (streamlit 1.67): the one
    place the tests lean on Streamlit's internals, to be checked when Streamlit is upgraded."""
    import json
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    states = at._tree.get_widget_states()
    states.widgets.add(id=_make_trigger_id(component(at, key).proto.id, "events"),
                       json_trigger_value=json.dumps([{"event": event, "value": value}]))
    at._run(states)
    return at


def range_data(at, key: str) -> dict:
    """The data a range (viz.ui.components.slider) was drawn with: label, labels, min, max, value, help."""
    assert component(at, key).proto.component_name == "kvlab_range", key
    return component_data(at, key)


def move_range(at, key: str, value):
    """Move a range to ``value`` as a visitor does (a release or a key sends the value as a trigger),
    and check nothing raised."""
    seen = at.session_state[f"{key}__seen"] if f"{key}__seen" in at.session_state else 0
    fire(at, key, "moved", {"to": value, "seq": seen + 1})
    assert not at.exception, [e.value for e in at.exception]
    return at


def send_prompt(at, text: str):
    """Type ``text`` into the sidebar's prompt box and press Enter."""
    return fire(at, widget_key(at, "prompt"), "submitted", text)


def prompt_shown(at) -> str:
    """The text the sidebar's prompt box shows."""
    return component_data(at, widget_key(at, "prompt"))["value"]


def has_prompt_box(at) -> bool:
    """Whether the sidebar drew its prompt box in the last run."""
    return any(e.proto.id.endswith(f"-{widget_key(at, 'prompt')}") for e in at.get("bidi_component"))


def choice_data(at, key: str) -> dict:
    """The data a choice or switch (viz.ui.components) was drawn with: label, options, value, help, presenter."""
    assert component(at, key).proto.component_name == "kvlab_choice", key
    return component_data(at, key)


def _next_seq(at, key: str) -> int:
    seen = f"{key}__seen"
    return (at.session_state[seen] if seen in at.session_state else 0) + 1


def pick(at, key: str, index: int):
    """Click option ``index`` of a choice, as a visitor does, and check nothing raised."""
    fire(at, key, "picked", {"index": index, "seq": _next_seq(at, key)})
    assert not at.exception, [e.value for e in at.exception]
    return at


def flip(at, key: str, on: bool):
    """Switch a switch to ``on``, as a visitor's click does, and check nothing raised."""
    fire(at, key, "flipped", {"on": on, "seq": _next_seq(at, key)})
    assert not at.exception, [e.value for e in at.exception]
    return at
