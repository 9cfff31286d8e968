"""Helpers for AppTest tests: find widgets by label and read the shared state."""

from __future__ import annotations

from pathlib import Path

from viz.ui import sidebar, state
from viz.ui.common import SWITCH_ICONS

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
    """The figure whose title holds ``title_part``, read as one line (titles break with <br> to fit a phone)."""
    for spec in figures(at):
        if title_part in spec["layout"].get("title", {}).get("text", "").replace("<br>", " "):
            return spec
    raise AssertionError(f"no figure titled {title_part!r}")


def sent_data(element) -> dict:
    """What the lesson board (viz.ui.board) was sent: the payload, the one item of its data list."""
    import json
    return json.loads(element.proto.json)[0]


def boards(at) -> list[dict]:
    """Every lesson board on the page (viz.ui.board), as the spec sent to the browser (not the
    keys-only form nor the sidebar form, which draw nothing)."""
    from viz.ui.board import NAME
    sent = [sent_data(el) for el in at.get("bidi_component") if el.proto.component_name == NAME]
    return [data for data in sent if data.get("kind") not in ("keys", "sidebar")]


def board(at, title_part: str) -> dict:
    for spec in boards(at):
        if title_part in spec["title"]:
            return spec
    raise AssertionError(f"no board titled {title_part!r}; have {[b['title'] for b in boards(at)]}")


def cells(spec: dict, group: int = 0) -> list[list[str]]:
    """A matrix board's cell texts, row by row (one group of rows: the matrix, or the keys of a cache)."""
    return [[cell["text"] for cell in row["cells"]] for row in spec["groups"][group]["rows"]]


def plain_tables(at) -> list[dict]:
    """Every small table on the page (``st.table``, viz.ui.widgets.table): {"label": its name for
    screen readers, "columns", "rows": every cell as the visitor reads it}."""
    found = []
    for element in at.table:
        frame = element.value
        found.append({"label": element.proto.alt, "columns": [shown(str(c)) for c in frame.columns],
                      "rows": [[shown(str(v)) for v in row] for row in frame.itertuples(index=False, name=None)]})
    return found


_DIRECTION = {0: "down", 1: "up", 2: ""}  # st.metric's arrow (Metric.MetricDirection)
_TONE = {0: "bad", 1: "good", 2: "neutral"}  # st.metric's colour (Metric.MetricColor: red, green, gray)


def stats_rows(at) -> list[dict]:
    """Every figure of the page's stats rows (``st.metric``, viz.ui.widgets.stats) as one row:
    {"stats": [{"label", "value", "delta", "help"}]}, text as the visitor reads it; a delta is
    {"text", "direction", "tone"} or None."""
    stats = []
    for metric in at.metric:
        proto = metric.proto
        delta = ({"text": proto.delta, "direction": _DIRECTION[proto.direction], "tone": _TONE[proto.color]}
                 if proto.delta else None)
        stats.append({"label": shown(proto.label), "value": shown(proto.body), "delta": delta,
                      "help": shown(proto.help)})
    return [{"stats": stats}] if stats else []


def stat_labels(at) -> list[str]:
    """The label of every figure in the page's stats rows, in order."""
    return [item["label"] for row in stats_rows(at) for item in row["stats"]]


def stat(at, label: str) -> dict:
    """The stat labelled ``label`` in a stats row: {"label", "value", "delta", "help"} as shown."""
    for row in stats_rows(at):
        for item in row["stats"]:
            if item["label"] == label:
                return item
    raise AssertionError(f"no stat labelled {label!r}; have {stat_labels(at)}")


def stat_value(at, label: str) -> str:
    """The value a stats row shows under ``label``, as text."""
    return stat(at, label)["value"]


def plain_table(at, column: str) -> dict[str, list[str]]:
    """The small table that has ``column``, as {column: its cells' text}."""
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



def widget(at, key: str):
    """The widget drawn under ``key`` in the last run (a slider, select slider, segmented control or
    pills, text input, or a switch: viz.ui.common.switch, a button)."""
    for kind in ("select_slider", "slider", "button_group", "text_input", "button"):
        for element in getattr(at, kind):
            if element.key == key:
                return element
    raise AssertionError(f"no widget with key {key!r}")


def range_data(at, key: str) -> dict:
    """What a stepper (viz.ui.common.stepper, whole numbers in a row: its slider, or its chips) or a
    slider shows: label, min, max, value, help, and a stepper's ``labels`` (each value's text)."""
    element = widget(at, key)
    data = {"label": shown(element.label), "value": element.value, "help": element.help}
    if element.type in ("select_slider", "button_group"):  # a stepper: its options are consecutive whole numbers
        low = element.value - list(element.options).index(element.format_func(element.value))
        labels = [shown(option) for option in element.options]
        return {**data, "labels": labels, "min": low, "max": low + len(labels) - 1}
    return {**data, "min": element.min, "max": element.max, "format": element.proto.format}


def move_range(at, key: str, value):
    """Move a slider to ``value`` as a visitor does, and check nothing raised."""
    widget(at, key).set_value(value)
    return rerun(at)


def send_prompt(at, text: str):
    """Type ``text`` into the sidebar's prompt box and press Enter."""
    widget(at, widget_key(at, "prompt")).input(text)
    return at.run()


def prompt_shown(at) -> str:
    """The text the sidebar's prompt box shows."""
    return widget(at, widget_key(at, "prompt")).value


def has_prompt_box(at) -> bool:
    """Whether the sidebar drew its prompt box in the last run."""
    return any(box.key == widget_key(at, "prompt") for box in at.text_input)


def choice_data(at, key: str) -> dict:
    """What a segmented control, pills or switch shows: label, options (as the visitor reads them),
    value (a switch's: whether its box is ticked), help."""
    element = widget(at, key)
    value = switched(at, key) if element.type == "button" else element.value
    data = {"label": shown(element.label), "value": value, "help": shown(element.help)}
    if element.type == "button_group":
        data["options"] = [shown(option) for option in element.options]
    return data


def pick(at, key: str, value):
    """Click the option ``value`` of a segmented control or pills, as a visitor does, and check
    nothing raised."""
    widget(at, key).set_value(value)
    return rerun(at)


def switched(at, key: str) -> bool:
    """Whether the switch under ``key`` (viz.ui.common.switch) shows its ticked box: on."""
    icon = widget(at, key).proto.icon
    assert icon in SWITCH_ICONS.values(), f"{key!r} is not a switch: its icon is {icon!r}"
    return icon == SWITCH_ICONS[True]


def flip(at, key: str, on: bool):
    """Turn the switch under ``key`` to ``on`` (a click, as a visitor's, where it is the other way),
    and check nothing raised."""
    if switched(at, key) != on:
        widget(at, key).click()
    return rerun(at)


def label_beside(at, key: str) -> dict:
    """The visible label drawn right before the widget under ``key`` in the same block (a caption at
    its left: viz.ui.common.labelled): its text and help, and the widget's own label, whether that
    is collapsed and its help (a second (?) would repeat the label's)."""
    picker = widget(at, key)

    def find(block):
        children = list(block.children.values())
        for i, child in enumerate(children):
            if child is picker:
                return children[i - 1] if i else None
            if hasattr(child, "children"):
                found = find(child)
                if found is not None:
                    return found
        return None

    before, shown_label = find(at.main), picker.proto.label_visibility
    assert before is not None and getattr(before, "is_caption", False), f"no caption right before {key!r}: {before}"
    return {"text": shown(before.value), "help": before.proto.help, "label": shown(picker.label),
            "collapsed": shown_label.value == type(shown_label).LabelVisibilityOptions.COLLAPSED,
            "picker help": picker.help}
