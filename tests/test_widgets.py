"""Tier 1: viz.ui.widgets turns stats rows and small tables into Streamlit's st.metric and st.table
arguments: visitor text escaped (both render Markdown), a delta's arrow and colour as the core said."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from hostile_text import HOSTILE
from viz.figures.base import Stat, stats_row
from viz.ui.common import md_escape
from viz.ui.widgets import metric_args, table_frame


def _args(stat: Stat) -> dict:
    return metric_args(stats_row([stat], "row")["stats"][0])


def test_a_delta_gets_its_arrow_and_the_colour_of_its_news():
    """Down and good is a green down arrow; up and bad a red up arrow; no sign, or no judgement, grey.
    The arrow says the sign, so the delta is written without it: st.metric drew '↓ -61' (a student's review)."""
    down_good = _args(Stat("Finished after", 12, delta=-3, good="down"))
    assert (down_good["delta"], down_good["delta_arrow"], down_good["delta_color"]) == ("3", "down", "green")
    up_bad = _args(Stat("Bytes", 10, delta="+2 KiB", good="down"))
    assert (up_bad["delta"], up_bad["delta_arrow"], up_bad["delta_color"]) == ("2 KiB", "up", "red")
    assert _args(Stat("Finished after", 201, delta="−61 ticks", good="down"))["delta"] == "61 ticks"
    note = _args(Stat("Formula", 1, delta="equal"))
    assert (note["delta_arrow"], note["delta_color"]) == ("off", "gray")
    plain = _args(Stat("Entries", 4))
    assert plain["delta"] is None and plain["value"] == "4" and plain["help"] is None


@pytest.mark.parametrize("text", HOSTILE)
def test_visitor_text_in_a_metric_is_escaped(text):
    """A label, value and help quoting visitor text show exactly as typed (Markdown escaped)."""
    args = _args(Stat(text, text, help=text))
    assert args["label"] == args["value"] == args["help"] == md_escape(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_visitor_text_in_a_table_is_escaped(text):
    """Every cell and column name of a small table goes through the one escaping function."""
    frame = table_frame({text: [text, 12345]}, "label")
    assert list(frame.columns) == [md_escape(text)]
    assert list(frame.iloc[:, 0]) == [md_escape(text), "12,345"]


ROOT = Path(__file__).resolve().parents[1]
APP_FILES = [ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "viz" / "ui").rglob("*.py")]


@pytest.mark.parametrize("path", APP_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_app_uses_streamlits_public_api_only(path):
    """app.py, pages/ and viz/ui import nothing from Streamlit's runtime or web server, patch no
    Streamlit class, and no style they write aims at Streamlit's own test ids or key classes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [m for m in imported if re.match(r"streamlit\.(runtime|web|proto)\b", m)], imported
    assert "PagesManager" not in path.read_text(encoding="utf-8")
    styles = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
              and re.search(r"\{[^}]*:[^}]*;?[^}]*\}", node.value) and ("data-testid" in node.value or "st-key-" in node.value)]
    assert not styles, styles


def test_the_boards_style_sheet_aims_at_its_own_elements_only():
    """board.css styles the board's own figure (in its shadow root), nothing of Streamlit's."""
    css = (ROOT / "viz" / "ui" / "board" / "board.css").read_text(encoding="utf-8")
    assert "data-testid" not in css and "st-key-" not in css and ".board" in css
