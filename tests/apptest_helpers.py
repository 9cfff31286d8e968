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


def boards(at) -> list[dict]:
    """Every lesson board on the page (viz.ui.components), as the spec sent to the browser."""
    import json
    return [json.loads(el.proto.json) for el in at.get("bidi_component") if el.proto.component_name == "kvlab_board"]


def board(at, title_part: str) -> dict:
    for spec in boards(at):
        if title_part in spec["title"]:
            return spec
    raise AssertionError(f"no board titled {title_part!r}; have {[b['title'] for b in boards(at)]}")


def cells(spec: dict, group: int = 0) -> list[list[str]]:
    """A matrix board's cell texts, row by row (one group of rows: the matrix, or the keys of a cache)."""
    return [[cell["text"] for cell in row["cells"]] for row in spec["groups"][group]["rows"]]


def plain_tables(at) -> list[dict]:
    """Every plain table on the page (viz.ui.components.table), as the spec sent to the browser."""
    import json
    return [json.loads(el.proto.json) for el in at.get("bidi_component") if el.proto.component_name == "kvlab_table"]


def plain_table(at, column: str) -> dict[str, list[str]]:
    """The plain table that has ``column``, as {column: its cells' text}."""
    for spec in plain_tables(at):
        if column in spec["columns"]:
            return {name: [row[i] for row in spec["rows"]] for i, name in enumerate(spec["columns"])}
    raise AssertionError(f"no plain table with a column {column!r}")


def component(at, name: str, key: str):
    """The custom component ``name`` (viz.ui.components) drawn under ``key``; its proto's id ends in the key."""
    for element in at.get("bidi_component"):
        if element.proto.component_name == name and element.proto.id.endswith(f"-{key}"):
            return element
    raise AssertionError(f"no {name} with key {key!r}")


def fire(at, name: str, key: str, event: str, value):
    """Fire a custom component's trigger as the browser does, and run: the widgets' values AppTest
    holds plus one for the component's trigger aggregator (``$$STREAMLIT_INTERNAL_KEY_<id>__events``,
    built by streamlit's own ``_make_trigger_id``), a JSON list of ``{"event", "value"}`` payloads.
    AppTest sends it with this run only, as the browser sends a trigger once."""
    import json

    from streamlit.components.v2.bidi_component.main import _make_trigger_id

    states = at._tree.get_widget_states()
    trigger = states.widgets.add()
    trigger.id = _make_trigger_id(component(at, name, key).proto.id, "events")
    trigger.json_trigger_value = json.dumps([{"event": event, "value": value}])
    return rerun(at._run(states))


def range_data(at, key: str) -> dict:
    """The data a range (viz.ui.components.slider) was drawn with: label, labels, min, max, value, help."""
    import json
    return json.loads(component(at, "kvlab_range", key).proto.json)


def move_range(at, key: str, value):
    """Move a range to ``value`` as a visitor does (a release or a key sends the value as a trigger)."""
    return fire(at, "kvlab_range", key, "moved", value)


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

